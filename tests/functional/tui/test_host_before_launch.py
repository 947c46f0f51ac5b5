"""ctrl+l checks the host first (in a worker): its errors stop the launch as "Cannot launch",
its warnings join the launch dialog."""

from __future__ import annotations

from sglaunch.session import LaunchSession
from sglaunch.tui.screens.dialogs import ConfirmScreen
from sglaunch.validators.findings import Finding, Severity
from tests.support.tui import make_app, settle_app, told, wait_until

PORT = Finding("host-port-in-use", Severity.ERROR, "port 30000, --port, is held by pid 7 (python)")
SHM = Finding("host-shm-too-small", Severity.WARNING, "/dev/shm is 2048 MiB; NCCL wants 8 GiB")


def checker(findings: list[Finding], asked: list[LaunchSession]):  # type: ignore[no-untyped-def]
    def check(session: LaunchSession) -> list[Finding]:
        asked.append(session)
        return findings

    return check


async def test_a_host_error_stops_the_launch() -> None:
    asked: list[LaunchSession] = []
    started: list[object] = []
    app = make_app(gpu_spec="H100x8", server_factory=lambda spec: started.append(spec))
    app.c.host_check = checker([PORT, SHM], asked)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        await pilot.press("ctrl+l")
        assert await wait_until(pilot, lambda: any("host-port-in-use" in t for t in told(app)))
        assert asked == [app.session]
        assert not isinstance(app.screen, ConfirmScreen) and started == []
        assert any("held by pid 7" in t for t in told(app))


async def test_host_warnings_join_the_launch_dialog() -> None:
    asked: list[LaunchSession] = []
    app = make_app(gpu_spec="H100x8")
    app.c.host_check = checker([SHM], asked)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        await pilot.press("ctrl+l")
        assert await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert isinstance(app.screen, ConfirmScreen)
        assert "! /dev/shm is 2048 MiB; NCCL wants 8 GiB" in app.screen.body
        await pilot.press("escape")
