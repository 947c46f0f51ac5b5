"""The monitor without a UI: progress lines on stderr, or JSON lines on stdout.

Exit codes: 0 ready and detached, or stopped cleanly; 3 the server failed to start
(including a start-up timeout); 4 it died after it was ready; 130 interrupted (Ctrl-C,
SIGINT or SIGTERM to sglaunch), after the server tree has been stopped.
"""

from __future__ import annotations

import contextlib
import json
import queue
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from sglaunch.errors import UserError
from sglaunch.exitcodes import ExitCode
from sglaunch.runtime.failures import Diagnosis
from sglaunch.runtime.monitor import Monitor, PortInUseError
from sglaunch.runtime.process import DEFAULT_GRACE_S
from sglaunch.runtime.spec import LaunchSpec
from sglaunch.runtime.state import EventKind, MonitorEvent, Status

DEFAULT_STARTUP_TIMEOUT_S = 1800.0  # a 600 GB checkpoint from a network disk takes this long
_INTERRUPT = object()
STATS_HEARTBEAT_S = 30.0
QUIET_KINDS = {EventKind.GPU}  # shown in JSON mode only: one line every few seconds is noise


class _Printer:
    def __init__(self, out: TextIO, json_out: TextIO | None) -> None:
        self.out = out
        self.json_out = json_out
        self._last_stats = ""
        self._last_stats_at = 0.0

    def line(self, text: str) -> None:
        if self.json_out is None:
            print(f"sglaunch: {text}", file=self.out, flush=True)

    def record(self, data: dict[str, Any]) -> None:
        if self.json_out is not None:
            self.json_out.write(json.dumps(data, default=str) + "\n")
            self.json_out.flush()

    def event(self, ev: MonitorEvent) -> None:
        if self.json_out is not None:
            self.record(ev.to_json())
            return
        if ev.kind in QUIET_KINDS or ev.kind is EventKind.FAILURE:
            return  # failures are printed as a card by the caller
        if ev.kind is EventKind.STATS:
            # a line when the load changes, and a heartbeat while it does not
            now = time.monotonic()
            if ev.message == self._last_stats and now - self._last_stats_at < STATS_HEARTBEAT_S:
                return
            self._last_stats, self._last_stats_at = ev.message, now
        if ev.kind is EventKind.HINT:
            self.line(f"hint: {ev.message}")
            for fix in ev.data.get("fixes") or ():
                self.line(f"  fix: {fix['label']}")
            return
        self.line(ev.message)

    def card(self, diagnosis: Diagnosis, run_dir: str | None) -> None:
        if self.json_out is not None:
            self.record({"event": "card", **diagnosis.to_json(), "run_dir": run_dir})
            return
        c = diagnosis.card
        self.line(f"error [{diagnosis.code}] {diagnosis.title}")
        self.line(f"  {diagnosis.message}")
        if c is not None:
            self.line(f"  what: {c.what}")
            for i, solution in enumerate(c.solutions, 1):
                self.line(f"  {i}. {solution}")
        for fix in diagnosis.fixes:
            self.line(f"  fix: {fix.label}")
        generic = c is None or not c.patterns or diagnosis.code == "runtime-exited-during-startup"
        if diagnosis.traceback and generic:
            self.line("  last traceback in the log:")
            for tb_line in diagnosis.traceback.splitlines()[-25:]:
                print(f"    {tb_line}", file=self.out, flush=True)
        if run_dir:
            self.line(f"  log: {run_dir}/server.log")


def _outcome(status: Status) -> ExitCode:
    if status is Status.FAILED:
        return ExitCode.START_FAILED
    if status is Status.DIED:
        return ExitCode.DIED
    return ExitCode.OK


def run_headless(
    spec: LaunchSpec,
    *,
    json_lines: bool = False,
    detach: bool = False,
    startup_timeout: float | None = DEFAULT_STARTUP_TIMEOUT_S,
    stop_grace: float = DEFAULT_GRACE_S,
    out: TextIO | None = None,
    json_out: TextIO | None = None,
    monitor_factory: Callable[..., Monitor] = Monitor,
    **monitor_options: Any,
) -> ExitCode:
    """Launch `spec` and follow it until it is ready (`detach`) or until it ends."""
    out = out or sys.stderr
    printer = _Printer(out, (json_out or sys.stdout) if json_lines else None)
    monitor = monitor_factory(
        spec, startup_timeout=startup_timeout, stop_grace=stop_grace, **monitor_options
    )
    events: queue.Queue[Any] = monitor.events()
    interrupts: list[int] = []

    def on_signal(signum: int, frame: Any) -> None:
        interrupts.append(signum)
        if len(interrupts) > 1:
            threading.Thread(target=monitor.kill, daemon=True).start()  # a second Ctrl-C: no grace
        events.put(_INTERRUPT)

    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, on_signal)
    detached = False
    try:
        try:
            monitor.start(detach=detach)
        except PortInUseError as exc:
            printer.card(exc.diagnosis, None)
            return exc.code
        except UserError as exc:
            printer.line(f"error: {exc.message}")
            printer.record({"event": "error", "message": exc.message, "code": int(exc.code)})
            return exc.code
        while True:
            item = events.get()
            if item is _INTERRUPT:
                pid = monitor.pid
                printer.line(f"interrupted: stopping the server (pid {pid}) and its processes")
                monitor.stop()
                _drain(events, printer)
                printer.record({"event": "interrupted", "pid": pid})
                return ExitCode.INTERRUPTED
            ev: MonitorEvent = item
            printer.event(ev)
            if ev.kind is EventKind.READY and detach:
                monitor.release()
                detached = True
                _drain(events, printer)
                state = monitor.snapshot()
                if not json_lines:
                    # stdout carries data only: what a script needs to find the server again
                    print(f"{state.pid} {state.run_dir}", file=sys.stdout, flush=True)
                return ExitCode.OK
            if ev.kind is EventKind.EXITED:
                monitor.wait(5.0)
                state = monitor.snapshot()
                if state.diagnosis is not None and state.status in (Status.FAILED, Status.DIED):
                    printer.card(state.diagnosis, state.run_dir)
                return _outcome(state.status)
    finally:
        for sig, handler in previous.items():
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(sig, handler)
        if not detached and monitor.running():
            monitor.stop()


def _drain(events: queue.Queue[Any], printer: _Printer) -> None:
    """Print what the monitor said while we were busy stopping or detaching."""
    with contextlib.suppress(queue.Empty):
        while True:
            item = events.get_nowait()
            if isinstance(item, MonitorEvent):
                printer.event(item)
