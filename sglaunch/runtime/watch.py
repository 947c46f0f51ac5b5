"""Following a server sglaunch does not own: a run directory left running, or a URL.

A `Watcher` reads like a `Monitor` (subscribe, snapshot, the log) and shares its parts —
the start-up reducer for the log (replayed from the start of the run's server.log, then
followed), the poller for readiness, load and GPUs — but it never signals the server:
stopping a watcher only stops watching. The run's process is checked by its recorded
identity (a reused pid is not the server); a URL's server is gone when it stops answering.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sglaunch.runtime.attach_target import AttachTarget
from sglaunch.runtime.failures import diagnose
from sglaunch.runtime.load import LoadStats
from sglaunch.runtime.logparse import parse_line
from sglaunch.runtime.monitor import follow_file
from sglaunch.runtime.observed import Observed
from sglaunch.runtime.poller import GpuProbe, Poller, PollPlan, default_gpu_probe
from sglaunch.runtime.probe import Endpoint, request
from sglaunch.runtime.runs import RunState, load_run
from sglaunch.runtime.startup import StartupTracker, event
from sglaunch.runtime.state import EventKind, GpuSample, MonitorEvent, Status

Subscriber = Callable[[MonitorEvent], None]
LIVENESS_S = 1.0
UNREACHABLE_AFTER = 3  # a URL that refused this many checks in a row is gone


class Watcher(Observed):
    owned = False  # stopping it only stops watching

    def __init__(
        self,
        target: AttachTarget,
        *,
        metrics_interval: float = 1.0,
        probe_interval: float = 0.5,
        gpu_interval: float | None = 2.0,
        gpu_probe: GpuProbe | None = None,
        log_buffer: int = 2000,
        liveness_interval: float = LIVENESS_S,
    ) -> None:
        super().__init__(log_buffer)
        self.target = target
        self._stop = threading.Event()
        self._done = threading.Event()
        self._liveness_interval = liveness_interval
        self.tracker = StartupTracker(metrics_interval=metrics_interval)
        run = target.run
        self.tracker.attached(
            target.pid,
            str(run.path) if run is not None else None,
            target.url,
            (run.started_at if run is not None else None) or time.time(),
        )
        local = target.local and gpu_interval is not None
        self._poller = Poller(
            PollPlan(
                endpoint=target.endpoint,
                enable_metrics=_metrics_on(target),
                probe_interval=probe_interval,
                metrics_interval=metrics_interval,
                health_interval=None,
                gpu_interval=gpu_interval if local else None,
            ),
            _Sink(self),
            (gpu_probe or default_gpu_probe({})) if local else None,
        )

    # --- the reading side, as a Monitor's -----------------------------------------------

    def _tracker(self) -> StartupTracker:
        return self.tracker

    @property
    def endpoint(self) -> Endpoint:
        return self.target.endpoint

    @property
    def pid(self) -> int | None:
        return self.target.pid

    @property
    def run_dir(self) -> Path | None:
        return self.target.run.path if self.target.run is not None else None

    def running(self) -> bool:
        return not self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Until the watched server is gone (or watching stopped)."""
        return self._done.wait(timeout)

    # --- start and leave ------------------------------------------------------------

    def start(self, *, detach: bool = False) -> None:
        """Start watching: the log from its start, the poller, the process's liveness."""
        with self._lock:
            events = [
                event(
                    EventKind.SPAWNED,
                    time.time(),
                    f"attached to {self.target.url}"
                    + (f" (pid {self.target.pid}, {self.run_dir})" if self.target.pid else ""),
                    pid=self.target.pid,
                    run_dir=str(self.run_dir) if self.run_dir else None,
                    url=self.target.url,
                    attached=True,
                )
            ]
        self._emit(events)
        log = self.target.log_path
        if log is not None:
            threading.Thread(target=self._read_log, args=(log,), daemon=True).start()
        self._poller.start()
        threading.Thread(target=self._liveness, name="sglaunch-liveness", daemon=True).start()

    def stop(self, grace: float | None = None, *, wait: bool = True) -> None:
        """Leave the server running; stop watching it."""
        self._stop.set()
        self._poller.stop()
        self._done.set()

    def release(self) -> None:
        self.stop()

    # --- the log and the process ----------------------------------------------------

    def _read_log(self, path: Path) -> None:
        follow_file(path, self._stop, self._ingest)

    def _ingest(self, lines: list[str]) -> None:
        events: list[MonitorEvent] = []
        with self._lock:
            now = time.time()
            for line in lines:  # the run directory's log is masked as it was written
                self._ring.append(line)
                self._seq += 1
                ev = parse_line(line)
                if ev is not None:
                    events += self.tracker.log(ev, line, now).events
        self._emit(events)

    def _liveness(self) -> None:
        refused = 0
        while not self._stop.wait(self._liveness_interval):
            if self.target.run is not None:
                if self._process_gone():
                    self._gone(self._run_ending())
                    return
                self._notice_stop()
                continue
            # /ready is a flag, not a generation (/health runs one); only a refused or
            # dropped connection counts: a busy server answering slowly is still there
            try:
                request(self.target.endpoint, "/ready", timeout=5.0)
                refused = 0
            except (ConnectionRefusedError, ConnectionResetError):
                refused += 1
                if refused >= UNREACHABLE_AFTER:
                    self._gone((None, False), f"{self.target.url} no longer answers")
                    return
            except OSError:
                continue

    def _process_gone(self) -> bool:
        run = self.target.run
        assert run is not None
        try:
            return not load_run(run.path, tail=0).running
        except OSError:
            return True

    def _notice_stop(self) -> None:
        """`sglaunch runs stop` (or the owner) recorded a stop: what follows is a shutdown
        (its /ready 503s are not a failure), as for a server stopped here."""
        run = self.target.run
        assert run is not None
        if self.tracker.state.stop_requested_at is not None:
            return
        try:
            record = load_run(run.path, tail=0).record
        except OSError:
            return
        at = record.get("stop_requested_at")
        if record.get("status") == "stopping" and isinstance(at, (int, float)):
            pid = record.get("pid")
            self._observed(
                lambda t: t.stop_requested(pid if isinstance(pid, int) else 0, float(at))
            )

    def _stop_recorded(self) -> None:
        """Before a failed probe counts: `runs stop` records the stop before it signals, so
        a server draining on purpose is known as such here, whichever thread sees it first
        (the liveness check reads the record only every so often)."""
        if self.target.run is not None:
            self._notice_stop()

    def _run_ending(self) -> tuple[int | None, bool]:
        """(its exit code, whether it was stopped on purpose), as its run recorded them."""
        run = self.target.run
        assert run is not None
        try:
            ended = load_run(run.path, tail=0)
        except OSError:
            return None, False
        code = ended.returncode if isinstance(ended.returncode, int) else None
        return code, ended.state is RunState.EXITED

    def _gone(self, ending: tuple[int | None, bool], note: str = "") -> None:
        """The server ended while watched: how, as far as the run recorded it."""
        time.sleep(min(self._liveness_interval, 0.5))  # its last lines reach the log first
        self._stop.set()
        self._poller.stop()
        with self._lock:
            lines = list(self._ring)
            flags = self.tracker.fix_flags()

            def why(code: int | None, ready: bool) -> Any:
                return diagnose(lines, ready=ready, returncode=code, flags=flags)

            st = self.tracker.state
            returncode, stopped = ending
            if stopped:
                # `sglaunch runs stop`, or its owner, ended it on purpose: not a failure
                st.stop_requested_at = st.stop_requested_at or time.time()
            if returncode is None and note:
                st.status = Status.DIED if st.ready_at is not None else Status.FAILED
                events = [event(EventKind.EXITED, time.time(), note, status=str(st.status))]
            else:
                # not sglaunch's child here: without a record its exit status is unknown
                # (never a made-up one: -1 would read "killed by SIGHUP")
                events = self.tracker.exited(returncode, time.time(), fail_fast=None, diagnose=why)
        self._emit(events)
        self._done.set()

    def _observed(self, change: Callable[[StartupTracker], list[MonitorEvent]]) -> None:
        with self._lock:
            if self._stop.is_set():
                return
            events = change(self.tracker)
        self._emit(events)


