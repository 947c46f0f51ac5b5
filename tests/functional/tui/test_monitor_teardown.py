"""A server report that reaches the monitor while its screen is taken down (the app quitting,
the widgets already gone) is dropped, not raised: under load a watcher's report can land in
that moment, and the exception ended the app's run with an error."""

from __future__ import annotations

from sglaunch.runtime import EventKind
from sglaunch.tui.screens.monitor import MonitorScreen
from tests.support.scenes import FrozenMonitor, monitor_ready
from tests.support.tui import make_app


async def test_a_report_after_the_monitors_widgets_are_gone_is_dropped() -> None:
    app = make_app(gpu_spec="H100x8", model="example:llama-3.1-8b", server_factory=FrozenMonitor)
    async with app.run_test(size=(160, 50)) as pilot:
        await monitor_ready(pilot)
        screen = app.screen
        assert isinstance(screen, MonitorScreen)
        mon = app.server.monitor
        assert mon is not None
        stats = [ev for ev in mon.events if ev.kind is EventKind.STATS]  # type: ignore[attr-defined]
        assert stats, "the transcript has a load report"
        await screen.query_one("#load").remove()
        screen.server_event(stats[-1], mon.snapshot())
        assert screen.state.load is not None
