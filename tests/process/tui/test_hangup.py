"""The terminal going away while the TUI runs (a closed window, a dropped SSH session).

Found in a trial: after `tmux kill-server` the TUI got no SIGHUP and spun a core for an hour
(a hung-up terminal reads as end-of-file at once, forever). It must end instead, and stop
the server it owns. The first two tests run the real program on a pseudo-terminal.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import sys
import time
from pathlib import Path

import pytest

from sglaunch.profiles import ProfileStore
from sglaunch.runtime import Status
from tests.process.tui.test_monitor_screen import EIGHT_H100, factory, launch, wait_for

SGLAUNCH = Path(sys.executable).with_name("sglaunch")


def run_then_hang_up(home: Path, *, block_sighup: bool) -> int | None:
    """Start the TUI on a pty, wait for its first screen, close the terminal: its exit code,
    or None when it was still running 20 s later (then it is killed)."""
    pid, master = pty.fork()
    if pid == 0:  # the child: the TUI, alone on its terminal, no sglang to start
        env = {k: v for k, v in os.environ.items() if not k.startswith("SGLAUNCH_SGLANG")}
        env.update(SGLAUNCH_HOME=str(home), TERM="xterm-256color", COLUMNS="120", LINES="40")
        if block_sighup:  # as when the kernel signals only a shell above it (tmux, make)
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGHUP])
        os.execve(str(SGLAUNCH), [str(SGLAUNCH)], env)
    seen = b""
    deadline = time.monotonic() + 60
    try:
        while b"findings" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                seen += os.read(master, 1 << 16)
        assert b"findings" in seen, seen[-500:]
    finally:
        os.close(master)  # the terminal goes away
    end = time.monotonic() + 20
    while time.monotonic() < end:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


@pytest.mark.parametrize("block_sighup", [False, True], ids=["sighup", "no-sighup"])
def test_a_closed_terminal_ends_the_tui(tmp_path: Path, block_sighup: bool) -> None:
    code = run_then_hang_up(tmp_path / "home", block_sighup=block_sighup)
    assert code == 128 + signal.SIGHUP


async def test_a_hang_up_stops_the_server_the_tui_owns(monkeypatch: pytest.MonkeyPatch) -> None:
    from sglaunch.tui import hangup
    from tests.support.tui import make_app

    ended: list[int] = []
    monkeypatch.setattr(hangup, "exit_now", ended.append)
    built = []

    def counting(spec):  # type: ignore[no-untyped-def]
        built.append(factory("ok")(spec))
        return built[-1]

    app = make_app(nvml=EIGHT_H100, server_factory=counting)
    async with app.run_test(size=(160, 50)) as pilot:
        screen = await launch(app, pilot)
        await wait_for(pilot, lambda: screen.state.status is Status.READY)
        app.hung_up()
        app.hung_up()  # a second signal changes nothing
        await wait_for(pilot, lambda: bool(ended))
        assert ended == [128 + signal.SIGHUP]
        assert len(built) == 1 and not built[0].running()
    assert ProfileStore().names() == []  # nothing was edited: nothing kept


async def test_a_hang_up_keeps_unsaved_edits_and_the_next_start_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sglaunch.tui import hangup
    from sglaunch.tui.widgets.flag_editor import FlagEditor
    from sglaunch.tui.widgets.row_list import RowList
    from tests.support.tui import make_app, settle_app, told, wait_until

    ended: list[int] = []
    monkeypatch.setattr(hangup, "exit_now", ended.append)
    app = make_app(gpu_spec="H100x8")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        editor = app.main.query_one(FlagEditor)
        editor.select("enable_metrics")
        await pilot.pause()
        editor.query_one(RowList).focus()
        await pilot.press("space")
        await pilot.pause()
        assert app.session.flags.get("enable_metrics") is True and app.dirty
        app.hung_up()
        assert await wait_until(pilot, lambda: bool(ended))
    [name] = ProfileStore().names()
    assert name.startswith("unsaved-")
    assert ProfileStore().load(name).flags["enable_metrics"] is True

    again = make_app(gpu_spec="H100x8")
    async with again.run_test(size=(160, 50)) as pilot:
        await settle_app(again, pilot)
        assert await wait_until(pilot, lambda: any(name in t for t in told(again)))
    assert [t for t in told(again) if name in t] == [
        f"kept when the terminal closed with unsaved edits: profile {name} (F2 opens the profiles)"
    ]
