"""What a new user sees first: the keys help, the GPU dialog without a GPU, the resolved
view's long lists, titles that fit, no toast over the panels, memory at 80×24."""

from __future__ import annotations

import pytest

from sglaunch.display import fit_title, shorten, shorten_lines
from sglaunch.tui.screens.dialogs import GpuScreen, ResolvedScreen, ResolvedView
from sglaunch.tui.screens.help import HelpScreen, key_rows
from sglaunch.tui.screens.main import TITLED
from tests.support.tui import make_app, plain, settle_app, told

GENERIC = ("Scroll", "Page", "Focus Next", "Focus Previous", "Copy selected text", "Cursor")


async def test_the_keys_help_lists_the_apps_keys_not_textuals_scrolling() -> None:
    app = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        for control in ("#flag-table", "#finding-list", "#flag-search"):
            app.screen.query_one(control).focus()
            await pilot.pause()
            rows = key_rows(app.screen)
            what = [w for _, w in rows]
            assert "Launch" in what and "Save" in what and "Quit" in what
            generic = [w for w in what if any(g.lower() in w.lower() for g in GENERIC)]
            assert generic == [], (control, generic)
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)


async def test_the_gpu_dialog_without_a_gpu_says_so_first() -> None:
    app = make_app()  # the fake NVML finds no driver
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert isinstance(app.screen, GpuScreen)
        lines = [plain(s).strip() for s in app.screen.query("Static")]
        texts = [t for t in lines if t and t != "GPUs"]
        assert texts[0].startswith("No GPU was found on this machine: no NVIDIA driver found")
        assert not any(t.startswith("…or plan") for t in texts)
        assert "Plan for one of these machines:" in texts


def test_the_resolved_view_summarises_long_lists() -> None:
    sizes = [1, 2, 4, *range(8, 512, 9), 512]
    view = ResolvedView(
        source="from sglang",
        verdict="accepts",
        tone="green",
        changes={
            "cuda_graph_config": (None, {"decode": {"bs": sizes, "backend": "full"}}),
            "cuda_graph_bs": (None, sizes),
            "tp_size": (None, 2),
        },
        explicit=frozenset(),
    )
    rows = {field: used for field, _, used in ResolvedScreen(view).rows()}
    n = len(sizes)
    assert rows["cuda_graph_bs"] == f"{n} batch sizes: 1, 2, 4, … 512"
    assert rows["cuda_graph_config"] == (
        f"{{decode: {{bs: {n} batch sizes: 1, 2, 4, … 512, backend: full}}}}"
    )
    assert rows["tp_size"] == "2"


def test_titles_and_reasons_are_cut_at_a_word_with_an_ellipsis() -> None:
    assert fit_title("memory/GPU · tp 1 · m: layouts", 30) == "memory/GPU · tp 1 · m: layouts"
    assert fit_title("memory/GPU · tp 1 · m: layouts", 22) == "memory/GPU · tp 1"
    assert fit_title("memory per GPU · tp 1", 12) == "memory per…"
    long = "model · ready to launch with /usr/bin/python3 · for sglang 0.5.23"
    assert fit_title(long, 36) == "model · ready to launch with…"
    assert shorten("fix first: MiniCPM does not support it", 26) == "fix first: MiniCPM does…"
    two = shorten_lines("fix first: MiniCPM does not support sparse attention here", 20, 2)
    assert two.split("\n") == ["fix first: MiniCPM", "does not support…"]


async def test_panel_titles_fit_their_borders_at_medium_width() -> None:
    app = make_app(argv=["--tp", "1"])
    async with app.run_test(size=(112, 40)) as pilot:
        await settle_app(app, pilot)
        await pilot.pause(0.1)
        for selector in TITLED:
            widget = app.screen.query_one(selector)
            title = widget.border_title or ""
            room = widget.outer_size.width - 4
            if room > 0:
                assert len(title) <= room, (selector, title)
        memory = app.screen.query_one("#memory-panel").border_title or ""
        assert memory.startswith("memory/GPU")


async def test_no_toast_covers_the_panels_at_start_without_a_gpu() -> None:
    app = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        assert not [t for t in told(app) if "NVIDIA" in t]
        assert "no NVIDIA driver found" in plain(app.screen.query_one("#gpu-panel"))


@pytest.mark.parametrize(
    "argv",
    [["--tp", "2"], ["--tp", "4", "--enable-dp-attention", "--dp-size", "4"]],
    ids=["fits", "rejected"],
)
async def test_a_memory_summary_stays_in_view_at_80_by_24(argv: list[str]) -> None:
    app = make_app(gpu_spec="H100x8", argv=argv)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle_app(app, pilot)
        await pilot.pause(0.1)
        line = app.screen.query_one("#facts-line")
        assert line.display and line.region.height >= 1
        shown = plain(line).strip()[: line.region.width - 2]  # what fits on the line
        assert "KV " in shown and "tokens" in shown
        whole = plain(line).strip()
        assert len(whole) <= line.size.width  # shortened at a word, not cut by the edge


async def test_the_header_drops_the_subtitles_last_parts_instead_of_cutting_a_word() -> None:
    from textual.widgets._header import HeaderTitle

    app = make_app(gpu_spec="H100x8")
    async with app.run_test(size=(100, 30)) as pilot:
        await settle_app(app, pilot)
        parts = [
            "example:minicpm-sala",
            "ready to launch with /a/rather/long/path/to/python (sglang not checked)",
            "for sglang 0.5.23 (default)",
        ]
        app.sub_title = " · ".join(parts)
        await pilot.pause()
        room = app.screen.query_one(HeaderTitle).size.width
        shown = app.screen.sub_title
        assert shown is not None
        assert len(f"{app.title} — {shown}") <= room
        full = app.sub_title
        kept = shown.removesuffix("…")
        assert full.startswith(kept) and len(kept) < len(full)
        assert full[len(kept)] == " " or full[len(kept) :].startswith(" · ")  # whole words


async def test_a_long_launch_reason_ends_at_a_word_with_an_ellipsis() -> None:
    from sglaunch.tui.widgets.findings import FindingsPanel

    app = make_app(gpu_spec="H100x8")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        reason = (
            "fix first: MiniCPM does not support DP attention with these flags at all (+2 more)"
        )
        app.main.query_one(FindingsPanel).set_launch(reason)
        await pilot.pause()
        widget = app.main.query_one("#launch-reason")
        lines = plain(widget).rstrip("\n").split("\n")
        assert len(lines) <= 2 and all(len(line) <= widget.size.width for line in lines)
        assert lines[-1].endswith("…")
        assert " ".join(lines)[:-1] in reason  # whole words, in order
