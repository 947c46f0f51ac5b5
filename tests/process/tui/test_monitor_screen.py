"""Pilot tests of the monitor screen against the stand-in server: a full start, and a CUDA-graph OOM."""

from __future__ import annotations

import asyncio
import sys
from dataclasses import replace

from sglaunch.facts.gpu import probe_gpus
from sglaunch.runtime import Monitor, Status
from sglaunch.tui.app import SglaunchApp
from sglaunch.tui.screens.dialogs import ConfirmScreen
from sglaunch.tui.screens.monitor import MonitorScreen, PhaseRow
from tests.fakes.nvml import H100, FakeNvml, gpu
from tests.support.processes import FAKE, fake_env, free_tcp_port, wait_gone
from tests.support.tui import make_app, plain, told

# real (fake) GPUs: launching from planning mode asks first, tested in test_flows
EIGHT_H100 = FakeNvml([gpu(H100, i) for i in range(8)])


def factory(scenario: str, nvml: FakeNvml | None = None):  # type: ignore[no-untyped-def]
    """Monitors that run the stand-in server; with `nvml`, GPU samples come from that fake."""

    def build(spec):  # type: ignore[no-untyped-def]
        fake = replace(
            spec, command_prefix=(sys.executable, str(FAKE)), env={**spec.env, **fake_env(scenario)}
        )
        return Monitor(
            fake,
            probe_interval=0.1,
            metrics_interval=0.2,
            health_interval=None,
            gpu_interval=0.5 if nvml is not None else None,
            gpu_probe=(lambda: probe_gpus(nvml=nvml, env={})) if nvml is not None else None,
            stop_grace=5.0,
            startup_timeout=30.0,
        )

    return build


async def wait_for(pilot, predicate, timeout: float = 30.0, why=None) -> None:  # type: ignore[no-untyped-def]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        assert loop.time() < deadline, f"timed out{': ' + why() if why else ''}"
        await pilot.pause(0.1)


def toasts(app: SglaunchApp) -> str:
    """What the app told the user: a timed-out wait says it, so a failure names its cause."""
    return " | ".join(told(app))


async def launch(app: SglaunchApp, pilot) -> MonitorScreen:  # type: ignore[no-untyped-def]
    # the model loads in a worker that starts after the first frame: wait for it, not for
    # whichever workers happen to exist yet
    await wait_for(pilot, lambda: app.session.model is not None)
    await app.workers.wait_for_complete()
    await pilot.pause()
    await pilot.press("ctrl+l")
    await pilot.pause()
    if isinstance(app.screen, ConfirmScreen):  # warnings ask first (the memory plan's among them)
        await pilot.press("y")
        await pilot.pause()
    screen = app.screen
    assert isinstance(screen, MonitorScreen)
    return screen


async def test_full_start_then_stop() -> None:
    port = free_tcp_port()
    app = make_app(
        nvml=EIGHT_H100,
        model="example:llama-3.1-8b",
        argv=["--port", str(port), "--enable-metrics"],
        server_factory=factory("ok"),
    )
    async with app.run_test(size=(160, 50)) as pilot:
        screen = await launch(app, pilot)
        await wait_for(pilot, lambda: screen.state.status is Status.READY)
        await pilot.pause(0.5)
        # every phase of the timeline is done, with what it did
        for row in screen.query(PhaseRow):
            assert plain(row.query_one(".phase-label")).startswith("●"), row.phase
        assert "tokens" in plain(screen.query_one("#phase-kv_cache").query_one(".phase-detail"))
        assert "KV tokens" in plain(screen.query_one("#summary"))
        assert "ready at http://127.0.0.1:" in plain(screen.query_one("#status-line"))
        # the log view follows the server's output and stays bounded
        await pilot.pause(0.5)
        log = screen.query_one("#log")
        assert log.line_count > 10
        assert any("fired up and ready to roll" in line for line in log.lines)
        pids = screen.monitor.tree_pids()
        assert pids
        await pilot.press("s")
        await wait_for(pilot, lambda: screen.state.status is Status.STOPPED)
        assert wait_gone(pids) == set()
        assert "stopped" in plain(screen.query_one("#status-line"))


def graph_oom_app() -> SglaunchApp:
    """A launch whose server runs out of memory while capturing CUDA graphs."""
    return make_app(
        nvml=EIGHT_H100,
        model="example:llama-3.1-8b",
        argv=["--port", str(free_tcp_port()), "--mem-fraction-static", "0.9"],
        server_factory=factory("oom_cuda_graph"),
    )


