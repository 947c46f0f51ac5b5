"""What the first frame leaves for later: the flag table makes a row's text when the row is
first drawn (not all ~530 before the first frame), and the flag pane mounts its choice list
and text field just after it. Either, made late, reads as if made at once."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import Input, Select, Switch

from sglaunch.flags.schema import bundled_schema
from sglaunch.tui.widgets.flag_editor import FlagDetail, FlagEditor
from sglaunch.tui.widgets.row_list import RowList
from tests.support.tui import make_app


class _Rows(App[None]):
    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count
        self.made: list[str] = []

    def compose(self) -> ComposeResult:
        yield RowList(id="rows")

    def on_mount(self) -> None:
        def make(key: str) -> Text:
            self.made.append(key)
            return Text(f"row {key}")

        keys = [str(i) for i in range(self.count)]
        self.query_one(RowList).set_rows([(k, None) for k in keys], make=make)


async def test_only_the_rows_on_screen_are_made() -> None:
    app = _Rows(1000)
    async with app.run_test(size=(40, 20)) as pilot:
        await pilot.pause()
        rows = app.query_one(RowList)
        assert rows.row_count == 1000
        assert 0 < len(app.made) <= 20
        assert len(set(app.made)) == len(app.made)  # each made once
        rows.focus()
        await pilot.press("end")
        await pilot.pause()
        assert "999" in app.made
        assert len(app.made) <= 40
        assert str(rows._texts["500"]) == "row 500"  # any row reads back on demand


async def test_a_row_made_late_equals_one_made_at_once() -> None:
    app = make_app(gpu_spec="H100x8", argv=["--tp", "2", "--mem-fraction-static", "0.8"])
    async with app.run_test(size=(160, 50)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        editor = app.main.query_one(FlagEditor)
        rows = editor.query_one(RowList)
        made_at_start = len(rows._texts)
        assert rows.row_count > 500
        assert made_at_start < 100
        for key in rows.row_keys():
            spec = app.schema.get(key)
            if spec is not None:
                assert rows._texts[key].plain == editor._row(spec).plain
        tp = rows._texts["tp_size"].plain
        assert "2" in tp.split()


class _Detail(App[None]):
    """A FlagDetail asked to show a choice flag before its controls are mounted."""

    def __init__(self, dest: str, value: object) -> None:
        super().__init__()
        self.dest, self.value = dest, value
        self.select_at_mount: bool | None = None

    def compose(self) -> ComposeResult:
        yield FlagDetail(id="detail")

    def on_mount(self) -> None:
        detail = self.query_one(FlagDetail)
        self.select_at_mount = bool(detail.query("#ctl-select"))
        spec = bundled_schema().get(self.dest)
        assert spec is not None
        detail.show(spec, self.value, True)
        # as sglaunch's App does at its first frame (MainScreen.first_frame_shown)
        self.call_after_refresh(detail.mount_controls)


async def test_a_choice_flag_shown_before_its_control_is_mounted_gets_it() -> None:
    spec = bundled_schema().get("load_format")
    assert spec is not None and spec.choices
    value = spec.choices[-1]
    app = _Detail("load_format", value)
    async with app.run_test(size=(100, 20)) as pilot:
        await pilot.pause()
        await pilot.pause()
        assert app.select_at_mount is False  # not in the first frame
        detail = app.query_one(FlagDetail)
        select = detail.query_one("#ctl-select", Select)
        assert select.display and detail.control is select
        assert select.value == value
        assert not detail.query_one("#ctl-switch", Switch).display
        assert not detail.query_one("#ctl-input", Input).display


async def test_every_kind_of_flag_gets_its_control_in_the_app() -> None:
    app = make_app(gpu_spec="H100x8")
    async with app.run_test(size=(160, 50)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        editor = app.main.query_one(FlagEditor)
        detail = editor.query_one(FlagDetail)
        for dest, kind in (
            ("load_format", Select),
            ("tp_size", Input),
            ("trust_remote_code", Switch),
        ):
            assert editor.select(dest, focus=False)
            await pilot.pause()
            assert isinstance(detail.control, kind) and detail.control.display
