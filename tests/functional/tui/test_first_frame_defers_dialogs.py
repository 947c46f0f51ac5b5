"""The TUI's first frame does without the dialogs' module (a screenful of widget classes and
a text area); it loads when a dialog first opens, and the dialog opens as before."""

from __future__ import annotations

import sys

from textual.screen import ModalScreen

from tests.support.tui import child_report, make_app

DIALOGS = "sglaunch.tui.screens.dialogs"

FIRST_FRAME = r"""
import json, sys
from sglaunch.tui.launch import build_app

app = build_app(gpu="H100x8", with_oracle=False)

async def ready(pilot):
    while app.first_frame_at is None:
        await pilot.pause(0.01)
    print(json.dumps({"dialogs": "sglaunch.tui.screens.dialogs" in sys.modules}), flush=True)
    app.exit()

app.run(headless=True, size=(160, 50), auto_pilot=ready)
"""


def test_the_first_frame_imports_no_dialog() -> None:
    assert child_report(FIRST_FRAME) == {"dialogs": False}


async def test_a_dialog_still_opens_on_its_key() -> None:
    app = make_app(gpu_spec="H100x8")
    async with app.run_test(size=(160, 50)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert isinstance(app.screen, ModalScreen)
        assert type(app.screen).__module__ == DIALOGS
        assert DIALOGS in sys.modules
