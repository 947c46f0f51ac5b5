"""Profiles in the TUI: save, save as, load, delete and diff from the picker; title and unsaved changes."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable, Input, OptionList

from sglaunch.profiles import Profile, ProfileStore
from sglaunch.tui.app import SglaunchApp
from sglaunch.tui.screens.dialogs import ConfirmScreen
from sglaunch.tui.screens.profiles import ProfilesScreen
from sglaunch.tui.widgets.flag_editor import FlagEditor
from tests.support.tui import make_app, plain, wait_until


async def settle(app: SglaunchApp, pilot) -> None:  # type: ignore[no-untyped-def]
    await app.workers.wait_for_complete()
    await pilot.pause()


async def test_save_as_then_title_and_dirty_marker(tmp_path: Path) -> None:
    app = make_app(gpu_spec="H100x8", argv=["--tp", "2"], profile_dir=tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        assert "unsaved launch" in app.title
        await pilot.press("ctrl+s")  # no profile yet: the picker opens for a name
        await pilot.pause()
        assert isinstance(app.screen, ProfilesScreen)
        app.screen.query_one("#profile-name", Input).value = "sala-tp2"
        await pilot.click("#profile-save-as")
        await pilot.pause()
        assert app.title == "sglaunch · sala-tp2"
        saved = ProfileStore(tmp_path).load("sala-tp2")
        assert saved.model == "example:minicpm-sala"
        assert saved.flags == {"tp_size": 2}
        assert saved.gpus.preset == "H100x8"
        assert saved.validated is not None and saved.validated.gpu_count == 8
        # an edit marks it unsaved; ctrl+s saves it again under the same name
        app.main.query_one(FlagEditor).post_message(FlagEditor.Edited("tp_size", 4))
        await pilot.pause()
        assert app.title.endswith("*")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert not app.title.endswith("*")
        assert ProfileStore(tmp_path).load("sala-tp2").flags["tp_size"] == 4


async def test_load_from_the_picker_and_diff(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path)
    store.save(
        Profile(
            name="llama-tp4",
            model="example:llama-3.1-8b",
            flags={"tp_size": 4, "enable_metrics": True},
        )
    )
    app = make_app(gpu_spec="H100x8", argv=["--tp", "2"], profile_dir=tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        await pilot.press("f2")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ProfilesScreen)
        options = screen.query_one(OptionList)
        assert await wait_until(pilot, lambda: options.option_count > 0), "no profile listed"
        options.highlighted = 0
        await pilot.press("ctrl+f")  # diff with the launch being edited
        table = screen.query_one("#profile-diff-table", DataTable)
        # a loaded machine delivers the key a frame or more later: wait for the table (bounded)
        said = screen.query_one("#profile-error")
        assert await wait_until(pilot, lambda: table.row_count > 0), (
            f"the diff never showed; the picker said {plain(said)!r}"
        )
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert ["--tp-size", "4", "2"] in rows
        assert any(r[0] == "model" for r in rows)
        screen.query_one(OptionList).focus()
        await pilot.press("enter")
        await settle(app, pilot)
        await pilot.pause()
        assert app.session.profile_name == "llama-tp4"
        assert app.session.model_source == "example:llama-3.1-8b"
        assert app.session.flags == {"tp_size": 4, "enable_metrics": True}
        assert (
            app.session.model is not None and app.session.model.architecture == "LlamaForCausalLM"
        )
        assert app.title == "sglaunch · llama-tp4"


async def test_delete_from_the_picker(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path)
    store.save(Profile(name="old", model="example:llama-3.1-8b"))
    app = make_app(gpu_spec="H100x8", profile_dir=tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        await pilot.press("f2")
        await pilot.pause()
        app.screen.query_one(OptionList).highlighted = 0
        await pilot.press("ctrl+d")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await pilot.pause()
        assert not store.exists("old")
        assert store.backup_path("old").exists()


async def test_quitting_with_unsaved_changes_asks(tmp_path: Path) -> None:
    ProfileStore(tmp_path).save(
        Profile(name="p", model="example:minicpm-sala", flags={"tp_size": 2})
    )
    app = make_app(gpu_spec="H100x8", model=None, profile="p", profile_dir=tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        assert app.session.profile_name == "p" and not app.dirty
        app.main.query_one(FlagEditor).post_message(FlagEditor.Edited("tp_size", 8))
        await pilot.pause()
        assert app.dirty
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("escape")  # stay
        await pilot.pause()
        assert app.is_running
        await pilot.press("ctrl+q")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
    assert app.return_code == 0 or app.return_code is None


async def test_a_corrupt_profile_is_listed_not_loaded(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text("flags = [unterminated\n")
    app = make_app(gpu_spec="H100x8", profile_dir=tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        await pilot.press("f2")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ProfilesScreen)
        screen.query_one(OptionList).highlighted = 0
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ProfilesScreen)  # still open, with the reason
        assert (tmp_path / "bad.toml").read_text() == "flags = [unterminated\n"  # never overwritten


async def test_secrets_are_saved_as_references(tmp_path: Path) -> None:
    app = make_app(gpu_spec="H100x8", argv=["--api-key", "sk-VERY-SECRET"], profile_dir=tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        assert app.save_profile("with-key")
    saved = ProfileStore(tmp_path).load("with-key")
    assert "api_key" not in saved.flags and saved.secrets == {"api_key": "SGLAUNCH_API_KEY"}
    for f in tmp_path.rglob("*"):
        if f.is_file():
            assert "sk-VERY-SECRET" not in f.read_text(errors="ignore")


async def test_quitting_an_edited_unsaved_launch_asks_but_an_untouched_one_does_not(
    tmp_path: Path,
) -> None:
    app = make_app(gpu_spec="H100x8", profile_dir=tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        assert app.session.profile_name is None and not app.dirty
        app.main.query_one(FlagEditor).post_message(FlagEditor.Edited("tp_size", 2))
        await pilot.pause()
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert "not saved as a profile" in app.screen.body
        await pilot.press("escape")
        await pilot.pause()
        app.main.query_one(FlagEditor).post_message(FlagEditor.Edited("tp_size", None))
        await pilot.pause()
        assert not app.dirty  # back to where it started: nothing to lose
        await pilot.press("ctrl+q")
        await pilot.pause()
    assert not app.is_running


async def test_model_flag_beats_the_profile_model(tmp_path: Path) -> None:
    ProfileStore(tmp_path).save(
        Profile(name="p", model="example:minicpm-sala", flags={"tp_size": 2})
    )
    app = make_app(
        gpu_spec="H100x8", model="example:llama-3.1-8b", profile="p", profile_dir=tmp_path
    )
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        assert app.session.profile_name == "p"
        assert app.session.flags["tp_size"] == 2
        assert app.session.model is not None
        assert app.session.model.architecture == "LlamaForCausalLM"
        assert app.dirty  # a different model than the profile holds


async def test_gpu_flag_beats_the_profile_gpus(tmp_path: Path) -> None:
    from sglaunch.profiles import GpuSelection

    ProfileStore(tmp_path).save(
        Profile(name="p", model="example:minicpm-sala", gpus=GpuSelection(preset="H100x8"))
    )
    app = make_app(gpu_spec="B200x1", model=None, profile="p", profile_dir=tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        assert app.session.profile_name == "p"
        assert app.session.gpu_choice.preset == "B200x1"
        assert app.session.gpu.count == 1 and "B200" in app.session.gpu.describe()
        assert "planning B200x1" in plain(app.screen.query_one("#gpu-panel"))
        assert app.dirty  # other GPUs than the profile holds


def test_build_app_opens_the_profile_named_on_the_command_line() -> None:
    from sglaunch.tui.launch import build_app

    app = build_app(profile="p", with_oracle=False)
    assert app.initial_profile == "p"
    assert app.initial_model is None  # the profile's model, not the bundled example


async def test_ctrl_s_types_straight_into_a_suggested_name_and_checks_it_in_place(
    tmp_path: Path,
) -> None:
    ProfileStore(tmp_path).save(Profile(name="taken", model="example:llama-3.1-8b"))
    app = make_app(gpu_spec="H100x8", argv=["--tp", "2"], profile_dir=tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+s")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ProfilesScreen)
        field = screen.query_one("#profile-name", Input)
        assert app.focused is field
        assert field.value == "minicpm-sala"  # suggested from the model
        # a bad name, then a taken one: the dialog stays open and says why
        field.value = ""
        await pilot.press(*"bad name", "enter")
        await pilot.pause()
        assert app.screen is screen
        assert "invalid profile name" in str(screen.query_one("#profile-error").render())
        field.value = ""
        await pilot.press(*"taken", "enter")
        await pilot.pause()
        assert app.screen is screen
        assert "exists" in str(screen.query_one("#profile-error").render())
        field.value = ""
        await pilot.press(*"sala-tp2", "enter")
        await pilot.pause()
        assert app.session.profile_name == "sala-tp2"
        assert ProfileStore(tmp_path).load("sala-tp2").flags == {"tp_size": 2}


async def test_a_profile_planned_for_b200_stays_b200_on_a_machine_with_h100s(
    tmp_path: Path,
) -> None:
    from sglaunch.profiles import GpuSelection
    from tests.fakes.nvml import H100, FakeNvml, gpu

    ProfileStore(tmp_path).save(
        Profile(name="b", model="example:minicpm-sala", gpus=GpuSelection(preset="B200x8"))
    )
    app = make_app(
        nvml=FakeNvml([gpu(H100, 0), gpu(H100, 1)]), model=None, profile="b", profile_dir=tmp_path
    )
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        assert (
            app.session.probed is not None and app.session.probed.count == 2
        )  # found, and offered
        assert app.session.gpu.is_blackwell and app.session.gpu.count == 8
        assert not app.dirty
