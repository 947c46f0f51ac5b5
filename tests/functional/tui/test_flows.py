"""Pilot tests for each user flow, with fakes for NVML and the oracle injected through the App."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import Input, OptionList, Static, TextArea

from sglaunch.tui.app import SglaunchApp
from sglaunch.tui.screens.card import CardScreen
from sglaunch.tui.screens.dialogs import (
    GpuScreen,
    OpenModelScreen,
    PasteScreen,
    ResolvedScreen,
    ResolvedView,
)
from sglaunch.tui.widgets.findings import FindingsPanel
from sglaunch.tui.widgets.flag_editor import FlagEditor
from sglaunch.tui.widgets.row_list import RowList
from sglaunch.validators.findings import Severity
from tests.conftest import model_dir
from tests.fakes.nvml import B200, H100, FakeNvml, gpu
from tests.fakes.oracle import FakeOracle
from tests.support.tui import make_app, plain, settle_app, told

DP_ERROR = "MiniCPM does not support DP attention"


async def settle(app: SglaunchApp, pilot) -> None:  # type: ignore[no-untyped-def]
    await settle_app(app, pilot)


def shown_messages(app: SglaunchApp) -> list[str]:
    return [f.message for f in app.main.query_one(FindingsPanel).findings]


async def search(pilot, text: str) -> None:  # type: ignore[no-untyped-def]
    await pilot.press("slash")
    for ch in text:
        await pilot.press(ch)
    await pilot.press("enter")


async def test_dp_attention_error_appears_in_the_same_refresh() -> None:
    app = make_app(oracle=FakeOracle(), gpu_spec="H100x8")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        assert app.session.model is not None and app.session.model.has_minicpm_sparse_attention
        assert DP_ERROR not in shown_messages(app)
        # the 0.5.23 spelling of attention DP: --attn-dp-size 2
        await search(pilot, "attn-dp-size")
        editor = app.main.query_one(FlagEditor)
        assert editor.current == "attn_dp_size"
        await pilot.press("enter")  # into the value input
        await pilot.press("2")
        # no pause: the built-in verdict is part of the same update
        assert DP_ERROR in shown_messages(app)
        assert app.session.flags["attn_dp_size"] == 2
        # and it is an error that blocks launching
        assert any(f.severity is Severity.ERROR for f in app.launch_blockers())


async def test_card_fix_clears_the_error_and_unsets_the_flag() -> None:
    app = make_app(
        oracle=FakeOracle(),
        gpu_spec="H100x8",
        argv=["--tp", "4", "--enable-dp-attention", "--dp-size", "4"],
    )
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        assert DP_ERROR in shown_messages(app)
        panel = app.main.query_one(FindingsPanel)
        panel.query_one(OptionList).focus()
        assert panel.highlight(next(f for f in panel.findings if f.message == DP_ERROR))
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, CardScreen)
        card = app.screen
        assert "What it means" in str(card.query("Static").results()) or card.card.what
        assert "--enable-dp-attention" in card.before
        assert "--enable-dp-attention" not in card.afters[0]
        await pilot.press("1")  # the first fix
        await pilot.pause()
        assert not isinstance(app.screen, CardScreen)
        assert DP_ERROR not in shown_messages(app)
        assert "enable_dp_attention" not in app.session.flags
        assert "dp_size" not in app.session.flags
        assert app.session.flags["tp_size"] == 4


async def test_paste_a_deepseek_line_for_a_minicpm_model() -> None:
    line = (
        "CUDA_VISIBLE_DEVICES=0,1,2,3 python3 -m sglang.launch_server \\\n"
        f"    --model-path {model_dir('sala-sparse-lightning')} \\\n"
        "    --tp 4 --enable-dp-attention --dp-size 4 \\\n"
        "    --trust-remote-code --mem-fraction-static 0.85"
    )
    app = make_app(oracle=FakeOracle(), gpu_spec="H100x8", model=None)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+k")
        await pilot.pause()
        assert isinstance(app.screen, PasteScreen)
        app.screen.query_one(TextArea).text = line
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        await pilot.pause()
        assert app.session.model_source == str(model_dir("sala-sparse-lightning"))
        assert (
            app.session.flags["tp_size"] == 4 and app.session.flags["enable_dp_attention"] is True
        )
        assert app.session.environment()["CUDA_VISIBLE_DEVICES"] == "0,1,2,3"
        assert DP_ERROR in shown_messages(app)


async def test_paste_rejects_a_non_sglang_line_inline() -> None:
    app = make_app(gpu_spec="H100x8")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+k")
        await pilot.pause()
        app.screen.query_one(
            TextArea
        ).text = "vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 2"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert isinstance(app.screen, PasteScreen)  # still open, with the reason
        assert "no sglang launch found" in plain(app.screen.query_one("#paste-error"))


async def test_switching_preset_h100_to_b200_changes_the_resolved_backend() -> None:
    oracle = FakeOracle()
    app = make_app(oracle=oracle, gpu_spec="H100x8")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        await pilot.pause(0.2)
        await settle(app, pilot)
        assert app.verdict.answer is not None  # sglang answered this very revision
        assert app.verdict.answer.changed["attention_backend"][1] == "minicpm_flashattn"
        await pilot.press("ctrl+g")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, GpuScreen)
        from textual.widgets import Select

        screen.query_one("#gpu-preset", Select).value = "B200"
        screen.query_one("#gpu-count", Input).value = "8"
        await pilot.click("#gpu-apply")
        await pilot.pause(0.2)
        await settle(app, pilot)
        await pilot.pause(0.2)
        await settle(app, pilot)
        assert app.session.gpu.is_blackwell
        assert app.verdict.answer is not None  # sglang answered this very revision
        assert app.verdict.answer.changed["attention_backend"][1] == "minicpm_flashinfer"
        # the resolved view lists it: you asked -> sglang will use
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(app.screen, ResolvedScreen)
        assert ("attention_backend", "(unset)", "minicpm_flashinfer") in app.screen.rows()


async def test_search_radix_then_toggle() -> None:
    app = make_app(gpu_spec="H100x8", model="example:llama-3.1-8b")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        await search(pilot, "radix")
        editor = app.main.query_one(FlagEditor)
        keys = editor.query_one(RowList).row_keys()
        assert "disable_radix_cache" in keys
        assert all(
            app.schema.by_dest[k].matches(["radix"]) for k in keys if not k.startswith("group:")
        )
        assert len(keys) < 40  # the search narrowed the table
        editor.select("disable_radix_cache")
        await pilot.press("space")
        assert app.session.flags.get("disable_radix_cache") is True
        assert "--disable-radix-cache" in app.session.command_line()
        await pilot.press("space")
        assert "disable_radix_cache" not in app.session.flags


async def test_broken_model_path_is_an_inline_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{broken")
    app = make_app(gpu_spec="H100x8", model=None)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+o")
        await settle(app, pilot)  # the HF cache is listed in a worker first
        assert isinstance(app.screen, OpenModelScreen)
        app.screen.query_one("#model-input", Input).value = str(tmp_path)
        await pilot.press("enter")
        await settle(app, pilot)
        await pilot.pause()
        assert app.is_running
        assert app.session.model_error and "not valid JSON" in app.session.model_error
        panel = app.screen.query_one("#model-panel")
        assert panel.has_class("-error")
        assert "not valid JSON" in plain(panel)


async def test_invalid_value_is_shown_not_applied() -> None:
    app = make_app(gpu_spec="H100x8")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        await search(pilot, "tp-size")
        await pilot.press("enter")
        for ch in "two":
            await pilot.press(ch)
        assert "tp_size" not in app.session.flags
        assert "invalid int value: 'two'" in plain(app.screen.query_one("#flag-error"))


async def test_stale_oracle_answers_are_discarded() -> None:
    oracle = FakeOracle(delay=0.3)
    app = make_app(oracle=oracle, gpu_spec="H100x8", debounce=0.01)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        editor = app.main.query_one(FlagEditor)
        editor.post_message(FlagEditor.Edited("tp_size", 2))
        await pilot.pause(0.05)
        editor.post_message(FlagEditor.Edited("tp_size", 4))
        # the first question's worker, cancelled by the second, ends after the fake's 0.3 s
        # delay: waiting on it before then would raise WorkerCancelled
        await pilot.pause(0.5)
        await settle(app, pilot)
        # the verdict shown is for the latest flags, never an older request's
        assert app.verdict.answer is not None  # sglang answered this very revision
        assert any("--tp-size" in argv and "4" in argv for argv, _, _ in oracle.requests)


async def test_oracle_unavailable_status() -> None:
    app = make_app(
        oracle=FakeOracle(
            available=False, reason="sglang is not installed; run `sglaunch oracle setup`"
        ),
        gpu_spec="H100x8",
    )
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        await pilot.pause()
        verdict = plain(app.main.query_one(FindingsPanel).query_one("#verdict"))
        assert "sglang check unavailable: sglang is not installed" in verdict
        # the built-in tier still works
        app.main.query_one(FlagEditor).post_message(FlagEditor.Edited("attn_dp_size", 2))
        await pilot.pause()
        assert DP_ERROR in shown_messages(app)


async def test_launch_is_refused_while_an_error_stands() -> None:
    app = make_app(gpu_spec="H100x8", argv=["--attn-dp-size", "2", "--tp", "2"])
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+l")
        await pilot.pause()
        assert app.screen.__class__.__name__ == "MainScreen"
        notes = told(app)
        assert any(DP_ERROR in n for n in notes)


async def test_real_gpus_through_fake_nvml() -> None:
    nvml = FakeNvml([gpu(B200, 0, util=12), gpu(H100, 1)])
    app = make_app(nvml=nvml)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        assert app.session.probed is not None and app.session.probed.count == 2
        text = plain(app.screen.query_one("#gpu-panel"))
        assert "B200" in text and "H100" in text
        # device 0 is a B200: the sparse backend is the Blackwell one
        overrides = {f.override.field: f.override.value for f in app.last_findings if f.override}
        assert overrides["attention_backend"] == "minicpm_flashinfer"


async def test_command_palette_has_the_main_actions() -> None:
    app = make_app(gpu_spec="H100x8")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for wanted in (
            "Open model",
            "Paste launch line",
            "Choose GPUs",
            "Launch server",
            "Show what sglang will change",
            "Save profile",
            "Profiles",
            "Search flags",
        ):
            assert wanted in titles


async def test_narrow_layout_is_usable() -> None:
    app = make_app(gpu_spec="H100x8")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        assert app.screen.has_class("-narrow")
        for wid in ("#flag-table", "#finding-list", "#command"):
            region = app.screen.query_one(wid).region
            assert region.width > 0 and region.height > 0, wid
        await search(pilot, "tp-size")
        assert app.main.query_one(FlagEditor).current == "tp_size"


def test_fake_models_exist() -> None:
    assert (
        json.loads((model_dir("sala-sparse-lightning") / "config.json").read_text())["model_type"]
        == "minicpm_sala"
    )


async def test_help_text_from_sglang_is_shown_and_searchable() -> None:
    from dataclasses import replace

    from sglaunch.flags.schema import FlagSchema, bundled_schema

    base = bundled_schema()
    flags = [
        replace(f, help="Disable RadixAttention for prefix caching.")
        if f.dest == "disable_radix_cache"
        else f
        for f in base.flags
    ]
    with_help = FlagSchema(flags=flags, sglang_version=base.sglang_version, help_included=True)
    from sglaunch.release import FlagFacts, VersionSource, choose

    facts = FlagFacts(with_help, choose("0.5.23"), "flags read from sglang 0.5.23 (cached)")
    app = make_app(gpu_spec="H100x8", flag_facts=lambda named: facts)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        await search(pilot, "prefix caching")
        editor = app.main.query_one(FlagEditor)
        keys = [k for k in editor.query_one(RowList).row_keys() if not k.startswith("group:")]
        assert keys == ["disable_radix_cache"]
        await pilot.pause()
        assert "Disable RadixAttention" in plain(app.screen.query_one("#flag-help"))
        assert app.active.source is VersionSource.INSTALLED
        assert "sglang 0.5.23 (installed)" in str(editor.border_title)
        assert app.sub_title.endswith("for sglang 0.5.23 (installed)")


async def test_launch_button_is_disabled_with_the_reason() -> None:
    from textual.widgets import Button

    app = make_app(gpu_spec="H100x8", argv=["--attn-dp-size", "2", "--tp", "2"])
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        button = app.screen.query_one("#launch-button", Button)
        assert button.disabled
        assert DP_ERROR in plain(app.screen.query_one("#launch-reason"))
        app.main.query_one(FlagEditor).post_message(FlagEditor.Edited("attn_dp_size", None))
        await pilot.pause()
        assert not button.disabled
        assert plain(app.screen.query_one("#launch-reason")).strip() == ""


async def test_fast_typing_into_a_float_flag_keeps_every_keystroke() -> None:
    app = make_app(oracle=FakeOracle(), gpu_spec="H100x8", debounce=0.01)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        await search(pilot, "mem-fraction-static")
        assert app.main.query_one(FlagEditor).current == "mem_fraction_static"
        await pilot.press("enter")
        # every key without a pause between: the input must never be rewritten under the cursor
        await pilot.press(*"0.75")
        await settle(app, pilot)
        assert app.session.flags["mem_fraction_static"] == 0.75
        field = app.screen.query_one("#ctl-input", Input)
        assert field.value == "0.75"
        await pilot.press("backspace", "backspace", "backspace")
        await settle(app, pilot)
        assert field.value == "0"
        assert app.session.flags["mem_fraction_static"] == 0.0


async def test_fast_search_typing_narrows_without_errors() -> None:
    app = make_app(gpu_spec="H100x8")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        await pilot.press("slash", *"attention-backend", "enter")
        await settle(app, pilot)
        assert app.is_running
        keys = app.main.query_one(FlagEditor).query_one(RowList).row_keys()
        assert "attention_backend" in keys
        await pilot.press("escape")
        await pilot.press("slash", *"zzzz-no-such-flag")
        await settle(app, pilot)
        # paging through no rows at all is a no-op, not a crash
        app.main.query_one(FlagEditor).query_one(RowList).focus()
        await pilot.press("pagedown", "pageup", "home", "end", "down", "enter")
        await settle(app, pilot)
        assert app.is_running
        assert [
            k
            for k in app.main.query_one(FlagEditor).query_one(RowList).row_keys()
            if not k.startswith("group:")
        ] == []


async def test_launch_in_planning_mode_asks_first() -> None:
    from sglaunch.tui.screens.dialogs import ConfirmScreen

    launched: list[object] = []

    def factory(spec: object) -> object:
        launched.append(spec)
        raise RuntimeError("not reached in this test")

    app = make_app(gpu_spec="H100x8", model="example:llama-3.1-8b", server_factory=factory)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        await pilot.press("ctrl+l")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        assert "planning mode" in app.screen.body
        await pilot.press("escape")
        await pilot.pause()
        assert launched == []


async def test_go_to_flag_from_a_finding_clears_the_search_and_scrolls_to_it() -> None:
    argv = ["--enable-dp-attention", "--dp-size", "4", "--tp-size", "4"]
    app = make_app(oracle=FakeOracle(), gpu_spec="H100x8", argv=argv)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        await search(pilot, "tp-size")  # the flag the finding names is filtered out
        findings = app.screen.query_one("#finding-list", OptionList)
        findings.focus()
        await pilot.pause()
        assert findings.highlighted == 0  # the list starts on its first finding
        panel = app.main.query_one(FindingsPanel)
        assert panel.highlight(next(f for f in panel.findings if "disable_radix_cache" in f.flags))
        await pilot.press("g")
        await pilot.pause()
        await pilot.pause()
        editor = app.main.query_one(FlagEditor)
        rows = editor.query_one(RowList)
        assert editor.current == "disable_radix_cache"
        assert app.focused is rows
        assert rows.scroll_offset.y <= rows.cursor < rows.scroll_offset.y + rows.size.height


async def test_verdict_says_when_sglang_accepts_but_a_launch_time_error_remains() -> None:
    app = make_app(oracle=FakeOracle(), gpu_spec="H100x8", argv=["--mem-fraction-static", "1.2"])
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        await pilot.pause(0.2)
        await settle(app, pilot)
        assert app.verdict.answer is not None  # sglang answered this very revision
        verdict = plain(app.screen.query_one("#verdict"))
        assert "accepts these flags" in verdict and "1 error would stop the launch later" in verdict
        assert app.launch_blockers()


async def test_sglang_overrides_collapse_into_one_line_that_opens_them_all() -> None:
    from sglaunch.tui.widgets.findings import FindingsPanel as Panel
    from sglaunch.validators.findings import Finding, Override

    def override(field: str, value: object) -> Finding:
        return Finding(
            code="sglang-override",
            severity=Severity.OVERRIDE,
            message=f"sglang will set {field}={value}",
            flags=(field,),
            source="sglang",
            override=Override(field=field, asked=None, value=value),
        )

    app = make_app(oracle=FakeOracle(), gpu_spec="H100x8", argv=["--tp-size", "2"])
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        panel = app.main.query_one(Panel)
        error = Finding(code="x-error", severity=Severity.ERROR, message="boom", flags=("tp_size",))
        panel.show(
            [error, override("chunked_prefill_size", 8192), override("cuda_graph_max_bs", 256)]
        )
        ol = panel.query_one(OptionList)
        assert ol.option_count == 2  # the error, then one line for both overrides
        summary = str(ol.get_option_at_index(1).prompt)
        assert "change 2 values" in summary and "chunked_prefill_size" in summary
        ol.focus()
        ol.highlighted = 1
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ResolvedScreen)
        await pilot.press("escape")
        await pilot.pause()
        # one override alone keeps its own line
        panel.show([error, override("chunked_prefill_size", 8192)])
        assert ol.option_count == 2
        assert "chunked_prefill_size=8192" in str(ol.get_option_at_index(1).prompt)


async def test_resolved_view_says_unset_for_defaults_and_counts_hidden_fields() -> None:
    app = make_app(gpu_spec="H100x8")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        changes = {"chunked_prefill_size": (-1, 8192), "tp_size": (2, 2), "page_size": (None, 64)}
        view = ResolvedView("(test)", "", "", changes, frozenset({"tp_size"}), hidden=7)
        app.push_screen(ResolvedScreen(view))
        await pilot.pause()
        rows = {r[0]: list(r) for r in app.screen.rows()}
        assert rows["chunked_prefill_size"][1] == "(unset: default -1)"
        assert rows["page_size"][1] == "(unset)"
        assert rows["tp_size"][1] == "2"
        assert any("7 more not shown" in plain(s) for s in app.screen.query(Static))


async def test_ctrl_keys_work_from_the_search_box_and_down_enters_the_results() -> None:
    app = make_app(gpu_spec="H100x8")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        await pilot.press("slash", *"radix")
        search_box = app.screen.query_one("#flag-search", Input)
        assert app.focused is search_box
        await pilot.press("down")
        assert app.focused is app.main.query_one(FlagEditor).query_one(RowList)
        await pilot.press("slash")
        assert app.focused is search_box
        await pilot.press("ctrl+k")  # a text field's "delete to end" must not win
        await pilot.pause()
        assert isinstance(app.screen, PasteScreen)


async def test_a_request_sglang_could_not_answer_says_so_and_the_next_one_is_asked() -> None:
    from sglaunch.oracle.answer import OracleAnswer

    class DyingOnce(FakeOracle):
        def resolve(self, argv, env, gpu):  # type: ignore[no-untyped-def]
            if not self.requests:
                self.requests.append((list(argv), dict(env), gpu))
                return OracleAnswer.failed("worker died")
            return super().resolve(argv, env, gpu)

    oracle = DyingOnce()
    app = make_app(oracle=oracle, gpu_spec="H100x8", debounce=0.01)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        await pilot.pause(0.1)
        await settle(app, pilot)
        verdict = plain(app.screen.query_one("#verdict"))
        assert "sglang check failed: worker died" in verdict
        app.main.query_one(FlagEditor).post_message(FlagEditor.Edited("tp_size", 2))
        await pilot.pause(0.1)
        await settle(app, pilot)
        await pilot.pause(0.1)
        assert len(oracle.requests) == 2
        assert "confirmed by sglang" in plain(app.screen.query_one("#verdict"))


async def test_on_a_gpu_machine_a_preset_can_be_chosen_and_real_gpus_chosen_back() -> None:
    from textual.widgets import Select, SelectionList

    app = make_app(nvml=FakeNvml([gpu(H100, 0), gpu(H100, 1)]))
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        assert app.session.gpu.count == 2
        await pilot.press("ctrl+g")
        await pilot.pause()
        app.screen.query_one("#gpu-preset", Select).value = "B200"
        await pilot.click("#gpu-apply")
        await pilot.pause()
        assert app.session.gpu_choice.preset == "B200x8" and app.session.gpu.is_blackwell
        assert "CUDA_VISIBLE_DEVICES" not in app.session.env
        # back to one of the real GPUs: the preset is left as it was, the selection changes
        await pilot.press("ctrl+g")
        await pilot.pause()
        app.screen.query_one("#gpu-select", SelectionList).deselect(1)
        await pilot.click("#gpu-apply")
        await pilot.pause()
        assert app.session.gpu_choice.preset is None
        assert (
            app.session.gpu.count == 1 and app.session.environment()["CUDA_VISIBLE_DEVICES"] == "0"
        )


async def test_yaml_preview_is_the_same_export_as_profiles_export() -> None:
    from sglaunch.profiles import to_yaml

    argv = ["--tp", "4", "--enable-dp-attention", "--dp-size", "4", "--enable-metrics"]
    app = make_app(gpu_spec="H100x8", argv=argv)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        await pilot.press("y")
        await pilot.pause()
        shown = plain(app.screen.query_one("#command"))
        assert "tp-size: 4" in shown and "enable-metrics: true" in shown
        # sglang's config merger refuses the deprecated switch: never written as a YAML key
        assert "enable-dp-attention: true" not in shown
        expected = to_yaml(app.session.to_profile("launch"), schema=app.schema).text
        assert app.config_yaml() == expected.rstrip("\n")


async def test_secrets_never_show_on_screen() -> None:
    app = make_app(gpu_spec="H100x8", argv=["--api-key", "sk-VERY-SECRET", "--tp", "2"])
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(app, pilot)
        assert "sk-VERY-SECRET" not in plain(app.screen.query_one("#command"))
        assert "****" in plain(app.screen.query_one("#command"))
        await search(pilot, "api-key")
        editor = app.main.query_one(FlagEditor)
        rows = editor.query_one(RowList)
        assert all("sk-VERY-SECRET" not in str(rows._texts[k]) for k in rows.row_keys())
        assert app.screen.query_one("#ctl-input", Input).password
        # the real value is still what a launch gets
        assert "sk-VERY-SECRET" in app.session.command_line()
