"""sglang's verdict from the user's shared oracle service: the `Oracle` interface, over a socket.

    oracle = connect(python)          # a ServiceOracle; connect(python, use_service=False): Oracle
    oracle.start()                    # OracleStatus; starts the service when none is running
    oracle.resolve(argv, env, gpu)    # OracleAnswer, as Oracle.resolve gives it
    oracle.close()                    # this client only: the service stays for the next process

The first process that needs the oracle starts the service (service.py) and
every later one reuses its warm worker, so a `sglaunch check` pays sglang's
imports once per idle period instead of once per process. A stale socket (the
service crashed) is replaced; two processes starting at once end with one
service (the lock file decides); a service that dies between two requests is
replaced on the next one. An unsafe folder or socket is refused with one line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sglaunch.oracle.answer import OracleAnswer, OracleStatus
from sglaunch.oracle.interpreter import NOT_INSTALLED, find_sglang_python, oracle_refused
from sglaunch.oracle.ipc import (
    FORWARDED_PREFIXES,
    PROTOCOL,
    Channel,
    ChannelClosed,
    ServicePaths,
    ServiceRefused,
    check_private_socket,
    gpu_payload,
    idle_timeout,
    open_private,
    peer_uid,
    private_dir,
    runtime_dir,
)

if TYPE_CHECKING:
    from sglaunch.oracle.client import Oracle
    from sglaunch.validators.facts import GpuFacts

NO_SERVICE_ENV = "SGLAUNCH_NO_ORACLE_SERVICE"
# the service enforces each timeout itself; this is how much longer a client waits
_BACKSTOP_S = 10.0
_HELLO_S = 5.0
_SPAWN_S = 30.0  # from spawning to the socket answering (sglang is imported later)


def connect(
    python: str | None = None,
    *,
    use_service: bool = True,
    timeout: float = 20.0,
    start_timeout: float = 120.0,
) -> Oracle | ServiceOracle:
    """The oracle for a caller: the shared service, or (`use_service=False`, or
    SGLAUNCH_NO_ORACLE_SERVICE=1) a worker of this process's own."""
    if not use_service or os.environ.get(NO_SERVICE_ENV, "") not in ("", "0"):
        # a worker of this process's own: its process machinery only then, not on the way
        # to a warm service's answer
        from sglaunch.oracle.client import Oracle

        return Oracle(python, timeout=timeout, start_timeout=start_timeout)
    return ServiceOracle(python, timeout=timeout, start_timeout=start_timeout)


def _log_tail(paths: ServicePaths) -> str:
    try:
        with open(paths.log, "rb") as fh:
            fh.seek(max(os.fstat(fh.fileno()).st_size - 4096, 0))
            lines = [ln.strip() for ln in fh.read().decode(errors="replace").splitlines()]
    except OSError:
        return ""
    lines = [ln for ln in lines if ln]
    return lines[-1][:300] if lines else ""


class ServiceStartFailed(ServiceRefused):
    """The service this client started could not start sglang: its status says why."""

    def __init__(self, status: Mapping[str, Any]) -> None:
        super().__init__(str(status.get("reason") or "the oracle service could not start"))
        self.status = status


def _failed_status(lock_fd: int, *, since: float) -> Mapping[str, Any] | None:
    """The status a service started at or after `since` left in its lock file as it gave up."""
    try:
        info = json.loads(os.pread(lock_fd, 1 << 16, 0) or b"{}")
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict):
        return None
    failed, started = info.get("failed"), info.get("started_at")
    if not isinstance(failed, dict) or not isinstance(started, int | float) or started < since:
        return None
    return failed


def try_connect(paths: ServicePaths) -> Channel | None:
    """A connection to the live service at `paths`, None when nobody listens there.

    ServiceRefused for a socket that is not this user's private socket, or a
    listener run by someone else.
    """
    try:
        st = os.lstat(paths.socket)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ServiceRefused(f"cannot use {paths.socket}: {exc.strerror or exc}") from None
    check_private_socket(paths.socket, st, os.getuid())
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(paths.socket))
    except (ConnectionRefusedError, FileNotFoundError):
        sock.close()
        return None
    except OSError as exc:
        sock.close()
        raise ServiceRefused(f"cannot connect to {paths.socket}: {exc.strerror or exc}") from None
    uid = peer_uid(sock)
    if uid is not None and uid != os.getuid():
        sock.close()
        raise ServiceRefused(f"{paths.socket} is answered by uid {uid}, not by you")
    return Channel(sock)


