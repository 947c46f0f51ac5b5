"""The editor's interactions: keys, focus, the resolved view, 80×24; one Pilot test each."""

from __future__ import annotations

from pathlib import Path

from textual import events
from textual.widgets import Button, Input, OptionList, Switch, TextArea

from sglaunch.profiles import Profile, ProfileStore
from sglaunch.tui.app import SglaunchApp
from sglaunch.tui.screens.card import CardScreen
from sglaunch.tui.screens.dialogs import GpuScreen, PasteScreen, ResolvedScreen
from sglaunch.tui.screens.help import HelpScreen
from sglaunch.tui.screens.profiles import ProfilesScreen
from sglaunch.tui.widgets.findings import FindingsPanel
from sglaunch.tui.widgets.flag_editor import FlagEditor
from sglaunch.tui.widgets.row_list import RowList
from tests.fakes.oracle import FakeOracle
from tests.support.tui import make_app, plain, settle_app, told, wait_until

DP_LINE = ["--tp", "4", "--enable-dp-attention", "--dp-size", "4"]
DP_ERROR = "MiniCPM does not support DP attention"
PASTED = (
    "python3 -m sglang.launch_server --model-path example:minicpm-sala "
    "--tp 4 --enable-dp-attention --dp-size 4"
)


def notes(app: SglaunchApp) -> list[str]:
    return told(app)


async def paste(app: SglaunchApp, pilot, text: str) -> None:  # type: ignore[no-untyped-def]
    await pilot.press("ctrl+k")
    await pilot.pause()
    assert isinstance(app.screen, PasteScreen)
    app.screen.query_one(TextArea).text = text
    await pilot.press("ctrl+s")
    await settle_app(app, pilot)


# 1 -------------------------------------------------------------------------------------


async def test_enter_on_an_on_off_flag_edits_it_and_only_space_toggles() -> None:
    app = make_app(gpu_spec="H100x8")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        editor = app.main.query_one(FlagEditor)
        editor.select("trust_remote_code")
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert "trust_remote_code" not in app.session.flags
        assert isinstance(app.focused, Switch)  # Enter moved to the control, nothing else
        editor.query_one(RowList).focus()
        await pilot.press("space")
        await pilot.pause()
        assert app.session.flags.get("trust_remote_code") is True
        assert any("--trust-remote-code is on" in n for n in notes(app))


async def test_keys_faster_than_the_screen_act_on_the_row_under_the_cursor() -> None:
    # found in a terminal: Down Down Space sent at once (key repeat, a pasted key sequence)
    # turned on --trust-remote-code, the first row, while the cursor sat on --dtype
    app = make_app(gpu_spec="H100x8")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        table = app.main.query_one("#flag-table", RowList)
        assert app.focused is table and table.cursor_key == "trust_remote_code"
        for key in ("down", "down", "space"):
            app.post_message(events.Key(key, " " if key == "space" else None))
        await pilot.pause()
        await pilot.pause()
        assert table.cursor_key == "dtype"
        assert "trust_remote_code" not in app.session.flags
        editor = app.main.query_one(FlagEditor)
        assert editor.current == "dtype"
        # and Space on an on/off flag reached the same way toggles that one
        editor.select("disable_radix_cache", focus=True)
        await pilot.pause()
        for key in ("down", "up", "space"):
            app.post_message(events.Key(key, " " if key == "space" else None))
        await pilot.pause()
        await pilot.pause()
        assert app.session.flags.get("disable_radix_cache") is True
        assert "trust_remote_code" not in app.session.flags


async def test_keys_in_a_search_that_matches_nothing_change_no_flag() -> None:
    app = make_app(gpu_spec="H100x8")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        editor = app.main.query_one(FlagEditor)
        editor.select("trust_remote_code", focus=True)
        await pilot.press("space")  # on, on purpose
        await pilot.pause()
        assert app.session.flags.get("trust_remote_code") is True
        await pilot.press("slash")
        await pilot.press(*"trustx", "enter")  # a typo: no flag matches
        await pilot.pause()
        assert app.main.query_one("#flag-table", RowList).cursor_key is None
        await pilot.press("backspace")  # the natural key for the typo: it must not reset a flag
        await pilot.pause()
        assert dict(app.session.flags) == {"trust_remote_code": True}
        await pilot.press("space")  # nor may Space turn one
        await pilot.pause()
        assert dict(app.session.flags) == {"trust_remote_code": True}


