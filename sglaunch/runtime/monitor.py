"""Launch an sglang server and follow it: the process lifecycle.

A Monitor owns one server at a time (restart replaces it): it checks the port, creates the
run directory, forks the server (process.py), reads its output into lines (log file, ring
buffer), and stops it. What those lines and the poller's answers mean is the start-up
reducer's business (startup.py); asking the server over HTTP and sampling the GPUs is the
poller's (poller.py). Subscribers get events on the monitor's threads; `snapshot()` gives
the whole state at any time. Nothing here knows about a UI.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from sglaunch.errors import UserError
from sglaunch.exitcodes import ExitCode
from sglaunch.runtime.after_launch import summary_text
from sglaunch.runtime.failures import Diagnosis, diagnose, diagnosis_for
from sglaunch.runtime.lines import LineSplitter
from sglaunch.runtime.load import LoadStats
from sglaunch.runtime.logparse import parse_line
from sglaunch.runtime.observed import Observed
from sglaunch.runtime.poller import GpuProbe, Poller, PollPlan, default_gpu_probe
from sglaunch.runtime.probe import Endpoint, free_port, port_problem
from sglaunch.runtime.process import DEFAULT_GRACE_S, ServerProcess, SpawnError
from sglaunch.runtime.relay import SECRETS_ENV
from sglaunch.runtime.rundir import RunDir
from sglaunch.runtime.spec import LaunchSpec
from sglaunch.runtime.startup import StartupTracker
from sglaunch.runtime.state import EventKind, GpuSample, MonitorEvent, Status
from sglaunch.secrets import MASK, is_secret_env_name, mask_argv, mask_json, secret_values
from sglaunch.validators.cards import runtime as rc

Subscriber = Callable[[MonitorEvent], None]
READER_DRAIN_S = 3.0
FAIL_FAST_GRACE_S = 2.0
LOG_FLUSH_S = 1.0  # server.log lags the pipe by at most this


class PortInUseError(UserError):
    """The server's host:port is taken: nothing was started."""

    def __init__(self, message: str, diagnosis: Diagnosis) -> None:
        super().__init__(message, ExitCode.START_FAILED)
        self.diagnosis = diagnosis


class _Run:
    """One start of the server: what a restart replaces whole, so nothing old revives."""

    def __init__(self, spec: LaunchSpec, metrics_interval: float) -> None:
        self.tracker = StartupTracker(
            spec.flags.values, spec.resolved, metrics_interval=metrics_interval
        )
        self.log_file: IO[str] | None = None
        self.relay: subprocess.Popen[bytes] | None = None
        self.reader_done = threading.Event()
        self.stop_reading = threading.Event()
        self.done = threading.Event()
        self.ready = threading.Event()
        self.fail_fast: Diagnosis | None = None
        self.released = False
        self.poller: Poller | None = None