def _metrics_on(target: AttachTarget) -> bool:
    """Whether to read /metrics: the run's command says; a bare URL is tried (it may 404)."""
    run = target.run
    if run is None or not run.command:
        return True
    return "--enable-metrics" in run.command


class _Sink:
    """The poller's observations, through the watcher's lock."""

    def __init__(self, watcher: Watcher) -> None:
        self.w = watcher

    def status(self) -> Status:
        return self.w.tracker.state.status

    def on_ready(self) -> None:
        self.w._observed(lambda t: t.http_ready(time.time()))

    def on_unavailable(self) -> None:
        self.w._stop_recorded()
        self.w._observed(lambda t: t.http_unavailable(time.time()))

    def on_health_failed(self) -> None:
        self.w._stop_recorded()
        self.w._observed(lambda t: t.health_failed(time.time()))

    def on_server_info(self, info: Mapping[str, Any] | None) -> None:
        on = _metrics_on(self.w.target)
        self.w._observed(lambda t: t.server_info(info, time.time(), enable_metrics=on))

    def on_load(self, load: LoadStats) -> None:
        self.w._observed(lambda t: t.load(load))

    def on_gpus(self, samples: tuple[GpuSample, ...]) -> None:
        self.w._observed(lambda t: t.gpus(samples, time.time()))

    def on_gpu_note(self, note: str) -> None:
        def change(t: StartupTracker) -> list[MonitorEvent]:
            t.gpu_note(note)
            return []

        self.w._observed(change)

    def on_startup_timeout(self) -> None:
        return None  # not ours to stop: the owner (if any) decides
