"""`sglaunch oracle status` and `stop` for the shared services: which run, and ending them."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sglaunch.oracle.ipc import (
    ChannelClosed,
    ServicePaths,
    ServiceRefused,
    open_private,
    private_dir,
    read_info,
    runtime_dir,
    service_key,
)
from sglaunch.oracle.service_client import ask, hello, try_connect


@dataclass(frozen=True)
class ServiceInfo:
    """One service as `oracle status` shows it."""

    socket: str
    state: str  # starting, ready, failed, stopping, not answering, stale
    pid: int | None = None
    python: str | None = None
    sglang_version: str | None = None
    idle_s: float | None = None
    idle_timeout: float | None = None
    clients: int = 0
    requests: int = 0
    started_at: float | None = None
    worker_pid: int | None = None
    note: str = ""

    @classmethod
    def from_hello(cls, info: dict[str, Any], socket: str) -> ServiceInfo:
        def num(key: str) -> Any:
            value = info.get(key)
            return value if isinstance(value, int | float) and not isinstance(value, bool) else None

        return cls(
            socket=socket,
            state=str(info.get("state") or "ready"),
            pid=num("pid"),
            python=str(info.get("python") or "") or None,
            sglang_version=str(info.get("sglang_version") or "") or None,
            idle_s=num("idle_s"),
            idle_timeout=num("idle_timeout"),
            clients=int(num("clients") or 0),
            requests=int(num("requests") or 0),
            started_at=num("started_at"),
            worker_pid=num("worker_pid"),
            note=str(info.get("reason") or ""),
        )

    def to_json(self) -> dict[str, Any]:
        return dict(vars(self))


def _lock_is_free(paths: ServicePaths) -> bool:
    """True when no service holds the lock (so none is alive)."""
    try:
        fd = open_private(paths.lock, os.O_RDWR)
    except ServiceRefused:
        return not paths.lock.exists()
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # closing releases a lock we took
    return True


def _folder(folder: Path | None) -> Path | None:
    folder = folder or runtime_dir()
    if not os.path.lexists(folder):
        return None
    return private_dir(folder, create=False)


def list_services(folder: Path | None = None) -> list[ServiceInfo]:
    """Every service of this user (ServiceRefused when the folder is unsafe)."""
    where = _folder(folder)
    if where is None:
        return []
    found: list[ServiceInfo] = []
    for lock in sorted(where.glob("oracle-*.lock")):
        paths = ServicePaths.from_lock(lock)
        if _lock_is_free(paths):
            if os.path.lexists(paths.socket):
                found.append(
                    ServiceInfo(str(paths.socket), "stale", note="no service behind this socket")
                )
            continue
        info = _describe(paths)
        if info.state == "not answering" and _wait_free(paths, 1.0):
            continue  # it was exiting: gone now
        found.append(info)
    return found


def _describe(paths: ServicePaths) -> ServiceInfo:
    channel = None
    with contextlib.suppress(ServiceRefused):
        channel = try_connect(paths)
    if channel is not None:
        try:
            info = hello(channel)
        finally:
            channel.close()
        if info is not None:
            return ServiceInfo.from_hello(info, str(paths.socket))
    data = read_info(paths)
    pid = data.get("pid")
    return ServiceInfo(
        str(paths.socket),
        "not answering",
        pid=pid if isinstance(pid, int) else None,
        python=str(data.get("python") or "") or None,
        note="it holds its lock but does not answer on its socket",
    )


def _is_our_service(pid: int, paths: ServicePaths) -> bool:
    """Whether `pid` is this user's service for `paths` (its command line says so)."""
    try:
        import psutil  # psutil (~40 ms): only when a process is looked at

        proc = psutil.Process(pid)
        cmdline = proc.cmdline()
        uids = proc.uids()
    except Exception:
        return False
    return (
        uids.real == os.getuid()
        and "sglaunch.oracle.service" in cmdline
        and paths.key in cmdline
        and str(paths.folder) in cmdline
    )


def _wait_free(paths: ServicePaths, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if _lock_is_free(paths):
            return True
        time.sleep(0.05)
    return _lock_is_free(paths)


def _stop_one(paths: ServicePaths, wait: float) -> str:
    channel = None
    with contextlib.suppress(ServiceRefused):
        channel = try_connect(paths)
    if channel is not None:
        try:
            ask(channel, {"op": "stop"}, min(wait, 5.0))
        except ChannelClosed:
            pass
        finally:
            channel.close()
        if _wait_free(paths, wait):
            return "stopped"
    pid = read_info(paths).get("pid")
    if not isinstance(pid, int) or not _is_our_service(pid, paths):
        return "not answering, and its pid cannot be confirmed: left alone"
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        if _wait_free(paths, 5.0):
            return "stopped" if sig == signal.SIGTERM else "killed"
    return "still running"


def stop_services(
    python: str | None = None, folder: Path | None = None, *, wait: float = 10.0
) -> list[tuple[ServiceInfo, str]]:
    """End every service (or the one for `python`); [(what it was, what happened)]."""
    key = service_key(python) if python else None
    done: list[tuple[ServiceInfo, str]] = []
    for info in list_services(folder):
        paths = ServicePaths.from_lock(Path(info.socket).with_suffix(".lock"))
        if key is not None and paths.key != key:
            continue
        if info.state == "stale":
            with contextlib.suppress(FileNotFoundError):
                os.unlink(paths.socket)
            done.append((info, "removed its stale socket"))
            continue
        done.append((info, _stop_one(paths, wait)))
    return done