def ask(channel: Channel, request: Mapping[str, Any], wait: float) -> dict[str, Any]:
    channel.send(request)
    return channel.receive(time.monotonic() + wait)


def hello(channel: Channel) -> dict[str, Any] | None:
    try:
        info = ask(channel, {"op": "hello"}, _HELLO_S).get("info")
    except ChannelClosed:
        return None
    if not isinstance(info, dict) or info.get("protocol") != PROTOCOL:
        return None
    return info


def _spawn(
    paths: ServicePaths, python: str, lock_fd: int, idle: float, start_timeout: float
) -> None:
    """Start the service in the background; it inherits the lock we hold."""
    import subprocess  # only to start the service: a warm one is just connected to

    log_fd = open_private(paths.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    env = {k: v for k, v in os.environ.items() if not k.startswith(FORWARDED_PREFIXES)}
    args = [
        sys.executable,
        "-m",
        "sglaunch.oracle.service",
        "--python",
        python,
        "--folder",
        str(paths.folder),
        "--key",
        paths.key,
        "--lock-fd",
        str(lock_fd),
        "--idle-timeout",
        repr(idle),
        "--start-timeout",
        repr(start_timeout),
        "--detach",
    ]
    try:
        first = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            pass_fds=(lock_fd,),
            start_new_session=True,
            close_fds=True,
            env=env,
            cwd="/",
        )
    except OSError as exc:
        raise ServiceRefused(f"cannot start the oracle service: {exc.strerror or exc}") from None
    finally:
        os.close(log_fd)
    # the first process forks the service and exits at once
    with contextlib.suppress(subprocess.TimeoutExpired):
        first.wait(timeout=_SPAWN_S)


