"""The TUI's first frame draws the editor without the rule engine: the rule modules (and the
catalogue and host checks that import them) load right after it, when the launch is first
checked, and the settled screen shows that check's verdict. So do the session, the verdict,
the model's and the GPUs' facts, the memory plan, profiles and releases: the frame draws
none of them."""

from __future__ import annotations

from tests.support.tui import child_report, make_app

# what the first frame does without: each loads after it, where it is first used
LATER = (
    "sglaunch.session",
    "sglaunch.verdict",
    "sglaunch.release",
    "sglaunch.validators.facts",
    "sglaunch.facts.model",
    "sglaunch.facts.gpu",
    "sglaunch.memory.api",
    "sglaunch.profiles",
    "sglaunch.flags.argv",
)
FIRST_FRAME = (
    f"LATER = {LATER!r}\n"
    + r"""
import json, sys
from sglaunch.tui.launch import build_app

app = build_app(gpu="H100x8", with_oracle=False)
at_frame = {}
start = app._start

def first_frame():  # what was loaded and drawn when the frame was marked
    rows = app.screen.query_one("#flag-table").row_count
    at_frame.update(registry="sglaunch.validators.registry" in sys.modules, rows=rows > 500)
    at_frame["later"] = sorted(m for m in LATER if m in sys.modules)
    start()

app._start = first_frame

async def ready(pilot):
    while app.first_frame_at is None:
        await pilot.pause(0.01)
    await app.workers.wait_for_complete()
    await pilot.pause()
    settled = {
        "registry": "sglaunch.validators.registry" in sys.modules,
        "status": app.verdict.status,
    }
    print(json.dumps({"at_frame": at_frame, "settled": settled}), flush=True)
    app.exit()

app.run(headless=True, size=(160, 50), auto_pilot=ready)
"""
)


def test_the_first_frame_shows_every_flag_before_any_rule_loads() -> None:
    seen = child_report(FIRST_FRAME)
    assert seen["at_frame"] == {"registry": False, "rows": True, "later": []}
    assert seen["settled"]["registry"] is True
    assert seen["settled"]["status"]  # the launch was checked once the frame was up


async def test_an_app_checks_its_launch_when_first_asked() -> None:
    # tests and callers that read the session before the app runs get it checked, as before
    app = make_app(gpu_spec="H100x8", argv=["--tp", "2", "--dp-size", "2"])
    assert app.session.flags["tp_size"] == 2
    assert app.verdict.findings == app.tiers.verdict(app.session).findings
    async with app.run_test(size=(160, 50)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert len(app.session.gpu.devices) == 8  # the preset chosen before the app ran holds


def test_styles_keyed_by_a_later_modules_values_cover_each_of_them() -> None:
    from sglaunch.memory.api import REJECTED
    from sglaunch.tui.screens.main import TONE_STYLE
    from sglaunch.tui.widgets.memory import VERDICT_STYLE
    from sglaunch.verdict import Tone

    assert set(TONE_STYLE) == {str(tone) for tone in Tone}
    assert REJECTED in VERDICT_STYLE
