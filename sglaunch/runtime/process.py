"""The server process: spawned from an argv list, in its own session, never outliving us.

Three layers make sure no server process outlives sglaunch:
- the child sets PR_SET_PDEATHSIG(SIGKILL) before exec, so the kernel kills it when its
  parent dies, crash and SIGKILL included. The signal fires when the *thread* that forked
  exits, so each server is forked by a supervisor thread that lives exactly as long as
  the server (it forks, then waits), whichever thread asked for the launch;
- an atexit handler stops every server still running at a normal interpreter exit;
- after the main process exits, the rest of its process group is SIGKILLed, which catches
  grandchildren that set no death signal of their own.
A detached server (one meant to outlive sglaunch) skips the first two.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO

PR_SET_PDEATHSIG = 1
DEFAULT_GRACE_S = 25.0  # reference §4.3: 5 s poll + drain + 15 s scheduler exit + uvicorn
ATEXIT_GRACE_S = 5.0

_live: set[ServerProcess] = set()
_live_lock = threading.Lock()
_atexit_registered = False


def _prctl() -> Callable[..., int] | None:
    """libc's prctl, loaded in the parent so the forked child only calls it."""
    if not sys.platform.startswith("linux"):
        return None  # no PR_SET_PDEATHSIG elsewhere: the other two layers remain
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


class SpawnError(Exception):
    """The server could not be started (program missing, not executable)."""


class ServerProcess:
    def __init__(
        self,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stdout: int | IO[bytes] = subprocess.PIPE,
        stderr: int | IO[bytes] = subprocess.PIPE,
        die_with_parent: bool = True,
        on_exit: Callable[[int], None] | None = None,
    ) -> None:
        self.command = list(command)
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self._stdout = stdout
        self._stderr = stderr
        self.die_with_parent = die_with_parent
        self._on_exit = on_exit
        self._proc: subprocess.Popen[bytes] | None = None
        self._spawned = threading.Event()
        self._exited = threading.Event()
        self._spawn_error: BaseException | None = None
        self._lock = threading.Lock()
        self._reaped = False
        self.returncode: int | None = None
        self.started_at: float | None = None
        self.ended_at: float | None = None
        self.stop_requested_at: float | None = None
        self._thread: threading.Thread | None = None

    # --- start

    def start(self) -> None:
        """Spawn on a fresh supervisor thread and return once the process exists."""
        self._thread = threading.Thread(target=self._supervise, name="sglaunch-server", daemon=True)
        self._thread.start()
        self._spawned.wait()
        if self._spawn_error is not None:
            raise SpawnError(str(self._spawn_error)) from self._spawn_error
        if self.die_with_parent:
            _register(self)

    def _preexec(self, prctl: Callable[..., int], parent: int) -> Callable[[], None]:
        def run() -> None:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            # the parent may have died between fork and prctl; then nobody would kill us
            if os.getppid() != parent:
                os._exit(1)

        return run

    def _supervise(self) -> None:
        try:
            prctl = _prctl() if self.die_with_parent else None
            preexec = self._preexec(prctl, os.getpid()) if prctl is not None else None
            self._proc = subprocess.Popen(
                self.command,
                stdin=subprocess.DEVNULL,
                stdout=self._stdout,
                stderr=self._stderr,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
                preexec_fn=preexec,
                close_fds=True,
            )
        except Exception as exc:  # whatever it is, start() must not wait forever
            self._spawn_error = exc
            self._spawned.set()
            return
        self.started_at = time.time()
        self._spawned.set()
        pid = self._proc.pid
        # Wait without reaping: while the main process is a zombie its pid, and so the
        # process-group id, cannot be reused, and killpg below hits only our processes.
        if hasattr(os, "waitid"):
            with contextlib.suppress(ChildProcessError):
                os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
        else:
            self._proc.wait()
        self._kill_group()
        with self._lock:
            self._reaped = True
        self.returncode = self._proc.wait()
        self.ended_at = time.time()
        _unregister(self)
        self._exited.set()
        if self._on_exit is not None:
            self._on_exit(self.returncode)

    # --- facts

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise RuntimeError("the server has not been started")
        return self._proc.pid

    @property
    def pgid(self) -> int:
        return self.pid  # start_new_session makes it the leader of its own group

    @property
    def stdout(self) -> IO[bytes] | None:
        return self._proc.stdout if self._proc else None

    @property
    def stderr(self) -> IO[bytes] | None:
        return self._proc.stderr if self._proc else None

    def running(self) -> bool:
        return self._proc is not None and not self._exited.is_set()

    def tree_pids(self) -> set[int]:
        """The main pid and every descendant now alive (for tests and diagnostics)."""
        import psutil  # psutil (~40 ms): only when a process is looked at

        if not self.running():
            return set()
        try:
            main = psutil.Process(self.pid)
            return {self.pid, *(c.pid for c in main.children(recursive=True))}
        except psutil.Error:
            return set()

    # --- control

    def wait(self, timeout: float | None = None) -> int | None:
        self._exited.wait(timeout)
        return self.returncode

    def send_signal(self, sig: int) -> bool:
        """Signal the main process; False when it has already exited."""
        with self._lock:
            if self._proc is None or self._reaped:
                return False
            try:
                os.kill(self._proc.pid, sig)
            except ProcessLookupError:
                return False
            return True

    def _kill_group(self) -> None:
        if self._proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)

    def stop(self, grace: float = DEFAULT_GRACE_S) -> int | None:
        """SIGTERM the main process; after `grace` seconds SIGKILL its whole group."""
        if self._proc is None:
            return None
        if self.stop_requested_at is None:
            self.stop_requested_at = time.time()
        if self.send_signal(signal.SIGTERM) and not self._exited.wait(max(grace, 0.0)):
            with self._lock:
                if not self._reaped:
                    self._kill_group()
        self._exited.wait(10.0)
        return self.returncode

    def release(self) -> None:
        """Stop looking after the server: it may outlive sglaunch (detached launches)."""
        _unregister(self)


def _register(proc: ServerProcess) -> None:
    global _atexit_registered
    with _live_lock:
        _live.add(proc)
        if not _atexit_registered:
            atexit.register(stop_all)
            _atexit_registered = True


def _unregister(proc: ServerProcess) -> None:
    with _live_lock:
        _live.discard(proc)


def stop_all(grace: float = ATEXIT_GRACE_S) -> None:
    """Stop every server this process started and still looks after."""
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
        if proc.stop_requested_at is None:
            proc.stop_requested_at = time.time()
    deadline = time.monotonic() + grace
    for proc in procs:
        proc.wait(max(deadline - time.monotonic(), 0.0))
    for proc in procs:
        if proc.running():
            proc.stop(grace=0.0)
