"""`sglaunch attach`: watch a detached server without owning it — as JSON lines,
and in the TUI's monitor — and nothing is stopped by leaving."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sglaunch.runtime.attach_target import resolve_attach_target
from sglaunch.runtime.state import Status
from sglaunch.runtime.watch import Watcher
from tests.process.runs.support import detach, listed, runs_cli
from tests.support.processes import tree_of, wait_for, wait_gone


def attach_json(home: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "sglaunch", "attach", *args, "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "SGLAUNCH_HOME": str(home)},
    )


def read_events(proc: subprocess.Popen[str], until: str, timeout: float = 30) -> list[dict]:
    assert proc.stdout is not None
    events: list[dict] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        events.append(json.loads(line))
        if events[-1]["event"] == until:
            return events
    raise AssertionError(f"no {until} event in {[e['event'] for e in events]}")


def test_detach_list_attach_json_then_stop(home: Path, wrapper: Path) -> None:
    pid, run, tree = detach(home, wrapper, "sala")
    assert listed(home)[0]["state"] == "ready"
    proc = attach_json(home, run[:12])
    try:
        events = read_events(proc, "stats")  # load figures from the running server
        kinds = [e["event"] for e in events]
        assert kinds[0] == "spawned" and events[0]["attached"] is True
        assert "ready" in kinds  # replayed from the log, or seen over HTTP
        assert events[-1]["source"] in ("metrics", "loads", "log")
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 130
        assert json.loads(out.splitlines()[-1])["event"] == "detached"
        # leaving the watch left the server running, its whole tree
        assert tree_of(pid) == tree  # every process of it still there
    finally:
        if proc.poll() is None:
            proc.kill()
    stopped = runs_cli(home, "stop", run, "--grace", "10")
    assert stopped.returncode == 0, stopped.stderr
    assert wait_gone(tree) == set()


def test_a_watched_server_killed_from_outside_ends_the_watch(home: Path, wrapper: Path) -> None:
    pid, run, tree = detach(home, wrapper, "sala")
    target = resolve_attach_target(run=run, root=home / "data" / "runs")
    watcher = Watcher(target, gpu_interval=None, liveness_interval=0.2)
    watcher.start()
    try:
        assert wait_for(lambda: watcher.snapshot().status is Status.READY, 20)
        os.killpg(os.getpgid(pid), signal.SIGKILL)
        assert watcher.wait(60)
        state = watcher.snapshot()
        assert state.status is Status.DIED and state.diagnosis is not None
        # not its parent, nobody recorded the end: the exit status is unknown, not made up
        assert state.returncode is None and "SIGHUP" not in str(state.diagnosis)
    finally:
        watcher.stop()
        wait_gone(tree)
    assert listed(home)[0]["state"] == "crashed"


@pytest.mark.parametrize(
    "liveness", [0.2, 3.0], ids=["liveness-first", "probe-first"]
)  # probe-first: the drain's 503 reaches the poller long before the record is read again
def test_a_watched_server_stopped_with_runs_stop_is_stopped_not_crashed(
    home: Path, wrapper: Path, liveness: float
) -> None:
    _, run, tree = detach(home, wrapper, "sala")
    target = resolve_attach_target(run=run, root=home / "data" / "runs")
    watcher = Watcher(
        target,
        gpu_interval=None,
        liveness_interval=liveness,
        probe_interval=0.05,
        metrics_interval=0.05,
    )
    watcher.start()
    try:
        assert wait_for(lambda: watcher.snapshot().status is Status.READY, 20)
        stopped = runs_cli(home, "stop", run, "--grace", "10")
        assert stopped.returncode == 0, stopped.stderr
        assert watcher.wait(60)
        state = watcher.snapshot()
        assert state.status is Status.STOPPED and state.diagnosis is None
    finally:
        watcher.stop()
        wait_gone(tree)


async def test_the_tui_attaches_and_leaving_keeps_the_server(home: Path, wrapper: Path) -> None:
    from sglaunch.tui.screens.monitor import MonitorScreen
    from tests.support.tui import make_app, wait_until

    _, run, tree = detach(home, wrapper, "sala")
    target = resolve_attach_target(run=run, root=home / "data" / "runs")
    app = make_app(model=None)
    app.attach = target
    try:
        async with app.run_test(size=(160, 50)) as pilot:
            await wait_until(
                pilot,
                lambda: (
                    isinstance(app.screen, MonitorScreen)
                    and app.screen.state.status is Status.READY
                ),
                step=0.1,
            )
            assert isinstance(app.screen, MonitorScreen)
            assert app.screen.state.status is Status.READY
            assert not app.screen.check_action("stop", ())  # not this sglaunch's to stop
            assert not app.server.running()  # so quitting asks nothing and stops nothing
            await pilot.press("q")
            await pilot.pause(0.3)
        assert all(os.path.exists(f"/proc/{p}") for p in tree)
    finally:
        runs_cli(home, "stop", run, "--grace", "10")
        wait_gone(tree)


def test_an_unreachable_url_is_one_line(home: Path) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "sglaunch", "attach", "--url", "http://127.0.0.1:9", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "SGLAUNCH_HOME": str(home)},
    )
    assert res.returncode == 2 and res.stdout == ""
    assert len(res.stderr.strip().splitlines()) == 1 and "127.0.0.1:9" in res.stderr


async def test_the_profile_picker_marks_the_profiles_with_a_running_server(
    home: Path, wrapper: Path
) -> None:
    from textual.widgets import OptionList

    from tests.support.tui import make_app

    pid, run, tree = detach(home, wrapper, "sala")
    app = make_app(model=None, profile_dir=home / "config" / "profiles")
    try:
        async with app.run_test(size=(160, 50)) as pilot:
            await pilot.pause(0.5)
            await pilot.press("f2")
            await pilot.pause()
            options = app.screen.query_one("#profile-list", OptionList)
            prompts = [
                str(options.get_option_at_index(i).prompt) for i in range(options.option_count)
            ]
            [sala] = [p for p in prompts if "sala" in p]
            assert "▶ running" in sala and f"pid {pid}" in sala
    finally:
        runs_cli(home, "stop", run, "--grace", "10")
        wait_gone(tree)