async def test_after_a_paste_the_findings_have_the_focus_so_enter_opens_a_card() -> None:
    app = make_app(oracle=FakeOracle(), gpu_spec="H100x8", model=None)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        await paste(app, pilot, PASTED + " --trust-remote-code")
        assert app.focused is app.main.query_one("#finding-list", OptionList)
        assert any("--trust-remote-code is on" in n for n in notes(app))
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, CardScreen)
        assert app.session.flags.get("trust_remote_code") is True  # untouched by the Enter


async def test_f6_cycles_the_panels_in_a_fixed_order() -> None:
    app = make_app(gpu_spec="H100x8")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        seen = []
        for _ in range(4):
            await pilot.press("f6")
            seen.append(app.focused.id if app.focused else None)
        # from the flag table, where the editor starts
        assert seen == ["finding-list", "flag-search", "flag-table", "finding-list"]
        await pilot.press("shift+f6")
        assert app.focused is not None and app.focused.id == seen[-2]


# 2 -------------------------------------------------------------------------------------


async def test_no_offered_fix_leaves_the_error_it_was_offered_for() -> None:
    app = make_app(gpu_spec="H100x8", argv=DP_LINE)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        labels = [fx.label for f in app.verdict.findings for fx in f.fixes]
        assert not any("--attn-dp-size" in label for label in labels)
        # every fix offered clears its finding
        for finding in app.verdict.findings:
            for fix in finding.fixes:
                probe = make_app(gpu_spec="H100x8", argv=DP_LINE)
                probe.session.request_model("example:minicpm-sala")
                from sglaunch.facts.model import load_model_facts

                probe.session.model_loaded(
                    "example:minicpm-sala", load_model_facts("example:minicpm-sala")
                )
                probe.session.apply_fix(fix)
                codes = {f.code for f in probe.session.report.errors}
                assert finding.code not in codes and DP_ERROR not in {
                    f.message for f in probe.session.report.errors
                }


# 3 -------------------------------------------------------------------------------------


async def test_the_resolved_view_says_sglang_rejects_a_rejected_line() -> None:
    app = make_app(oracle=FakeOracle(), gpu_spec="H100x8", argv=DP_LINE)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(app.screen, ResolvedScreen)
        text = plain(app.screen.query_one("#resolved-verdict"))
        assert "rejects this launch" in text and DP_ERROR in text
        # the built-in tier's overrides are still listed
        assert any(r[0] == "disable_radix_cache" for r in app.screen.rows())


async def test_the_resolved_view_says_why_sglang_is_unavailable() -> None:
    app = make_app(oracle=FakeOracle(available=False, reason="sglang is not installed"))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        await pilot.press("ctrl+r")
        await pilot.pause()
        text = plain(app.screen.query_one("#resolved-verdict"))
        assert "unavailable" in text and "sglang is not installed" in text
        assert "has not answered" not in text


async def test_long_resolved_values_wrap_instead_of_being_cut() -> None:
    from sglaunch.tui.screens.dialogs import ResolvedView

    long_value = "x" * 150 + "END"
    app = make_app(gpu_spec="H100x8")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        view = ResolvedView(
            "(test)", "", "", {"json_model_override_args": (None, long_value)}, frozenset()
        )
        app.push_screen(ResolvedScreen(view))
        await pilot.pause()
        assert "END" in plain(app.screen.query_one("#resolved-table"))


# 4 -------------------------------------------------------------------------------------


async def test_f_on_the_card_applies_the_first_fix() -> None:
    app = make_app(gpu_spec="H100x8", argv=DP_LINE)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        app.open_card(next(f for f in app.verdict.findings if f.message == DP_ERROR))
        await pilot.pause()
        assert "f or 1 applies the first fix" in plain(app.screen.query_one("#card-keys"))
        await pilot.press("f")
        await pilot.pause()
        assert not isinstance(app.screen, CardScreen)
        assert DP_ERROR not in [f.message for f in app.verdict.findings]


# 5 -------------------------------------------------------------------------------------


async def test_sglangs_text_of_a_built_in_error_merges_into_one_finding() -> None:
    sglang_words = (
        "The repository /m contains custom code which must be executed to correctly load "
        "the model. You can inspect the repository content at https://hf.co//m."
    )
    oracle = FakeOracle(error_words={"trust-remote-code": sglang_words})
    app = make_app(oracle=oracle, gpu_spec="H100x8", model="example:minicpm4-8b")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        assert app.verdict.answer is not None and not app.verdict.answer.ok
        errors = app.verdict.errors
        assert [f.code for f in errors].count("trust-remote-code") == 1
        merged = next(f for f in errors if f.code == "trust-remote-code")
        assert merged.source.startswith("sglang") and "sglang's own words" in merged.detail
        panel = app.main.query_one(FindingsPanel)
        assert (
            panel.border_title == f"findings ({len(errors)} error{'s' if len(errors) > 1 else ''})"
        )


