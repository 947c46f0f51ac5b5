"""The first frame draws the editor without its controls: the focused flag's switch, choice
list, text field and Reset button come right after it, and the Launch button with the first
verdict. Their lines are kept for them, so nothing moves when they come."""

from __future__ import annotations

from typing import Any

from textual.widgets import Button, Input, Select, Switch

from sglaunch.tui.widgets.findings import FindingsPanel
from sglaunch.tui.widgets.flag_editor import FlagDetail
from tests.fakes.oracle import FakeOracle
from tests.support.scenes import DP_LINE
from tests.support.tui import make_app, plain, settle_app

CONTROLS = (Switch, Select, Input, Button)


def _controls(app: Any) -> list[str]:
    detail = app.main.query_one(FlagDetail)
    findings = app.main.query_one(FindingsPanel)
    return [
        type(w).__name__
        for w in (*detail.query("*"), *findings.query("*"))
        if isinstance(w, CONTROLS)
    ]


def _rows(app: Any) -> dict[str, tuple[int, int]]:
    return {
        name: (app.main.query_one(name).region.y, app.main.query_one(name).region.height)
        for name in ("#flag-title", "#flag-help", "#flag-control")
    }


async def test_controls_come_after_the_first_frame_into_the_lines_kept_for_them() -> None:
    at_first_frame: dict[str, Any] = {}
    app = make_app(oracle=FakeOracle(), gpu_spec="H100x8", argv=DP_LINE)

    def first_frame() -> None:
        at_first_frame["controls"] = _controls(app)
        at_first_frame["rows"] = _rows(app)
        at_first_frame["launch-row"] = app.main.query_one("#launch-row").region.height

    app._on_first_frame = first_frame  # the launcher's hook: called at the first frame
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        assert at_first_frame["controls"] == [], "no control is drawn in the first frame"
        assert sorted(_controls(app)) == ["Button", "Button", "Input", "Select", "Switch"]
        assert _rows(app) == at_first_frame["rows"], "the controls came into the kept line"
        assert at_first_frame["rows"]["#flag-control"][1] == 1
        # the findings fill in with the first verdict; the button's line was there before it
        assert at_first_frame["launch-row"] == 1

        # what they show is what the first frame would have: the first flag's switch, the
        # launch button off while the DP-attention error stands, and why
        detail = app.main.query_one(FlagDetail)
        assert detail.spec is not None and detail.spec.is_bool
        assert isinstance(detail.control, Switch) and detail.control.display
        assert detail.control.value is bool(
            app.session.flags.get(detail.spec.dest, detail.spec.default)
        )
        assert app.main.query_one(".flag-reset", Button).disabled
        launch = app.main.query_one("#launch-button", Button)
        assert launch.disabled and "MiniCPM does not support DP attention" in str(launch.tooltip)
        assert "MiniCPM" in plain(app.main.query_one("#launch-reason"))
