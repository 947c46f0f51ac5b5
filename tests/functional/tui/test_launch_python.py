"""The TUI says which Python will launch before it launches, and never a bare "ready to
launch" while that Python is oracle setup's CPU-only sglang or has none."""

from __future__ import annotations

from pathlib import Path

import pytest

from sglaunch.flags.schema import bundled_schema
from sglaunch.release import FlagFacts, choose
from sglaunch.tui.screens.dialogs import ConfirmScreen
from tests.support.tui import make_app, settle_app, wait_until


@pytest.fixture
def managed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    home = tmp_path / "home"
    monkeypatch.setenv("SGLAUNCH_HOME", str(home))
    python = home / "data" / "sglang-cpu-0.5.23" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    return str(python)


async def test_the_title_and_the_launch_dialog_name_the_python_that_launches(
    managed: str,
) -> None:
    installed = FlagFacts(bundled_schema(), choose("0.5.23"), "flags read from sglang 0.5.23")
    app = make_app(model="example:llama-3.1-8b", flag_facts=lambda named: installed)
    app.session.default_python = managed  # what `oracle setup` made: the oracle's interpreter
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        assert await wait_until(pilot, lambda: app.session.model is not None)
        await settle_app(app, pilot)
        assert f"launch with {managed} (sglang 0.5.23)" in app.sub_title
        assert "ready to launch" not in app.sub_title
        assert "CPU-only" in app.sub_title
        assert app.session.launch_spec({}).python == managed
        await pilot.press("ctrl+l")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert app.screen.body.startswith(f"launch with {managed} (sglang 0.5.23)")
        assert "made for checks, not for serving" in app.screen.body
        await pilot.press("escape")