def connect_or_spawn(
    paths: ServicePaths, python: str, *, idle: float, start_timeout: float
) -> tuple[Channel, dict[str, Any]]:
    """A connection to the service for `python` (started when none is alive) and its hello."""
    deadline = time.monotonic() + _SPAWN_S
    spawned = False
    spawned_at = 0.0
    pause = 0.005
    while True:
        channel = try_connect(paths)
        if channel is not None:
            info = hello(channel)
            if info is not None:
                return channel, info
            channel.close()  # an exiting service: its successor comes next
        lock_fd = open_private(paths.lock, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            # a service holds the lock: it is starting (or stopping); wait for its socket
            os.close(lock_fd)
        else:
            try:
                if spawned:
                    failed = _failed_status(lock_fd, since=spawned_at)
                    if failed is not None:
                        raise ServiceStartFailed(failed)
                    tail = _log_tail(paths)
                    raise ServiceRefused(
                        "the oracle service exited as it started"
                        + (f": {tail}" if tail else f" (see {paths.log})")
                    )
                refused = oracle_refused(python)
                if refused is not None:  # a service for it would only fail: start none
                    version, why = refused
                    raise ServiceStartFailed(
                        {"available": False, "reason": why, "sglang_version": version}
                    )
                # nobody holds the lock, so nobody serves: any socket there is stale
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(paths.socket)
                spawned_at = time.time()
                _spawn(paths, python, lock_fd, idle, start_timeout)
                spawned = True
            finally:
                os.close(lock_fd)  # the service keeps its own copy, and with it the lock
            continue
        if time.monotonic() > deadline:
            raise ServiceRefused(
                f"the oracle service did not open {paths.socket} within {_SPAWN_S:g} s "
                f"(see {paths.log})"
            )
        time.sleep(pause)
        pause = min(pause * 2, 0.1)


def known_sglang_version(python: str | None = None) -> str | None:
    """sglang's version as a live, ready service for `python` reports it, else None.

    Starts nothing and runs no interpreter: it saves a warm `check` the version probe.
    """
    if os.environ.get(NO_SERVICE_ENV, "") not in ("", "0"):
        return None
    found = find_sglang_python(python)
    if found.path is None:
        return None
    try:
        paths = ServicePaths.for_python(found.path, private_dir(runtime_dir(), create=False))
        channel = try_connect(paths)
    except ServiceRefused:
        return None
    if channel is None:
        return None
    try:
        info = hello(channel)
    finally:
        channel.close()
    version = info.get("sglang_version") if info and info.get("state") == "ready" else None
    return version if isinstance(version, str) and version else None


def forwarded_env(environ: Mapping[str, str]) -> dict[str, str]:
    """What a worker of this process would have inherited and the shared one must be told."""
    return {k: v for k, v in environ.items() if k.startswith(FORWARDED_PREFIXES)}


def _status_from(data: Mapping[str, Any], python: str) -> OracleStatus:
    fields = {f.name for f in dataclasses.fields(OracleStatus)}
    status = OracleStatus(**{k: v for k, v in data.items() if k in fields})
    return status if status.python else dataclasses.replace(status, python=python)


class ServiceOracle:
    """`Oracle`'s interface (start, resolve, close, status), answered by the shared service.

    One caller at a time per instance (a lock serialises requests); a
    connection stays open between requests, which keeps the service from
    going idle while, for example, the TUI is open.
    """

    def __init__(
        self,
        python: str | None = None,
        *,
        timeout: float = 20.0,
        start_timeout: float = 120.0,
        folder: os.PathLike[str] | str | None = None,
        idle_timeout_s: float | None = None,
    ) -> None:
        self.timeout = timeout
        self.start_timeout = start_timeout
        self._explicit_python = python
        self._folder = folder
        self._idle = idle_timeout_s
        self._lock = threading.RLock()
        self._channel: Channel | None = None
        self._info: dict[str, Any] = {}
        self._status = OracleStatus(available=False, reason="the oracle has not been started")
        self._started_once = False
        # a `submit`ted answer not read yet: read before anything else is sent
        self._unread: Callable[[], OracleAnswer] | None = None

    # -- what callers read -----------------------------------------------------

    @property
    def status(self) -> OracleStatus:
        return self._status

    @property
    def service_pid(self) -> int | None:
        pid = self._info.get("pid")
        return pid if isinstance(pid, int) else None

    @property
    def worker_pid(self) -> int | None:
        pid = self._info.get("worker_pid")
        return pid if isinstance(pid, int) else None

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> OracleStatus:
        """Connect (starting the service if needed) and wait until its worker is ready."""
        with self._lock:
            return self._start_locked()

    def _start_locked(self) -> OracleStatus:
        self._started_once = True
        t0 = time.perf_counter()
        found = find_sglang_python(self._explicit_python)
        if found.path is None:
            self._status = OracleStatus(available=False, reason=found.reason or NOT_INSTALLED)
            return self._status
        python = found.path
        for attempt in (1, 2):
            try:
                status = self._start_once(python)
            except ServiceStartFailed as exc:
                self._drop()
                self._status = _status_from(exc.status, python)
                return self._status
            except ServiceRefused as exc:
                self._drop()
                self._status = OracleStatus(available=False, reason=str(exc), python=python)
                return self._status
            except ChannelClosed:
                # the service went away between hello and start (an idle exit, a kill)
                self._drop()
                if attempt == 2:
                    self._status = OracleStatus(
                        available=False,
                        reason="the oracle service closed the connection as it started",
                        python=python,
                    )
                    return self._status
                continue
            if status.available:
                status = dataclasses.replace(status, start_s=round(time.perf_counter() - t0, 3))
            else:
                self._drop()
            self._status = status
            return status
        raise AssertionError("unreachable")

    def _start_once(self, python: str) -> OracleStatus:
        if self._channel is None:
            folder = private_dir(runtime_dir() if self._folder is None else Path(self._folder))
            paths = ServicePaths.for_python(python, folder)
            idle = self._idle if self._idle is not None else idle_timeout()
            self._channel, self._info = connect_or_spawn(
                paths, python, idle=idle, start_timeout=self.start_timeout
            )
        reply = ask(
            self._channel,
            {"op": "start", "start_timeout": self.start_timeout},
            self.start_timeout + _BACKSTOP_S,
        )
        info = reply.get("info")
        if isinstance(info, dict):
            self._info = info
        data = reply.get("status")
        if not isinstance(data, dict):
            raise ChannelClosed("the oracle service sent no status")
        return _status_from(data, python)

    def close(self) -> None:
        """Drop this client's connection; safe from any thread, even mid-request."""
        channel = self._channel
        if channel is not None:
            # before the lock: a request in flight holds it, and this is what ends it
            with contextlib.suppress(OSError):
                channel.sock.shutdown(socket.SHUT_RDWR)
        with self._lock:
            self._drop()
            if self._status.available:
                self._status = dataclasses.replace(
                    self._status, available=False, reason="the oracle was closed"
                )

    def _drop(self) -> None:
        channel, self._channel = self._channel, None
        if channel is not None:
            channel.close()

    def __enter__(self) -> ServiceOracle:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- asking ------------------------------------------------------------------

    def resolve(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None,
        gpu: GpuFacts,
        *,
        memory: Mapping[str, Any] | None = None,
    ) -> OracleAnswer:
        """sglang's verdict on `argv` with `env` on `gpu`, from the shared worker; with
        `memory`, also sglang's own KV-pool sizing (as `Oracle.resolve`)."""
        with self._lock:
            if not self._started_once:
                self._start_locked()
            if not self._status.available:
                return OracleAnswer.failed(
                    self._status.reason, sglang_version=self._status.sglang_version
                )
            if self._unread is not None:
                self._unread()  # a submitted answer leaves the connection before this request
            return self._ask_resolve(self._request(argv, env, gpu, memory))

    def submit(
        self, argv: Sequence[str], env: Mapping[str, str] | None, gpu: GpuFacts
    ) -> Callable[[], OracleAnswer]:
        """Send the question now, read the answer later: sglang works it out while the
        caller does other work. The callable gives what `resolve` would have given (a send
        that failed is retried there, as `resolve` does); an answer nobody read is read off
        before the next request is sent."""
        with self._lock:
            if not self._started_once:
                self._start_locked()
            if not self._status.available:
                failed = OracleAnswer.failed(
                    self._status.reason, sglang_version=self._status.sglang_version
                )
                return lambda: failed
            if self._unread is not None:
                self._unread()
            request = self._request(argv, env, gpu, None)
            sent, t0 = self._channel, time.perf_counter()
            if sent is not None:
                try:
                    sent.send(request)
                except ChannelClosed:
                    sent = None

        got: list[OracleAnswer] = []

        def answer() -> OracleAnswer:
            with self._lock:
                if not got:
                    if self._unread is answer:
                        self._unread = None
                    if sent is None or self._channel is not sent:
                        got.append(self._ask_resolve(request))
                    else:
                        got.append(self._read_reply(sent, t0))
                return got[0]

        with self._lock:
            self._unread = answer if sent is not None else None
        return answer

    def _request(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None,
        gpu: GpuFacts,
        memory: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        try:
            cwd: str | None = os.getcwd()
        except OSError:
            cwd = None
        request = {
            "op": "resolve",
            "argv": [str(a) for a in argv],
            "env": {
                **forwarded_env(os.environ),
                **{str(k): str(v) for k, v in (env or {}).items()},
            },
            "gpu": gpu_payload(gpu),
            "timeout": self.timeout,
            "cwd": cwd,
        }
        if memory is not None:
            request["memory"] = dict(memory)
        return request

    def _ask_resolve(self, request: dict[str, Any]) -> OracleAnswer:
        version = self._status.sglang_version
        t0 = time.perf_counter()
        for attempt in (1, 2):
            if self._channel is None and not self._start_locked().available:
                return OracleAnswer.failed(self._status.reason, sglang_version=version)
            channel = self._channel
            assert channel is not None
            try:
                channel.send(request)
            except ChannelClosed:
                # the service is gone (killed between two requests): the next one is started
                self._drop()
                if attempt == 1:
                    continue
                return OracleAnswer.failed("the oracle service is gone", sglang_version=version)
            return self._read_reply(channel, t0)
        raise AssertionError("unreachable")

    def _read_reply(self, channel: Channel, t0: float) -> OracleAnswer:
        """The answer to the request just sent on `channel` (sent at perf_counter `t0`)."""
        version = self._status.sglang_version
        try:
            reply = channel.receive(time.monotonic() + self.timeout + _BACKSTOP_S)
        except ChannelClosed as exc:
            self._drop()
            late = "no answer in time" in str(exc)
            what = (
                f"did not answer within {self.timeout + _BACKSTOP_S:g} s"
                if late
                else "died during the request"
            )
            return OracleAnswer.failed(
                f"the oracle service {what}; it restarts on the next request",
                sglang_version=version,
                worker_died=not late,
                timed_out=late,
            )
        data = reply.get("answer")
        if not isinstance(data, dict):
            return OracleAnswer.failed(
                str(reply.get("error") or "the oracle service sent no answer"),
                sglang_version=version,
            )
        return OracleAnswer.from_json(
            data,
            sglang_version=data.get("sglang_version") or version,
            elapsed_s=round(time.perf_counter() - t0, 4),
        )
