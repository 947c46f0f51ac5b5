"""The App's running server: started, restarted and stopped in worker threads.

The App owns the server, not a screen: leaving the monitor (e, or esc) keeps it running and
followed, and coming back shows it as it is now. The monitor's callbacks run on its own
threads and only post `ServerReported`; the App hands each event to the monitor screen.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from sglaunch.errors import UserError
from sglaunch.tui import messages as m

if TYPE_CHECKING:
    from textual.app import App

    from sglaunch.runtime import Diagnosis, LaunchSpec, Monitor, MonitorEvent
    from sglaunch.runtime.watch import Watcher
    from sglaunch.tui.screens.monitor import MonitorScreen

ServerFactory = Callable[["LaunchSpec"], "Monitor"]
MONITOR = "monitor"


def _changed(running: LaunchSpec, wanted: LaunchSpec) -> bool:
    return (running.argv, dict(running.env), running.python, running.entry) != (
        wanted.argv,
        dict(wanted.env),
        wanted.python,
        wanted.entry,
    )


class ServerControl:
    def __init__(
        self,
        app: App[int],
        factory: ServerFactory | None,
        *,
        on_measured: Callable[[], object] = lambda: None,
    ) -> None:
        self.app = app
        self._on_measured = on_measured  # a start-up cost was measured: re-read the facts
        self.factory = factory
        self.monitor: Monitor | Watcher | None = None
        self.spec: LaunchSpec | None = None
        self.screen: MonitorScreen | None = None
        self.watcher: Watcher | None = None
        self.busy = threading.Event()  # a start or a restart is under way
        self._unsubscribe: Callable[[], None] | None = None

    @property
    def owned(self) -> bool:
        """False while watching a server sglaunch did not start here (attach)."""
        return self.watcher is None

    def running(self) -> bool:
        """An owned server is up: quitting would stop it."""
        mon = self.monitor
        return self.owned and mon is not None and not mon.snapshot().status.finished

    def watch(self, watcher: Watcher) -> None:
        """Show a server sglaunch does not own; leaving the monitor leaves it running."""
        # not before the first frame: the monitor screen loads the runtime
        from sglaunch.tui.screens.monitor import MonitorScreen

        self.watcher = watcher
        self.monitor = watcher
        if self.screen is None:
            self.screen = MonitorScreen(self)
            self.app.install_screen(self.screen, MONITOR)
        self.app.push_screen(MONITOR)
        self._unsubscribe = watcher.subscribe(self._forward)
        watcher.start()

    # --- on the event loop ----------------------------------------------------------

    def launch(self, spec: LaunchSpec) -> None:
        """Show the monitor and start `spec` (a running server restarts with it)."""
        if self.factory is None:
            self.app.notify("no server launcher configured", severity="error")
            return
        if self.busy.is_set():
            self.app.notify("the server is starting or restarting: one moment", timeout=4)
            return
        if self.watcher is not None:
            # a launch here replaces watching the attached server, which keeps running
            if self._unsubscribe is not None:
                self._unsubscribe()
                self._unsubscribe = None
            self.watcher.stop()
            self.watcher = None
            self.monitor = None
        # not before the first frame: the monitor screen loads the runtime
        from sglaunch.tui.screens.monitor import MonitorScreen

        if self.screen is None:
            self.screen = MonitorScreen(self)
            self.app.install_screen(self.screen, MONITOR)
        self.app.push_screen(MONITOR)
        if self.running():
            if self.spec is None or _changed(self.spec, spec):
                self.restart(spec)  # the flags were edited: run them
            return  # the same launch: show it
        self.screen.starting(spec)
        self.spec = spec
        self._in_worker(lambda: self._start(spec))

    def restart(self, spec: LaunchSpec) -> None:
        """Stop the server and start `spec` in its place: a new run directory."""
        if self.busy.is_set():
            # a second restart while one runs would start two servers on one port
            self.app.notify("already restarting: one moment", timeout=4)
            return
        self.spec = spec
        if self.screen is not None:
            self.screen.starting(spec)
        self._in_worker(lambda: self._restart(spec))

    def _in_worker(self, job: Callable[[], None]) -> None:
        """One start or restart at a time: `busy` is set until the job is done."""
        self.busy.set()

        def run() -> None:
            try:
                job()
            finally:
                self.busy.clear()

        self.app.run_worker(run, thread=True, group="server", exclusive=True)

    def stop(self) -> None:
        if not self.owned:
            self.app.notify("attached: sglaunch did not start this server here", severity="warning")
            return
        mon = self.monitor
        if mon is not None and not mon.snapshot().status.finished:
            self.app.notify("stopping the server (SIGTERM, then SIGKILL)", timeout=4)
            self.app.run_worker(
                lambda: mon.stop(wait=False), thread=True, group="server-stop", exclusive=True
            )

    def reported(self, event: MonitorEvent) -> None:
        from sglaunch.runtime import EventKind  # not at import (first frame); loaded by now

        if self.screen is not None and self.monitor is not None:
            self.screen.server_event(event, self.monitor.snapshot())
        if event.kind is EventKind.MEMORY:
            # a start-up cost was just measured: the next plan here uses it, and says so
            self._on_measured()

    def not_started(self, message: str, diagnosis: Diagnosis | None) -> None:
        if self.screen is not None:
            self.screen.not_started(message, diagnosis)

    # --- in worker threads ------------------------------------------------------------

    def _start(self, spec: LaunchSpec) -> None:
        assert self.factory is not None
        try:
            monitor = self.factory(spec)
            self._unsubscribe = monitor.subscribe(self._forward)
            self.monitor = monitor
            monitor.start()
        except UserError as exc:
            self.app.post_message(m.ServerNotStarted(exc.message, getattr(exc, "diagnosis", None)))

    def _forward(self, event: MonitorEvent) -> None:
        self.app.post_message(m.ServerReported(event))

    def _restart(self, spec: LaunchSpec) -> None:
        if self.monitor is not None:
            self.monitor.stop(wait=True)
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        # a new monitor through the factory: a new run directory, and whatever the
        # factory adds to a launch applies to this one too
        self._start(spec)

    def stop_and_wait(self) -> None:
        """For the exit path: stop the server tree, blocking (call from a thread)."""
        if self.watcher is not None:
            self.watcher.stop()  # only the watching
            return
        if self.monitor is not None:
            with contextlib.suppress(Exception):
                self.monitor.stop(wait=True)