# 6 -------------------------------------------------------------------------------------


async def test_the_yaml_preview_shows_the_flags_first() -> None:
    app = make_app(
        gpu_spec="H100x8", argv=["--tp", "2", "--enable-metrics", "--max-running-requests", "8"]
    )
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        await pilot.press("y")
        await pilot.pause()
        shown = plain(app.main.query_one("#command")).splitlines()
        body = [line.strip("│ ") for line in shown if line.strip("│ ╭╰─")]
        assert body[0].startswith("model-path:")
        assert any("tp-size: 2" in line for line in body[:4])
        assert any("max-running-requests: 8" in line for line in body)


# 7 -------------------------------------------------------------------------------------


async def test_at_80x24_the_card_scrolls_without_tabbing_past_its_buttons() -> None:
    app = make_app(gpu_spec="H100x8", argv=DP_LINE)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle_app(app, pilot)
        app.open_card(next(f for f in app.verdict.findings if f.message == DP_ERROR))
        await pilot.pause()
        card = app.screen
        assert isinstance(app.focused, Button)  # the first fix has the focus
        body = card.query_one("#card-body")
        assert body.max_scroll_y > 0
        await pilot.press("pagedown")
        await pilot.pause()
        assert body.scroll_y > 0
        await pilot.press("home")
        await pilot.pause()
        assert body.scroll_y == 0
        await pilot.press("down")
        await pilot.pause()
        assert body.scroll_y == 1


async def test_at_80x24_the_paste_dialog_buttons_are_on_screen() -> None:
    app = make_app(gpu_spec="H100x8")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle_app(app, pilot)
        await pilot.press("ctrl+k")
        await pilot.pause()
        for button in app.screen.query(Button):
            region = button.region
            assert region.height >= 1 and region.bottom <= 24, button.id


async def test_at_80x24_the_focused_findings_show_more_than_one_finding() -> None:
    app = make_app(gpu_spec="H100x8", argv=DP_LINE)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle_app(app, pilot)
        ol = app.main.query_one("#finding-list", OptionList)
        ol.focus()
        await pilot.pause()
        assert len(app.verdict.findings) >= 2
        assert ol.size.height >= 5  # two findings take four lines at least
        # the flag table's rows stop before its scrollbar
        table = app.main.query_one(RowList)
        assert table.line_width == table.scrollable_content_region.width < table.size.width or (
            table.line_width == table.size.width and not table.show_vertical_scrollbar
        )


async def test_at_80x24_the_editor_with_the_focus_shows_several_flags() -> None:
    app = make_app(gpu_spec="H100x8", argv=DP_LINE)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle_app(app, pilot)
        table = app.main.query_one(RowList)
        table.focus()
        await pilot.pause()
        assert table.size.height >= 4  # a group's title and three flags at least
        row = app.main.query_one("#launch-row")
        assert not row.display  # ctrl+l launches; the findings give the editor room
        app.main.query_one("#finding-list", OptionList).focus()
        button = app.main.query_one("#launch-button", Button)
        # shown at once; laid out at the screen's next refresh (later on a busy machine)
        assert await wait_until(pilot, lambda: button.region.height == 1), button.region
        assert row.display
        assert app.main.query_one("#findings").region.bottom <= 24 - 4  # the command below


# 8 -------------------------------------------------------------------------------------


async def test_enter_in_the_gpu_count_field_applies_the_preset() -> None:
    app = make_app(gpu_spec="H100x8")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert isinstance(app.screen, GpuScreen)
        count = app.screen.query_one("#gpu-count", Input)
        count.value = "2"
        count.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, GpuScreen)
        assert app.session.gpu.count == 2 and app.session.gpu_choice.preset == "H100x2"


# 9 -------------------------------------------------------------------------------------


async def test_a_tui_opened_before_setup_finds_sglang_on_retry() -> None:
    oracle = FakeOracle(available=False, reason="sglang is not installed")
    app = make_app(oracle=oracle, gpu_spec="H100x8")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        assert "unavailable" in app.verdict.status
        oracle.available = True  # `sglaunch oracle setup` ran in another terminal
        app.post_message(__import__("textual.events", fromlist=["AppFocus"]).AppFocus())
        await pilot.pause(0.1)
        await settle_app(app, pilot)
        assert app.verdict.answered and "confirmed by sglang" in app.verdict.status
        # and from the palette
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Retry sglang check" in titles


# 10 ------------------------------------------------------------------------------------