class Monitor(Observed):
    def __init__(
        self,
        spec: LaunchSpec,
        *,
        startup_timeout: float | None = None,
        stop_grace: float = DEFAULT_GRACE_S,
        probe_interval: float = 0.5,
        metrics_interval: float = 1.0,
        health_interval: float | None = 30.0,
        gpu_interval: float | None = 2.0,
        gpu_probe: GpuProbe | None = None,
        metrics_window: float = 60.0,
        log_buffer: int = 2000,
        runs_root: Path | None = None,
    ) -> None:
        self.spec = spec
        self.startup_timeout = startup_timeout
        self.stop_grace = stop_grace
        self.probe_interval = probe_interval
        self.metrics_interval = metrics_interval
        self.health_interval = health_interval
        self.gpu_interval = gpu_interval
        self._gpu_probe = gpu_probe
        self.metrics_window = metrics_window
        self.runs_root = runs_root
        super().__init__(log_buffer)
        self._proc: ServerProcess | None = None
        self._rundir: RunDir | None = None
        self._run = _Run(spec, metrics_interval)

    def _tracker(self) -> StartupTracker:
        return self._run.tracker

    # --- public facts

    @property
    def pid(self) -> int | None:
        return self._run.tracker.state.pid

    @property
    def run_dir(self) -> Path | None:
        return self._rundir.path if self._rundir else None

    @property
    def endpoint(self) -> Endpoint:
        return self.spec.flags.endpoint

    def tree_pids(self) -> set[int]:
        return self._proc.tree_pids() if self._proc else set()

    def running(self) -> bool:
        return self._proc is not None and self._proc.running()

    def wait(self, timeout: float | None = None) -> bool:
        """Until the server has exited and the monitor has recorded why."""
        return self._run.done.wait(timeout)

    def wait_ready(self, timeout: float | None = None) -> bool:
        run = self._run
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            if run.ready.is_set():
                return True
            if run.done.is_set():
                return False
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                return False
            run.ready.wait(0.1 if left is None else min(0.1, left))

    # --- start

    def start(self, *, detach: bool = False) -> None:
        """Check the port, create the run directory, spawn the server, start following it.

        Raises PortInUseError (exit code 3) before spawning when host:port is taken, and
        UserError for a program that cannot be started.
        """
        with self._lock:
            if self.running():
                raise UserError("the server is already running; stop or restart it", ExitCode.USAGE)
            self._run = run = _Run(self.spec, self.metrics_interval)
            self._ring.clear()
            self._seq = 0
        spec = self.spec
        flags = spec.flags
        problem = port_problem(flags.host, flags.port)
        if problem is not None:
            port = free_port(flags.host, flags.port + 1)
            diag = diagnosis_for(rc.PORT_IN_USE, problem, flags.values, free_port=port)
            with self._lock:
                run.tracker.state.status = Status.FAILED
                run.tracker.state.diagnosis = diag
            run.done.set()
            raise PortInUseError(problem, diag)
        rundir = self._new_rundir()
        run.log_file = None if detach else rundir.open_log()
        if detach:
            rundir.log_path.touch()  # the relay appends; the reader tails it from the start
        try:
            proc = self._spawn_detached(rundir) if detach else self._spawn(run)
        except SpawnError as exc:
            rundir.close_log()
            with contextlib.suppress(OSError):
                rundir.update_status(
                    status=str(Status.FAILED), error=str(exc), profile=spec.profile
                )
            with self._lock:
                run.tracker.state.status = Status.FAILED
            run.done.set()
            raise UserError(f"cannot start the server: {exc}", ExitCode.START_FAILED) from exc
        self._proc = proc
        command = tuple(spec.masked_command())
        with self._lock:
            started_at = proc.started_at or time.time()
            events = run.tracker.spawned(
                proc.pid, str(rundir.path), flags.endpoint.url, command, started_at
            )
        # the server runs either way; without the record only `sglaunch runs` cannot see it
        with contextlib.suppress(OSError):
            rundir.update_status(
                profile=spec.profile,
                status=str(Status.STARTING),
                pid=proc.pid,
                url=flags.endpoint.url,
                started_at=started_at,
                detached=detach,
            )
        if detach:
            target: Callable[..., None] = self._tail_file
            args: tuple[Any, ...] = (run, rundir.log_path)
        else:
            target, args = self._read_pipes, (run, proc)
        threading.Thread(target=target, args=args, daemon=True).start()
        run.poller = Poller(
            self._plan(), _Sink(self, run), self._probe(), metrics_window=self.metrics_window
        )
        run.poller.start()
        self._emit(events)

    def _plan(self) -> PollPlan:
        return PollPlan(
            endpoint=self.endpoint,
            enable_metrics=self.spec.flags.enable_metrics,
            probe_interval=self.probe_interval,
            metrics_interval=self.metrics_interval,
            health_interval=self.health_interval,
            gpu_interval=self.gpu_interval,
            startup_timeout=self.startup_timeout,
        )

    def _probe(self) -> GpuProbe | None:
        if self.gpu_interval is None:
            return None
        return self._gpu_probe or default_gpu_probe(self.spec.environment())

    def _new_rundir(self) -> RunDir:
        spec = self.spec
        try:
            rundir = RunDir.create(spec.profile, self.runs_root)
        except OSError as exc:
            raise UserError(f"cannot create a run directory: {exc}", ExitCode.START_FAILED) from exc
        self._rundir = rundir
        rundir.write_json(
            "argv.json",
            {
                "command": spec.masked_command(),
                "argv": mask_argv(spec.argv),
                "entry": spec.entry,
                "python": spec.python,
                "env": {k: (MASK if is_secret_env_name(k) else v) for k, v in spec.env.items()},
                "profile": spec.profile,
            },
        )
        if spec.resolved is not None:
            # sglang resolves a typed-in key to its value: the record keeps only ****
            resolved = mask_json(dict(spec.resolved), secret_values(spec.argv))
            rundir.write_json("resolved.json", resolved)
        return rundir

    def _spawn(self, run: _Run) -> ServerProcess:
        proc = ServerProcess(
            self.spec.command(),
            env=self.spec.environment(),
            cwd=self.spec.cwd,
            die_with_parent=True,
            on_exit=lambda code: self._on_exit(run, code),
        )
        proc.start()
        return proc

    def _spawn_detached(self, rundir: RunDir) -> ServerProcess:
        run = self._run
        r, w = os.pipe()
        try:
            # the relay first: it needs nothing from the server, and if the server then
            # fails to start, closing the pipe ends the relay too. It runs under
            # sglaunch's own environment, which can import sglaunch.
            relay_env = dict(os.environ, **{SECRETS_ENV: json.dumps(self.spec.masker.secrets)})
            try:
                run.relay = subprocess.Popen(
                    [sys.executable, "-m", "sglaunch.runtime.relay", str(rundir.log_path)],
                    stdin=r,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    env=relay_env,
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as exc:
                raise SpawnError(f"cannot start the log relay: {exc}") from exc
            proc = ServerProcess(
                self.spec.command(),
                env=self.spec.environment(),
                cwd=self.spec.cwd,
                stdout=w,
                stderr=w,
                die_with_parent=False,
                on_exit=lambda code: self._on_exit(run, code),
            )
            proc.start()
        finally:
            os.close(r)
            os.close(w)
        return proc

    # --- stop, restart, detach

    def stop(self, grace: float | None = None, *, wait: bool = True) -> int | None:
        """Ask the server to stop (SIGTERM), then SIGKILL its group after `grace` seconds."""
        proc = self._proc
        if proc is None or not proc.running():
            self.wait(READER_DRAIN_S + 1)
            return proc.returncode if proc else None
        grace = self.stop_grace if grace is None else grace
        now = time.time()
        with self._lock:
            events = self._run.tracker.stop_requested(proc.pid, now)
        if events and self._rundir:
            with contextlib.suppress(OSError):
                self._rundir.update_status(stop_requested_at=now, status=str(Status.STOPPING))
        self._emit(events)
        if not wait:
            threading.Thread(target=proc.stop, args=(grace,), daemon=True).start()
            return None
        code = proc.stop(grace)
        self.wait(READER_DRAIN_S + 1)
        return code

    def kill(self) -> int | None:
        """Stop at once: no grace period."""
        return self.stop(grace=0.0)

    def restart(
        self, argv: list[str] | tuple[str, ...] | None = None, *, grace: float | None = None
    ) -> None:
        """Stop the server (if running) and start it again, with new flags when given."""
        self.stop(grace)
        if argv is not None:
            self.spec = self.spec.with_argv(argv)
        self.start(detach=False)

    def release(self) -> None:
        """Leave a detached server running and stop following it."""
        proc, run = self._proc, self._run
        if proc is None:
            return
        run.released = True
        proc.release()
        if run.poller is not None:
            run.poller.stop()
        run.stop_reading.set()
        with self._lock:
            events = run.tracker.released(
                proc.pid, str(self.run_dir), self.endpoint.url, time.time()
            )
        if self._rundir:
            with contextlib.suppress(OSError):
                self._rundir.update_status(status=str(Status.DETACHED), detached_at=time.time())
        self._emit(events)

    # --- reading output

    def _read_pipes(self, run: _Run, proc: ServerProcess) -> None:
        sel = selectors.DefaultSelector()
        flushed = time.monotonic()
        try:
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    os.set_blocking(stream.fileno(), False)
                    sel.register(stream.fileno(), selectors.EVENT_READ, LineSplitter())
            while sel.get_map():
                ready = sel.select(timeout=0.5)
                if not ready or time.monotonic() - flushed > LOG_FLUSH_S:
                    self._flush_log(run)
                    flushed = time.monotonic()
                for key, _ in ready:
                    try:
                        data = os.read(key.fd, 65536)
                    except (BlockingIOError, InterruptedError):
                        continue
                    splitter: LineSplitter = key.data
                    if data:
                        lines = splitter.feed(data)
                    else:
                        sel.unregister(key.fd)
                        lines = splitter.flush()
                    if lines:
                        self._ingest(run, lines)
        finally:
            sel.close()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            self._flush_log(run)
            run.reader_done.set()

    def _tail_file(self, run: _Run, path: Path) -> None:
        try:
            follow_file(path, run.stop_reading, lambda lines: self._ingest(run, lines, masked=True))
        finally:
            run.reader_done.set()

    def _flush_log(self, run: _Run) -> None:
        with self._lock:
            if run.log_file is not None:
                with contextlib.suppress(OSError, ValueError):
                    run.log_file.flush()

    def _ingest(self, run: _Run, lines: list[str], *, masked: bool = False) -> None:
        mask = self.spec.masker
        events: list[MonitorEvent] = []
        port_in_use: str | None = None
        with self._lock:
            out = []
            now = time.time()
            for raw in lines:
                line = raw if masked else mask(raw)
                out.append(line)
                self._ring.append(line)
                self._seq += 1
                ev = parse_line(line)
                if ev is not None:
                    step = run.tracker.log(ev, line, now)
                    events += step.events
                    port_in_use = port_in_use or step.port_in_use
            if run.log_file is not None:
                with contextlib.suppress(OSError, ValueError):
                    run.log_file.write("\n".join(out) + "\n")
            became_ready = not run.ready.is_set() and run.tracker.state.ready_at is not None
            if became_ready:
                run.ready.set()
            if port_in_use and run.fail_fast is None:
                # sglang would poll for ~120 s before giving up: stop it now
                ep = self.endpoint
                run.fail_fast = diagnosis_for(
                    rc.PORT_IN_USE,
                    port_in_use,
                    run.tracker.fix_flags(),
                    free_port=free_port(ep.host, ep.port + 1),
                )
                # nothing to drain on a server that never bound its port
                threading.Thread(
                    target=self.stop, args=(min(self.stop_grace, FAIL_FAST_GRACE_S),), daemon=True
                ).start()
        if became_ready:
            self._record_ready(run)
        if any(e.kind is EventKind.SUMMARY for e in events):
            events += self._memory_compared(run)
        self._emit(events)

    def _memory_compared(self, run: _Run) -> list[MonitorEvent]:
        """sglang's summary line is in: the plan against the log, and the measured start-up
        cost kept for the next plan on these GPUs (the calibration store)."""
        prediction = self.spec.prediction
        if prediction is None:
            return []

        with self._lock:
            if run.tracker.state.memory is not None:
                return []
            comparison = prediction.compare(list(self._ring))
            run.tracker.state.memory = comparison
        with contextlib.suppress(Exception):  # a store we cannot write costs only the store
            prediction.calibrate(comparison)
        return [
            MonitorEvent(
                EventKind.MEMORY,
                time.time(),
                summary_text(comparison),
                {"memory": comparison.to_json()},
            )
        ]

    def _record_ready(self, run: _Run) -> None:
        if self._rundir:
            # a full disk or a removed folder costs the record, never the following
            with contextlib.suppress(OSError):
                self._rundir.update_status(
                    status=str(Status.READY), ready_at=run.tracker.state.ready_at
                )

    # --- what the poller sees (called on its thread, through _Sink)

    def _observed(self, run: _Run, change: Callable[[StartupTracker], list[MonitorEvent]]) -> None:
        with self._lock:
            if run is not self._run or (run.poller is not None and run.poller.stop_event.is_set()):
                return
            was_ready = run.tracker.state.ready_at is not None
            events = change(run.tracker)
            became_ready = not was_ready and run.tracker.state.ready_at is not None
            if became_ready:
                run.ready.set()
        if became_ready:
            self._record_ready(run)
        self._emit(events)

    def _timed_out(self, run: _Run) -> None:
        with self._lock:
            if self.startup_timeout is None:
                return
            run.fail_fast = run.tracker.timed_out(self.startup_timeout)
        self.stop()

    # --- exit

    def _on_exit(self, run: _Run, returncode: int) -> None:
        if run.released:
            return
        try:
            self._record_exit(run, returncode)
        finally:
            run.done.set()  # whatever happened, nobody may wait forever

    def _record_exit(self, run: _Run, returncode: int) -> None:
        if run.poller is not None:
            run.poller.stop()
        if run.relay is not None:
            # the relay ends when every writer of its pipe is gone
            with contextlib.suppress(subprocess.TimeoutExpired):
                run.relay.wait(READER_DRAIN_S)
        run.stop_reading.set()
        run.reader_done.wait(READER_DRAIN_S)
        ep = self.endpoint
        with self._lock:
            flags = run.tracker.fix_flags()
            lines = list(self._ring)

            def why(code: int | None, ready: bool) -> Diagnosis:
                return diagnose(
                    lines,
                    ready=ready,
                    returncode=code,
                    flags=flags,
                    free_port=lambda: free_port(ep.host, ep.port + 1),
                )

            events = run.tracker.exited(
                returncode, time.time(), fail_fast=run.fail_fast, diagnose=why
            )
            if run.log_file is not None and self._rundir is not None:
                with contextlib.suppress(OSError, ValueError):
                    self._rundir.close_log()
                run.log_file = None
            record = run.tracker.exit_record()
        if self._rundir:
            with contextlib.suppress(OSError):
                self._rundir.update_status(**record)
        self._emit(events)


class _Sink:
    """The poller's observations of one run, applied through the monitor's lock."""

    def __init__(self, monitor: Monitor, run: _Run) -> None:
        self.m = monitor
        self.run = run

    def status(self) -> Status:
        return self.run.tracker.state.status

    def on_ready(self) -> None:
        self.m._observed(self.run, lambda t: t.http_ready(time.time()))

    def on_unavailable(self) -> None:
        self.m._observed(self.run, lambda t: t.http_unavailable(time.time()))

    def on_health_failed(self) -> None:
        self.m._observed(self.run, lambda t: t.health_failed(time.time()))

    def on_server_info(self, info: Mapping[str, Any] | None) -> None:
        metrics = self.m.spec.flags.enable_metrics
        self.m._observed(
            self.run, lambda t: t.server_info(info, time.time(), enable_metrics=metrics)
        )

    def on_load(self, load: LoadStats) -> None:
        self.m._observed(self.run, lambda t: t.load(load))

    def on_gpus(self, samples: tuple[GpuSample, ...]) -> None:
        self.m._observed(self.run, lambda t: t.gpus(samples, time.time()))

    def on_gpu_note(self, note: str) -> None:
        def change(t: StartupTracker) -> list[MonitorEvent]:
            t.gpu_note(note)
            return []

        self.m._observed(self.run, change)

    def on_startup_timeout(self) -> None:
        self.m._timed_out(self.run)


def follow_file(
    path: Path, stop: threading.Event, sink: Callable[[list[str]], None], *, poll: float = 0.1
) -> None:
    """Feed `sink` the lines of `path` from its start, following it until `stop` is set."""
    splitter = LineSplitter()
    try:
        with open(path, "rb") as fh:
            while True:
                data = fh.read(65536)
                if data:
                    lines = splitter.feed(data)
                    if lines:
                        sink(lines)
                    continue
                if stop.is_set():
                    lines = splitter.flush()
                    if lines:
                        sink(lines)
                    return
                stop.wait(poll)
    except OSError:
        return
