"""The oracle service: one warm sglang worker shared by every sglaunch process of a user.

    python -m sglaunch.oracle.service --python SGLANG_PYTHON --folder DIR --key KEY
        [--lock-fd N] [--idle-timeout S] [--start-timeout S] [--detach]

Started by the first client that needs sglang's verdict (service_client.py),
never by hand. It holds an `Oracle` (client.py: the worker protocol lives there
only) and answers JSON lines on `DIR/oracle-KEY.sock`:

    {"op": "hello"}                                   -> {"info": {...}}
    {"op": "start", "start_timeout": S}               -> {"status": {...}, "info": {...}}
    {"op": "resolve", "argv", "env", "gpu", "timeout", "cwd", "memory"?}  -> {"answer": {...}}
    {"op": "stop"}                                    -> {"stopping": true}

Resolutions run one at a time (the worker answers in order); each request keeps
its own timeout, time spent queued behind another request included. The
service holds the flock on `oracle-KEY.lock` for its whole life, so a client
that can take that lock knows no service is alive. It exits once no client is
connected and none has asked for `--idle-timeout` seconds, on `stop`, or on
SIGTERM; its worker dies with it (the worker watches its parent and its pipe,
and has PR_SET_PDEATHSIG). The worker's environment is the service's minus the
variables each request carries itself (FORWARDED_PREFIXES), so one client's
shell never leaks into another's verdict.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from sglaunch.oracle.answer import OracleAnswer, OracleStatus
from sglaunch.oracle.client import Oracle
from sglaunch.oracle.ipc import (
    FORWARDED_PREFIXES,
    PROTOCOL,
    Channel,
    ChannelClosed,
    ServicePaths,
    ServiceRefused,
    open_private,
    peer_uid,
    private_dir,
)
from sglaunch.validators.facts import GpuDevice, GpuFacts, GpuMode

FAILED_LINGER_S = (
    10.0  # a service whose worker could not start answers its waiting clients, then goes
)
MAX_TIMEOUT_S = 3600.0
# the installed sglang's dist-info, to notice an upgrade under a running service
_DIST_PROBE = (
    "import importlib.metadata as m, json\n"
    "try:\n    d = m.distribution('sglang')\n"
    "    print(json.dumps({'version': d.version, 'path': str(getattr(d, '_path', '') or '')}))\n"
    "except m.PackageNotFoundError:\n    print('{}')\n"
)


def gpu_from_payload(payload: Mapping[str, Any]) -> GpuFacts:
    """The GPU facts a request names (ipc.gpu_payload's shape), as the Oracle takes them."""
    devices = []
    for i, d in enumerate(payload.get("devices") or ()):
        cap = d.get("capability") or (0, 0)
        free = d.get("memory_free")
        devices.append(
            GpuDevice(
                index=i,
                name=str(d.get("name") or ""),
                memory_total=int(d.get("memory_total") or 0),
                capability=(int(cap[0]), int(cap[1])),
                uuid=str(d.get("uuid") or ""),
                memory_free=int(free) if isinstance(free, int) else None,
            )
        )
    return GpuFacts(
        mode=GpuMode.PLANNING,
        devices=tuple(devices),
        driver_version=str(payload.get("driver_version") or ""),
        cuda_version=str(payload.get("cuda_version") or ""),
    )


def _memory_request(value: Any) -> dict[str, Any] | None:
    """The pool-sizing part of a request (memory_probe.py's inputs), its known keys only."""
    if not isinstance(value, Mapping):
        return None
    out: dict[str, Any] = {}
    for name in ("pre_gib", "weights_bytes"):
        number = value.get(name)
        if isinstance(number, (int, float)) and not isinstance(number, bool):
            out[name] = number
    if set(out) != {"pre_gib", "weights_bytes"}:
        return None  # the probe needs both: a request without them asks only the verdict
    algo = value.get("kv_cache_quant_algo")
    out["kv_cache_quant_algo"] = algo if isinstance(algo, str) else None
    return out


def _fault(message: str, *, timed_out: bool = False) -> dict[str, Any]:
    return {"answer": OracleAnswer.failed(message, timed_out=timed_out).to_json()}


def _number(value: Any, default: float, low: float, high: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return min(max(number, low), high) if number == number else default


class Service:
    def __init__(
        self,
        python: str,
        paths: ServicePaths,
        *,
        idle_timeout: float,
        start_timeout: float,
        lock_fd: int,
    ) -> None:
        self.python = python
        self.paths = paths
        self.idle_timeout = idle_timeout
        self.lock_fd = lock_fd
        self.oracle = Oracle(python, start_timeout=start_timeout)
        self.started_at = time.time()
        self.state = "starting"
        self._requests = threading.Lock()  # the worker answers one request at a time
        self._lock = threading.Lock()  # the counters below
        # connections that asked for a start or a resolution; a `hello` (status) is no use
        self.clients = 0
        self.in_flight = 0
        self.requests = 0
        self._last_used = time.monotonic()
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._open: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self._socket_ino: int | None = None
        self._dist: tuple[str, tuple[int, int] | None] | None = None
        self._dist_checked = 0.0

    # -- facts ---------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        """What `hello` says about this service."""
        status = self.oracle.status
        with self._lock:
            clients = self.clients
            idle = 0.0 if clients or self.in_flight else time.monotonic() - self._last_used
            return {
                "protocol": PROTOCOL,
                "pid": os.getpid(),
                "python": self.python,
                # None once sglang was reinstalled under us: the next request restarts the worker
                "sglang_version": None if self._upgraded() else status.sglang_version,
                "state": self.state,
                "reason": "" if status.available else status.reason,
                "started_at": self.started_at,
                "idle_s": round(idle, 1),
                "idle_timeout": self.idle_timeout,
                "clients": clients,
                "resolving": self._requests.locked(),
                "requests": self.requests,
                "worker_pid": self.oracle.worker_pid,
                "socket": str(self.paths.socket),
            }

    def _write_info(self, failed: OracleStatus | None = None) -> None:
        info: dict[str, Any] = {
            "pid": os.getpid(),
            "python": self.python,
            "started_at": self.started_at,
        }
        if failed is not None:
            # the client that started this service may reach it only after it gave up:
            # the lock file, which it takes next, says why
            info["failed"] = dataclasses.asdict(failed)
        text = json.dumps(info).encode()
        with contextlib.suppress(OSError):
            os.ftruncate(self.lock_fd, 0)
            os.pwrite(self.lock_fd, text, 0)

    # -- life ----------------------------------------------------------------

    def bind(self) -> None:
        """Listen on the socket (mode 0600 from the first instant: the umask is 0177 here)."""
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        path = str(self.paths.socket)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # stale: whoever holds the lock owns the name
        old = os.umask(0o177)
        try:
            listener.bind(path)
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        listener.listen(64)
        self._socket_ino = os.stat(path).st_ino
        self._listener = listener

    def run(self) -> int:
        self._write_info()
        self.bind()
        threading.Thread(target=self._accept_loop, name="oracle-accept", daemon=True).start()
        # in the main thread: the worker gets PR_SET_PDEATHSIG tied to a thread that
        # lives as long as the service
        status = self.oracle.start()
        # an upgrade matters to a running worker only (and an interpreter that hangs would
        # hold the failed service's answer for the probe's timeout)
        self._dist = self._dist_fingerprint() if status.available else None
        with self._lock:
            self.state = "ready" if status.available else "failed"
            self._last_used = time.monotonic()
        self._ready.set()
        if not status.available:
            # nothing to share: new clients start a fresh service (a retry), the
            # waiting ones get this status first
            self._write_info(failed=status)
            self._unlink_socket()
            self._wait_idle(FAILED_LINGER_S, until_no_clients=True)
        else:
            self._wait_idle(self.idle_timeout)
        self.shutdown()
        return 0 if status.available else 1

    def _wait_idle(self, limit: float, *, until_no_clients: bool = False) -> None:
        tick = min(max(limit / 4, 0.05), 1.0)
        deadline = time.monotonic() + limit
        while not self._stop.wait(tick):
            with self._lock:
                busy = self.clients > 0 or self.in_flight > 0
                quiet = time.monotonic() - self._last_used
            if until_no_clients:
                if not busy or time.monotonic() > deadline:
                    return
            elif not busy and quiet >= limit:
                return

    def request_stop(self) -> None:
        self._stop.set()
        # a start in progress ends now: the worker is killed, its start returns
        threading.Thread(target=self.oracle.close, daemon=True).start()

    def _unlink_socket(self) -> None:
        path = str(self.paths.socket)
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == self._socket_ino:
                os.unlink(path)

    def shutdown(self) -> None:
        self._stop.set()
        self._unlink_socket()
        if self._listener is not None:
            with contextlib.suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() in its thread
            with contextlib.suppress(OSError):
                self._listener.close()
        with self._lock:
            self.state = "stopping"
            conns = list(self._open)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        self.oracle.close()

    # -- connections ---------------------------------------------------------

    def _accept_loop(self) -> None:
        listener = self._listener
        assert listener is not None
        while not self._stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return  # closed by shutdown()
            uid = peer_uid(conn)
            if uid is not None and uid != os.getuid():
                conn.close()  # the folder is 0700; this can only be root, and we answer no one else
                continue
            threading.Thread(
                target=self._serve_connection, args=(conn,), name="oracle-conn", daemon=True
            ).start()

    @contextlib.contextmanager
    def _connected(self, conn: socket.socket) -> Iterator[list[bool]]:
        """The connection's life; the flag it yields says it became a client (see `clients`)."""
        client = [False]
        with self._lock:
            self._open.add(conn)
        try:
            yield client
        finally:
            with self._lock:
                self._open.discard(conn)
                if client[0]:
                    self.clients -= 1
                    self._last_used = time.monotonic()
            with contextlib.suppress(OSError):
                conn.close()

    def _serve_connection(self, conn: socket.socket) -> None:
        channel = Channel(conn)
        with self._connected(conn) as client:
            while not self._stop.is_set():
                try:
                    request = channel.receive(None)
                except ChannelClosed:
                    return
                if not client[0] and request.get("op") in ("start", "resolve"):
                    client[0] = True
                    with self._lock:
                        self.clients += 1
                reply = self.dispatch(request)
                try:
                    channel.send(reply)
                except ChannelClosed:
                    return
                if reply.get("stopping"):
                    self.request_stop()
                    return

    def dispatch(self, request: Mapping[str, Any]) -> dict[str, Any]:
        op = request.get("op")
        if op == "hello":
            return {"info": self.info()}
        if op == "start":
            try:
                return self._start(request)
            finally:
                with self._lock:
                    self._last_used = time.monotonic()
        if op == "resolve":
            with self._lock:
                self.in_flight += 1
            try:
                return self._resolve(request)
            finally:
                with self._lock:
                    self.in_flight -= 1
                    self.requests += 1
                    self._last_used = time.monotonic()
        if op == "stop":
            return {"stopping": True, "info": self.info()}
        return {"error": f"unknown request {str(op)[:40]!r}"}

    def _start(self, request: Mapping[str, Any]) -> dict[str, Any]:
        wait = _number(request.get("start_timeout"), 120.0, 0.0, MAX_TIMEOUT_S)
        if not self._ready.wait(wait):
            status = OracleStatus(
                available=False,
                reason=f"the oracle service (pid {os.getpid()}) is still starting sglang after "
                f"{wait:g} s",
                python=self.python,
            )
        elif self.state == "ready":
            status = self.oracle.status
            stale = not status.available or self._upgraded()
            if stale and self._requests.acquire(timeout=wait):
                try:
                    self._restart_if_upgraded()
                    status = self.oracle.status
                    if not status.available:
                        # the worker died and did not come back: a start retries, as Oracle.start does
                        status = self.oracle.start()
                finally:
                    self._requests.release()
        else:
            status = self.oracle.status
        return {"status": dataclasses.asdict(status), "info": self.info()}

    def _resolve(self, request: Mapping[str, Any]) -> dict[str, Any]:
        received = time.monotonic()
        timeout = _number(request.get("timeout"), 20.0, 0.1, MAX_TIMEOUT_S)
        gpu = request.get("gpu")
        argv = request.get("argv")
        if not isinstance(gpu, Mapping) or not isinstance(argv, list):
            return _fault("the oracle service got a malformed request")
        given = request.get("env")
        env: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
        cwd = request.get("cwd") if isinstance(request.get("cwd"), str) else None
        memory = _memory_request(request.get("memory"))
        if not self._requests.acquire(timeout=timeout):
            return _fault(
                f"the oracle service was busy with other requests for {timeout:g} s",
                timed_out=True,
            )
        try:
            self._restart_if_upgraded()
            left = timeout - (time.monotonic() - received)
            if left <= 0:
                return _fault(
                    f"the oracle service was busy with other requests for {timeout:g} s",
                    timed_out=True,
                )
            self.oracle.timeout = left
            answer = self.oracle.resolve(
                [str(a) for a in argv],
                {str(k): str(v) for k, v in env.items()},
                gpu_from_payload(gpu),
                cwd=cwd,
                memory=memory,
            )
        finally:
            self._requests.release()
        return {"answer": answer.to_json()}

    # -- sglang upgraded under us ----------------------------------------------

    def _dist_fingerprint(self) -> tuple[str, tuple[int, int] | None] | None:
        """(dist-info path, its (inode, mtime)) of the sglang the worker imported."""
        try:
            done = subprocess.run(
                [self.python, "-c", _DIST_PROBE],
                capture_output=True,
                text=True,
                timeout=30,
                stdin=subprocess.DEVNULL,
            )
            path = str(json.loads(done.stdout.strip().splitlines()[-1]).get("path") or "")
        except (OSError, ValueError, IndexError, subprocess.TimeoutExpired, AttributeError):
            return None
        return (path, _stat_key(path)) if path else None

    def _upgraded(self) -> bool:
        dist = self._dist
        return dist is not None and _stat_key(dist[0]) != dist[1]

    def _restart_if_upgraded(self) -> None:
        """A new sglang in the interpreter (pip install): a new worker, holding the lock."""
        if self._dist is None or time.monotonic() - self._dist_checked < 1.0:
            return
        self._dist_checked = time.monotonic()
        if not self._upgraded():
            return
        self.oracle.close()
        self.oracle.start()
        self._dist = self._dist_fingerprint()


def _stat_key(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns


def _scrub_environment() -> None:
    for name in list(os.environ):
        if name.startswith(FORWARDED_PREFIXES):
            del os.environ[name]


def _daemonize() -> None:
    """Fork once more: the starter reaps the first process at once, and no zombie waits on it."""
    if os.fork() > 0:
        os._exit(0)
    os.chdir("/")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m sglaunch.oracle.service", description=__doc__)
    p.add_argument("--python", required=True, help="the interpreter that has sglang")
    p.add_argument("--folder", required=True, type=Path)
    p.add_argument("--key", required=True)
    p.add_argument("--lock-fd", type=int, help="the locked lock file, passed by the starter")
    p.add_argument("--idle-timeout", type=float, default=600.0)
    p.add_argument("--start-timeout", type=float, default=120.0)
    p.add_argument("--detach", action="store_true", help="fork into the background first")
    return p


def _take_lock(paths: ServicePaths, fd: int | None) -> int:
    if fd is not None:
        return fd
    fd = open_private(paths.lock, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise ServiceRefused(f"another oracle service holds {paths.lock}") from None
    return fd


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.detach:
        _daemonize()
    os.umask(0o077)
    _scrub_environment()
    paths = ServicePaths(args.folder, args.key)
    try:
        private_dir(paths.folder, create=False)
        lock_fd = _take_lock(paths, args.lock_fd)
    except ServiceRefused as exc:
        print(f"sglaunch oracle service: {exc}", file=sys.stderr)
        return 2
    service = Service(
        args.python,
        paths,
        idle_timeout=args.idle_timeout,
        start_timeout=args.start_timeout,
        lock_fd=lock_fd,
    )
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, lambda *_: service.request_stop())
    try:
        return service.run()
    finally:
        service.shutdown()


if __name__ == "__main__":
    sys.exit(main())