async def test_cuda_graph_oom_is_explained() -> None:
    app = graph_oom_app()
    async with app.run_test(size=(160, 50)) as pilot:
        screen = await launch(app, pilot)
        # the memory plan saw it coming: 0.9 leaves less than sglang's own graph reserve
        assert "memory-slack-below-reserve" in [f.code for f in app.last_findings]
        await wait_for(pilot, lambda: screen.state.status is Status.FAILED)
        await pilot.pause(0.3)
        assert screen.state.diagnosis is not None
        failure = plain(screen.query_one("#failure"))
        assert screen.query_one("#failure").has_class("-shown")
        assert "CUDA graph" in failure or "cuda graph" in failure.lower()
        # the fix goes the right way: less static memory for a capture OOM
        fixes = screen.state.diagnosis.fixes
        lowered = [f for f in fixes if "mem_fraction_static" in f.set]
        assert lowered and lowered[0].set["mem_fraction_static"] < 0.9
        row = screen.query_one("#phase-cuda_graph", PhaseRow)
        assert plain(row.query_one(".phase-label")).startswith("✗")
        assert "failed to start" in plain(screen.query_one("#status-line"))
        assert wait_gone(screen.monitor.tree_pids()) == set()
        # x: the first fix lands in the editor's flags, ready to launch again
        first = fixes[0]
        await pilot.press("x")
        await pilot.pause()
        assert app.screen is not screen
        for dest, value in first.set.items():
            assert app.session.flags[dest] == value


async def test_editor_keys_do_nothing_over_the_monitor() -> None:
    app = graph_oom_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await launch(app, pilot)
        await wait_for(pilot, lambda: screen.state.status is Status.FAILED)
        await pilot.pause(0.3)
        # narrow: the failure is on screen, the side panels step aside
        assert screen.query_one("#failure").region.height > 5
        assert not screen.query_one("#monitor-right").display or (
            screen.query_one("#monitor-right").region.width == 0
        )
        await pilot.press("ctrl+o")  # the editor's "open model" must not pop up here
        await pilot.pause()
        assert app.screen is screen


async def test_restart_keeps_the_profile_secrets_and_takes_the_edits(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from sglaunch.profiles import Profile, ProfileStore

    monkeypatch.setenv("MY_KEY", "sk-restart-secret")
    ProfileStore(tmp_path).save(
        Profile(
            name="keyed",
            model="example:llama-3.1-8b",
            flags={"port": free_tcp_port()},
            secrets={"api_key": "MY_KEY"},
        )
    )
    app = make_app(
        nvml=EIGHT_H100,
        model=None,
        profile="keyed",
        profile_dir=tmp_path,
        server_factory=factory("ok"),
    )
    async with app.run_test(size=(160, 50)) as pilot:
        screen = await launch(app, pilot)
        await wait_for(pilot, lambda: screen.state.status is Status.READY)
        assert "sk-restart-secret" in screen.monitor.spec.argv
        app.session.set_flag("max_running_requests", 8)  # an edit made in the editor meanwhile
        first = screen.monitor
        await pilot.press("r")
        await wait_for(pilot, lambda: screen.monitor is not first)
        await wait_for(pilot, lambda: screen.state.status is Status.READY)
        argv = screen.monitor.spec.argv
        assert "sk-restart-secret" in argv  # the key survives the restart
        assert "--max-running-requests" in argv
        await pilot.press("s")
        await wait_for(pilot, lambda: screen.state.status is Status.STOPPED)


async def test_a_second_restart_while_one_runs_starts_no_second_server() -> None:
    import threading

    built: list[Monitor] = []
    make = factory("ok")
    # the restart is held until every press has been handled: on a loaded machine the
    # presses could otherwise land after it ended, and then a second restart is right
    release = threading.Event()

    def counting(spec):  # type: ignore[no-untyped-def]
        if built:
            release.wait(60)
        built.append(make(spec))
        return built[-1]

    app = make_app(nvml=EIGHT_H100, server_factory=counting)
    async with app.run_test(size=(160, 50)) as pilot:
        screen = await launch(app, pilot)
        await wait_for(pilot, lambda: screen.state.status is Status.READY)
        await pilot.press("r", "r", "r")  # impatient: one restart, the others are refused
        await pilot.pause()
        try:
            assert app.server.busy.is_set() and len(built) == 1
            assert toasts(app).count("already restarting") == 2, toasts(app)
        finally:
            release.set()
        # a loaded machine stops the first server slowly (SIGTERM, 5 s grace, SIGKILL)
        await wait_for(
            pilot,
            lambda: len(built) == 2 and screen.monitor is built[1],
            timeout=90.0,
            why=lambda: f"{len(built)} built, busy={app.server.busy.is_set()}, told: {toasts(app)}",
        )
        await wait_for(pilot, lambda: screen.state.status is Status.READY)
        await pilot.pause(0.5)
        assert len(built) == 2 and not app.server.busy.is_set()
        assert not built[0].running()
        await pilot.press("s")
        await wait_for(pilot, lambda: screen.state.status is Status.STOPPED)
    for monitor in built:
        assert not monitor.running()
