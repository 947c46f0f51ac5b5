"""The key screens, set up once: the snapshot tests and scripts/make_screenshots.py share them."""

from __future__ import annotations

from textual.widgets import OptionList, TextArea

from sglaunch.tui.app import SglaunchApp

# a DeepSeek-style line on the MiniCPM SALA example: the error everyone meets first
DP_LINE = ["--tp", "4", "--enable-dp-attention", "--dp-size", "4"]
PASTED = (
    "python3 -m sglang.launch_server --model-path openbmb/MiniCPM4-8B \\\n"
    "    --tp 4 --enable-dp-attention --dp-size 4 --trust-remote-code"
)


async def settle(pilot) -> None:  # type: ignore[no-untyped-def]
    """GPUs probed, model loaded, sglang's (fake) verdict in."""
    from tests.tui.conftest import settle_app

    app: SglaunchApp = pilot.app
    await pilot.pause(0.2)
    await settle_app(app, pilot)


async def open_card(pilot) -> None:  # type: ignore[no-untyped-def]
    await settle(pilot)
    app: SglaunchApp = pilot.app
    app.open_card(next(f for f in app.last_findings if f.code == "minicpm-dp-attention"))
    await pilot.pause()


async def paste(pilot) -> None:  # type: ignore[no-untyped-def]
    await settle(pilot)
    await pilot.press("ctrl+k")
    await pilot.pause()
    pilot.app.screen.query_one(TextArea).text = PASTED
    await pilot.pause()


async def focus_findings(pilot) -> None:  # type: ignore[no-untyped-def]
    await settle(pilot)
    pilot.app.screen.query_one("#finding-list", OptionList).focus()
    await pilot.pause()
