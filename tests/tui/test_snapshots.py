"""Snapshots of the key screens (pytest-textual-snapshot). Read the report before --snapshot-update."""

from __future__ import annotations

from textual.widgets import OptionList, TextArea

from sglaunch.tui.app import SglaunchApp
from tests.fakes.oracle import FakeOracle
from tests.tui.conftest import make_app

DP_LINE = ["--tp", "4", "--enable-dp-attention", "--dp-size", "4"]


async def _settle(pilot) -> None:  # type: ignore[no-untyped-def]
    app: SglaunchApp = pilot.app
    await app.workers.wait_for_complete()
    await pilot.pause(0.2)
    await app.workers.wait_for_complete()
    await pilot.pause()


def test_main_screen(snap_compare) -> None:  # type: ignore[no-untyped-def]
    app = make_app(oracle=FakeOracle(), gpu_spec="H100x8", argv=DP_LINE)
    assert snap_compare(app, terminal_size=(160, 50), run_before=_settle)


def test_card(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def open_card(pilot) -> None:  # type: ignore[no-untyped-def]
        await _settle(pilot)
        app: SglaunchApp = pilot.app
        finding = next(f for f in app.last_findings if f.code == "minicpm-dp-attention")
        app.open_card(finding)
        await pilot.pause()

    app = make_app(oracle=FakeOracle(), gpu_spec="H100x8", argv=DP_LINE)
    assert snap_compare(app, terminal_size=(160, 50), run_before=open_card)


def test_paste_modal(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def paste(pilot) -> None:  # type: ignore[no-untyped-def]
        await _settle(pilot)
        await pilot.press("ctrl+k")
        await pilot.pause()
        pilot.app.screen.query_one(TextArea).text = (
            "python3 -m sglang.launch_server --model-path openbmb/MiniCPM4-8B \\\n"
            "    --tp 4 --enable-dp-attention --dp-size 4 --trust-remote-code"
        )
        await pilot.pause()

    app = make_app(oracle=FakeOracle(), gpu_spec="H100x8")
    assert snap_compare(app, terminal_size=(120, 36), run_before=paste)


def test_narrow_layout(snap_compare) -> None:  # type: ignore[no-untyped-def]
    async def focus_findings(pilot) -> None:  # type: ignore[no-untyped-def]
        await _settle(pilot)
        pilot.app.screen.query_one("#finding-list", OptionList).focus()
        await pilot.pause()

    app = make_app(oracle=FakeOracle(), gpu_spec="H100x8", argv=DP_LINE)
    assert snap_compare(app, terminal_size=(80, 24), run_before=focus_findings)