async def test_the_launch_pane_shows_the_interpreter_and_folder_that_run() -> None:
    app = make_app(gpu_spec="H100x8")
    app.session.default_python = "/opt/sgl/bin/python"
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        shown = plain(app.main.query_one("#command"))
        assert "/opt/sgl/bin/python -m sglang.launch_server" in shown
        # the model the example mirrors (its folder has no weights), never `<example:`
        assert "--model-path openbmb/MiniCPM-SALA" in shown and "<example:" not in shown
        assert "# example:minicpm-sala" in shown


# 11 ------------------------------------------------------------------------------------


async def test_a_paste_clears_a_stale_search_filter() -> None:
    app = make_app(gpu_spec="H100x8", model=None)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        editor = app.main.query_one(FlagEditor)
        editor.query_one("#flag-search", Input).value = "radix"
        await pilot.pause()
        assert "tp_size" not in editor.query_one(RowList).row_keys()
        await paste(app, pilot, PASTED)
        assert editor.query_one("#flag-search", Input).value == ""
        assert "tp_size" in editor.query_one(RowList).row_keys()


# 12 ------------------------------------------------------------------------------------


async def test_saving_after_another_models_paste_asks_instead_of_overwriting(
    tmp_path: Path,
) -> None:
    ProfileStore(tmp_path).save(
        Profile(name="a", model="example:minicpm-sala", flags={"tp_size": 2})
    )
    app = make_app(gpu_spec="H100x8", model=None, profile="a", profile_dir=tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        await paste(app, pilot, "python -m sglang.launch_server --model-path example:llama-3.1-8b")
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, ProfilesScreen)
        assert "model changed" in plain(app.screen.query_one("#profile-note"))
        assert ProfileStore(tmp_path).load("a").model == "example:minicpm-sala"  # untouched


# 13 ------------------------------------------------------------------------------------


async def test_the_title_says_loading_while_the_model_loads() -> None:
    app = make_app(gpu_spec="H100x8", model=None)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        app.session.request_model("example:llama-3.1-8b")  # as load_model does, before the worker
        app.update_title()
        assert app.sub_title.startswith("loading example:llama-3.1-8b")
        assert "no model loaded" not in app.sub_title


# 14 ------------------------------------------------------------------------------------


async def test_question_mark_shows_the_keys_of_the_current_screen() -> None:
    app = make_app(gpu_spec="H100x8", argv=DP_LINE)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        app.main.query_one(RowList).focus()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        rows = dict((what, keys) for keys, what in app.screen.rows)
        assert "Paste line" in rows and "Launch" in rows
        await pilot.press("escape")
        app.open_card(app.verdict.findings[0])
        await pilot.pause()
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert "Apply fix" in {what for _, what in app.screen.rows}


async def test_the_palettes_keys_command_opens_a_modal_not_a_side_panel() -> None:
    app = make_app(gpu_spec="H100x8")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle_app(app, pilot)
        width = app.main.query_one(FlagEditor).size.width
        [keys] = [c for c in app.get_system_commands(app.screen) if c.title == "Keys"]
        keys.callback()
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert not app.main.query("HelpPanel")
        assert app.main.query_one(FlagEditor).size.width == width


# 16 ------------------------------------------------------------------------------------


async def test_one_flag_is_one_flag() -> None:
    app = make_app(gpu_spec="H100x8", model=None)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        await paste(
            app, pilot, "python -m sglang.launch_server --model-path example:minicpm-sala --tp 2"
        )
        # the toast follows the load's worker: late on a loaded machine
        await wait_until(pilot, lambda: "loaded 1 flag from the launch line" in notes(app))
        assert "loaded 1 flag from the launch line" in notes(app), notes(app)


class EchoingOracle(FakeOracle):
    """sglang reporting a secret field as changed, and echoing it in an override."""

    def resolve(self, argv, env, gpu):  # type: ignore[no-untyped-def]
        from dataclasses import replace

        answer = super().resolve(argv, env, gpu)
        changed = {**answer.changed, "api_key": (None, "sk-TOPSECRET-1")}
        return replace(answer, changed=changed)


async def test_a_typed_secret_never_shows_in_the_resolved_view_or_the_findings() -> None:
    app = make_app(oracle=EchoingOracle(), gpu_spec="H100x8", argv=["--api-key", "sk-TOPSECRET-1"])
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        assert app.verdict.answer is not None and app.verdict.answer.resolved is not None
        assert app.verdict.answer.resolved.get("api_key") == "sk-TOPSECRET-1"  # sglang's view
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(app.screen, ResolvedScreen)
        assert "sk-TOPSECRET-1" not in repr(app.screen.rows())
        assert "sk-TOPSECRET-1" not in plain(app.main.query_one(FindingsPanel))
