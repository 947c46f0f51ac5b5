"""The memory panel and the layouts table: live with every edit, one key away."""

from __future__ import annotations

from textual.widgets import DataTable

from sglaunch.tui.screens.layouts import LayoutsScreen, layout_fix
from sglaunch.tui.widgets.memory import MemoryPanel
from tests.functional.tui.test_editor_interactions import paste
from tests.support.tui import make_app, plain, settle_app, told

THROUGHPUT_LINE = (
    "python -m sglang.launch_server --model-path example:llama-3.1-8b "
    "--tp 4 --enable-dp-attention --dp-size 4 --mem-fraction-static 0.6"
)


async def test_the_panel_follows_every_edit() -> None:
    app = make_app(gpu_spec="H100x1", model="example:llama-3.1-8b")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        panel = app.main.query_one(MemoryPanel)
        before = app.memory_plan()
        assert before is not None and before.max_total_num_tokens
        assert f"{before.max_total_num_tokens:,}" in plain(panel)
        app.session.set_flag("mem_fraction_static", 0.5)
        app.refresh_views()
        after = app.memory_plan()
        assert after is not None and after.max_total_num_tokens < before.max_total_num_tokens
        assert f"{after.max_total_num_tokens:,}" in plain(panel)
        assert "total" in plain(panel) and "slack" in plain(panel) and "/GiB" in plain(panel)


async def test_a_pasted_throughput_line_shows_the_layouts_that_fit_and_one_can_be_picked() -> None:
    app = make_app(gpu_spec="H100x4", model=None)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        await paste(app, pilot, THROUGHPUT_LINE)
        await pilot.press("m")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LayoutsScreen)
        assert all(layout.gpus <= 4 for layout in screen.layouts) and screen.layouts
        table = screen.query_one(DataTable)
        assert table.row_count == len(screen.layouts)
        choice = next(
            i for i, layout in enumerate(screen.layouts) if (layout.tp, layout.dp) == (2, 2)
        )
        table.move_cursor(row=choice)
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, LayoutsScreen)
        flags = app.session.flags
        assert flags.get("tp_size") == 2 and flags.get("dp_size") == 2
        assert "enable_dp_attention" not in flags and "attn_dp_size" not in flags
        plan = app.memory_plan()
        assert plan is not None and (plan.knobs.tp, plan.knobs.dp) == (2, 2)


def test_a_layouts_fix_sets_sizes_above_one_and_resets_the_rest() -> None:
    from dataclasses import dataclass

    @dataclass
    class L:
        tp: int = 4
        dp: int = 1
        pp: int = 1
        attn_dp: int = 2
        nodes: int = 1
        servers: int = 1

        def flags(self):  # type: ignore[no-untyped-def]
            return {
                "tp_size": self.tp,
                "dp_size": self.dp,
                "pp_size": self.pp,
                "attn_dp_size": self.attn_dp,
            }

    fix = layout_fix(L())  # type: ignore[arg-type]
    assert dict(fix.set) == {"tp_size": 4, "attn_dp_size": 2}
    assert set(fix.unset) == {"dp_size", "pp_size", "enable_dp_attention"}


def test_a_layouts_fix_before_0_5_22_keeps_the_old_spelling_of_attention_dp() -> None:
    from sglaunch.validators.memory.layouts import Layout

    layout = Layout(4, 1, 1, 2, plan=None, blocking=(), old_spelling=True)  # type: ignore[arg-type]
    fix = layout_fix(layout)
    # 0.5.21 has no --attn-dp-size: attention DP 2 is --enable-dp-attention --dp-size 2
    assert dict(fix.set) == {"tp_size": 4, "dp_size": 2, "enable_dp_attention": True}
    assert "enable_dp_attention" not in fix.unset and "dp_size" not in fix.unset


async def test_the_panel_never_says_fits_beside_a_rejected_line() -> None:
    app = make_app(
        gpu_spec="H100x4",
        model="example:minicpm-sala",
        argv=["--tp", "4", "--enable-dp-attention", "--dp-size", "4"],
    )
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        plan = app.memory_plan()
        assert plan is not None and plan.verdict == "fits"  # the memory alone would
        errors = [f for f in app.verdict.findings if f.is_error]
        assert [f.code for f in errors] == ["minicpm-dp-attention"]
        text = plain(app.main.query_one(MemoryPanel))
        assert "plan only: line rejected" in text and errors[0].message in text
        assert "fits" not in text
        facts = plain(app.main.query_one("#facts-line"))
        assert "plan only" in facts and "(fits)" not in facts
        # the fix clears the error, and the memory verdict comes back
        app.apply_fix(errors[0].fixes[0])
        await pilot.pause()
        text = plain(app.main.query_one(MemoryPanel))
        assert "fits" in text and "rejected" not in text


async def test_the_layouts_table_counts_per_replica_and_in_total_and_picking_says_so() -> None:
    app = make_app(gpu_spec="H100x4", model="example:minicpm-sala")
    async with app.run_test(size=(200, 50)) as pilot:
        await settle_app(app, pilot)
        await pilot.press("m")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LayoutsScreen)
        table = screen.query_one(DataTable)
        labels = [str(c.label) for c in table.columns.values()]
        per = labels.index("KV tokens/replica")
        total = labels.index("KV tokens total")
        for i, layout in enumerate(screen.layouts):
            row = [str(c) for c in table.get_row_at(i)]
            tokens = layout.plan.max_total_num_tokens
            assert tokens is not None
            # one format for every count, millions included
            assert row[per] == f"{tokens:,}"
            assert row[total] == f"{tokens * layout.dp * layout.attn_dp:,}"
        assert any(
            (layout.plan.max_total_num_tokens or 0) >= 10_000_000 for layout in screen.layouts
        )
        choice = next(
            i for i, layout in enumerate(screen.layouts) if (layout.tp, layout.dp) == (2, 2)
        )
        table.move_cursor(row=choice)
        await pilot.press("enter")
        await pilot.pause()
        assert told(app)[-1] == "Layout applied: --tp-size 2 --dp-size 2"
        assert (app.session.flags.get("tp_size"), app.session.flags.get("dp_size")) == (2, 2)
