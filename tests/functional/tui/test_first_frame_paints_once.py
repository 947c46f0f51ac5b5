"""The first frame is laid out, styled and painted once: the screen has the classes its size
gives it before the first layout (so the terminal's first resize changes nothing), and the
flag table's rows are there at the first paint, made at the laid-out width."""

from __future__ import annotations

from typing import Any

import pytest
from textual._compositor import Compositor
from textual.screen import Screen

from sglaunch.tui.app import SglaunchApp
from sglaunch.tui.screens.main import MainScreen, breakpoint_classes
from sglaunch.tui.widgets.flag_editor import FlagEditor, _header, column_widths
from sglaunch.tui.widgets.row_list import RowHeader, RowList
from tests.support.tui import make_app


async def test_the_first_paint_has_the_layout_classes_and_the_rows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = make_app(gpu_spec="H100x8")
    at_first_paint: dict[str, Any] = {}
    restyled_after: list[object] = []
    paint = Compositor.render_full_update

    def first_paint(self: Compositor, *args: Any, **kwargs: Any) -> Any:
        screen = app.screen
        if not at_first_paint and isinstance(screen, MainScreen):
            at_first_paint["classes"] = set(screen.classes)
            at_first_paint["rows"] = screen.query_one(RowList).row_count
        return paint(self, *args, **kwargs)

    restyle = SglaunchApp.update_styles

    def counted(self: SglaunchApp, node: Any = None, animate: bool = True) -> None:
        if at_first_paint and self.first_frame_at is None and isinstance(node, Screen):
            restyled_after.append(node)
        restyle(self, node, animate)

    monkeypatch.setattr(Compositor, "render_full_update", first_paint)
    monkeypatch.setattr(SglaunchApp, "update_styles", counted)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        assert app.first_frame_at is not None
        assert {"-wide", "-tall"} <= at_first_paint["classes"]
        assert at_first_paint["rows"] > 500
        # the terminal's first resize found the classes it would set already there
        assert restyled_after == []


async def test_columns_follow_the_table_width_from_the_first_row_on() -> None:
    app = make_app(gpu_spec="H100x8", argv=["--tp", "2"])
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        editor = app.main.query_one(FlagEditor)
        table = editor.query_one(RowList)
        header = editor.query_one(RowHeader)
        wide = column_widths(table.line_width)
        assert editor.widths == wide
        assert header.text().plain == _header(wide).plain
        spec = app.schema.get("tp_size")
        assert spec is not None
        assert table._texts["tp_size"].plain == editor._row(spec).plain
        await pilot.resize_terminal(100, 40)
        await pilot.pause()
        await pilot.pause()
        narrow = column_widths(table.line_width)
        assert narrow != wide and editor.widths == narrow
        assert header.text().plain == _header(narrow).plain
        name_w = narrow[0]
        # the row was made again at the new width: its value column starts after the name's
        assert table._texts["tp_size"].plain[2 + name_w + 1 :].startswith("2")


@pytest.mark.parametrize("width", [0, 1, 80, 109, 110, 111, 149, 150, 151, 300])
@pytest.mark.parametrize("height", [0, 10, 31, 32, 33, 80])
def test_the_classes_set_up_front_are_those_textuals_resize_gives(width: int, height: int) -> None:
    app = SglaunchApp.__new__(SglaunchApp)  # the class's breakpoints; no app need run
    screen = Screen.__new__(Screen)
    expected = Screen._get_breakpoint_classes(
        screen, width, SglaunchApp.HORIZONTAL_BREAKPOINTS
    ) | Screen._get_breakpoint_classes(screen, height, SglaunchApp.VERTICAL_BREAKPOINTS)
    from textual.geometry import Size

    assert set(breakpoint_classes(app, Size(width, height))) == expected
