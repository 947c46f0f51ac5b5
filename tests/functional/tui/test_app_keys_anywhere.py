"""The editor's keys act whatever has the focus: at start, on every control, on none, and
while the start-up workers still run."""

from __future__ import annotations

from sglaunch.tui.app import SglaunchApp
from tests.support.tui import make_app, settle_app, told

# key -> the App action it must reach
APP_KEYS = {
    "ctrl+l": "launch",
    "ctrl+s": "save_profile",
    "ctrl+k": "paste",
    "ctrl+g": "pick_gpus",
    "ctrl+o": "open_model",
    "ctrl+r": "resolved",
    "f2": "profiles",
}


def record_actions(app: SglaunchApp) -> list[str]:
    """Each action records that it ran and opens nothing, so focus stays where it was."""
    ran: list[str] = []
    for name in APP_KEYS.values():
        setattr(app, f"action_{name}", lambda *_a, _n=name, **_k: ran.append(_n))
    return ran


async def press_each(app: SglaunchApp, pilot, ran: list[str], where: str) -> list[str]:  # type: ignore[no-untyped-def]
    missed = []
    for key, action in APP_KEYS.items():
        ran.clear()
        await pilot.press(key)
        await pilot.pause()
        if ran != [action]:
            missed.append(f"{key} with focus on {where}: ran {ran}")
    return missed


async def test_app_keys_act_right_after_start_before_the_workers_end() -> None:
    app = make_app()
    ran = record_actions(app)
    async with app.run_test(size=(160, 50)) as pilot:
        # the first frame, with whatever took the focus then; the probe and the model
        # load may still be running
        where = repr(app.focused)
        assert await press_each(app, pilot, ran, where) == []


async def test_app_keys_act_with_focus_on_every_control_and_on_none() -> None:
    app = make_app()
    ran = record_actions(app)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        missed = await press_each(app, pilot, ran, f"{app.focused!r} (at start)")
        controls = [w for w in app.screen.query("*") if w.can_focus]
        assert len(controls) >= 5  # search, table, the value controls, findings, launch
        for control in controls:
            app.screen.set_focus(control)
            await pilot.pause()
            missed += await press_each(app, pilot, ran, repr(app.focused))
        app.screen.set_focus(None)
        await pilot.pause()
        missed += await press_each(app, pilot, ran, "nothing")
        assert missed == []


async def test_ctrl_l_opens_the_launch_dialog_from_a_profile_opened_at_start(
    tmp_path: object,
) -> None:
    from pathlib import Path

    from sglaunch.profiles import Profile, ProfileStore
    from sglaunch.tui.screens.dialogs import ConfirmScreen
    from sglaunch.tui.screens.main import blocked_reason

    assert isinstance(tmp_path, Path)
    ProfileStore(tmp_path).save(Profile(name="t1", model="example:minicpm-sala"))
    app = make_app(model=None, profile="t1", profile_dir=tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        blocked = blocked_reason(app.session, app.verdict)
        await pilot.press("ctrl+l")
        await pilot.pause()
        # the launch asks first (planning mode) or says why it cannot start
        if blocked is None:
            assert isinstance(app.screen, ConfirmScreen)
        else:
            assert blocked in told(app)
