"""Every sglang flag in one table, searchable, with the right control for the focused flag.

The table is one RowList (each row rendered once, cached); only the
focused flag gets live controls in the detail pane beneath it: a switch for
on/off flags, a select for choices, a validated input for numbers and text,
a list input for flags that take several values, and a reset.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Input, Label, Select, Static, Switch

from sglaunch.flags.values import FlagValueError, display_value, parse_value
from sglaunch.secrets import MASK, is_secret_flag
from sglaunch.tui.groups import Group, build_groups
from sglaunch.tui.widgets.row_list import RowHeader, RowList

if TYPE_CHECKING:
    from sglaunch.flags.schema import FlagSchema, FlagSpec

UNSET = "(sglang decides)"
NAME_MIN, NAME_MAX = 18, 40
# the name matters most: in a narrow table the value and default columns give way first
WIDE_COLUMNS, NARROW_COLUMNS = (14, 10), (10, 8)


def column_widths(total: int) -> tuple[int, int, int]:
    """(name, value, default) widths for a table `total` cells wide."""
    value_w, default_w = WIDE_COLUMNS if total >= 64 else NARROW_COLUMNS
    name_w = max(NAME_MIN, min(NAME_MAX, total - value_w - default_w - 4))
    return name_w, value_w, default_w


def _cell(text: Text | str, width: int) -> Text:
    t = text if isinstance(text, Text) else Text(text)
    t = t.copy()
    t.truncate(width, overflow="ellipsis", pad=True)
    return t


def _header(widths: tuple[int, int, int]) -> Text:
    name_w, value_w, default_w = widths
    text = Text.assemble(
        "  ",
        _cell("flag", name_w),
        " ",
        _cell("value", value_w),
        " ",
        _cell("default", default_w),
        style="bold",
    )
    return text


def _type_words(spec: FlagSpec) -> str:
    if spec.is_bool:
        return "on/off"
    if spec.choices:
        return "choice"
    words = {
        "int": "integer",
        "float": "number",
        "human_int": "integer (32k, 4Ki)",
        "json": "JSON",
        "json_list": "JSON list",
        "json_object": "JSON object",
    }.get(spec.type, "text")
    if spec.is_list:
        return f"list of {words} (space-separated)"
    return words


def _default_text(spec: FlagSpec) -> str:
    if spec.default is None:
        return "—"
    if spec.is_bool:
        return "on" if spec.default else "off"
    return display_value(spec.default)


class FlagEditor(Vertical):
    """The searchable flag table and the focused flag's controls."""

    BINDINGS = [
        Binding("space", "toggle", "Toggle", show=False),
        Binding("delete,backspace", "reset", "Reset flag", show=False),
        Binding("down", "results", "Results", show=False),
    ]

    class Edited(Message):
        """The user set (value) or reset (value is None) a flag."""

        def __init__(self, dest: str, value: Any) -> None:
            super().__init__()
            self.dest = dest
            self.value = value

    def __init__(self, schema: FlagSchema, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.schema = schema
        self.groups: list[Group] = build_groups(schema)
        self.values: Mapping[str, Any] = {}
        self.flagged: set[str] = set()  # flags named by an error
        self.query_text = ""
        self.current: str | None = None
        self.widths = column_widths(64)
        self._settled = False  # the widths are the laid-out table's (not the default)

    def compose(self) -> ComposeResult:
        yield Input(placeholder="Search flags by name or help  ( / )", id="flag-search")
        yield RowHeader(lambda: _header(self._widths_now()), id="flag-header")
        yield RowList(id="flag-table")
        yield FlagDetail(id="flag-detail")

    def on_mount(self) -> None:
        # the rows are set before the first layout and each is made when first drawn, at
        # the laid-out width (_widths_now): the first frame draws the table once
        self.rebuild()

    def _widths_now(self) -> tuple[int, int, int]:
        """The columns for the table's width as laid out (the default until it is)."""
        if not self._settled:
            total = self.query_one("#flag-table", RowList).line_width
            if total > 0:
                self.widths = column_widths(total)
                self._settled = True
        return self.widths

    def on_resize(self) -> None:
        total = self.query_one("#flag-table", RowList).line_width
        if total <= 0:
            return
        widths = column_widths(total)
        if not self._settled:  # nothing drawn yet: the first rows take these
            self.widths, self._settled = widths, True
        elif widths != self.widths:
            self.widths = widths
            self.query_one("#flag-header", RowHeader).refresh()
            self.rebuild()

    def set_schema(self, schema: FlagSchema) -> None:
        """Swap in another schema of the same sglang (e.g. one with help text)."""
        self.schema = schema
        self.groups = build_groups(schema)
        self.rebuild()
        if self.current is not None:
            self.show_detail(self.current)

    # --- table ------------------------------------------------------------------

    def matching(self) -> list[tuple[Group, list[FlagSpec]]]:
        words = [w.lower() for w in self.query_text.split() if w]
        out = []
        for g in self.groups:
            specs = [s for s in g.flags if s.matches(words)]
            if specs:
                out.append((g, specs))
        return out

    def rebuild(self) -> None:
        table = self.query_one("#flag-table", RowList)
        keep = self.current
        rows: list[tuple[str, Text | None]] = []
        headings: set[str] = set()
        specs_of: dict[str, FlagSpec] = {}
        for group, specs in self.matching():
            key = f"group:{group.title}"
            headings.add(key)
            rows.append((key, Text(group.title, style="bold underline")))
            rows.extend((spec.dest, None) for spec in specs)
            specs_of.update((spec.dest, spec) for spec in specs)
        # a flag's row is made when first drawn: the first frame shows ~50 of ~530
        table.set_rows(rows, skip=headings, make=lambda dest: self._row(specs_of[dest]))
        if keep is not None and keep in self._row_keys():
            self.select(keep, focus=False)
        else:
            first = next((k for k in self._row_keys() if not k.startswith("group:")), None)
            if first:
                self.select(first, focus=False)
            else:
                self.current = None  # nothing matches: the keys act on no flag

    def _row_keys(self) -> list[str]:
        return self.query_one("#flag-table", RowList).row_keys()

    def _row(self, spec: FlagSpec) -> Text:
        name_w, value_w, default_w = self._widths_now()
        changed = spec.dest in self.values
        mark = Text("●", style="bold yellow") if changed else Text(" ")
        if spec.dest in self.flagged:
            mark = Text("✗", style="bold red")
        name = Text(spec.name, style="bold" if changed else "")
        if spec.deprecated:
            name.append(" (deprecated)", style="dim")
        shown = display_value(self.values[spec.dest]) if changed else ""
        if changed and is_secret_flag(spec):
            shown = MASK  # an API key or password never shows on screen
        value = Text(shown, style="bold yellow")
        return Text.assemble(
            mark,
            " ",
            _cell(name, name_w),
            " ",
            _cell(value, value_w),
            " ",
            _cell(Text(_default_text(spec), style="dim"), default_w),
        )

    def refresh_values(self, values: Mapping[str, Any], flagged: set[str] | None = None) -> None:
        """New flag values (and error marks): re-render just the rows that changed."""
        old_values, old_flagged = self.values, self.flagged
        self.values = dict(values)
        self.flagged = set(flagged or ())
        table = self.query_one("#flag-table", RowList)
        touched = {
            d for d in set(old_values) | set(self.values) if old_values.get(d) != self.values.get(d)
        }
        touched |= old_flagged ^ self.flagged
        for dest in touched:
            spec = self.schema.get(dest)
            if spec is not None:
                table.update_row(dest, self._row(spec))
        if self.current is not None and self.current in touched:
            self.show_detail(self.current)

    def select(self, dest: str, *, focus: bool = True) -> bool:
        """Move the cursor to a flag (clearing the search if it hides it)."""
        if dest not in self._row_keys():
            if self.schema.get(dest) is None:
                return False
            self.query_one("#flag-search", Input).value = ""
            self.query_text = ""
            self.rebuild()
        table = self.query_one("#flag-table", RowList)
        if not table.move_to(dest):
            return False
        self.current = dest
        self.show_detail(dest)
        if focus:
            table.focus()
        return True

    def show_detail(self, dest: str) -> None:
        spec = self.schema.get(dest)
        if spec is not None:
            self.query_one(FlagDetail).show(spec, self.values.get(dest), dest in self.values)

    @on(Input.Changed, "#flag-search")
    def _search(self, event: Input.Changed) -> None:
        event.stop()
        self.query_text = event.value
        self.rebuild()

    def action_results(self) -> None:
        """Down from the search box goes into the matching flags, as in a browser's list."""
        if self.app.focused is not self.query_one("#flag-search", Input):
            raise SkipAction()
        self.query_one("#flag-table", RowList).focus()

    @on(Input.Submitted, "#flag-search")
    def _search_done(self, event: Input.Submitted) -> None:
        event.stop()
        self.query_one("#flag-table", RowList).focus()

    @on(RowList.Highlighted, "#flag-table")
    def _highlighted(self, event: RowList.Highlighted) -> None:
        event.stop()
        key = event.key
        if key.startswith("group:"):
            return
        self.current = key
        self.show_detail(key)

    @on(RowList.Selected, "#flag-table")
    def _selected(self, event: RowList.Selected) -> None:
        event.stop()
        key = event.key
        if key.startswith("group:"):
            return
        # Enter edits, never toggles: an on/off flag's switch takes the focus, and Space
        # (or Enter there) turns it; a stray Enter must not turn on --trust-remote-code
        self.query_one(FlagDetail).focus_control()

    def _under_cursor(self) -> str | None:
        """The flag a key acts on: the table's cursor now.

        `current` follows the cursor through Highlighted messages, and keys sent faster
        than those are handled (key repeat, Down Down Space in one burst) would otherwise
        act on the row the cursor has already left — the first row is --trust-remote-code.
        """
        key = self.query_one("#flag-table", RowList).cursor_key
        if key is None or key.startswith("group:"):
            return None  # a search that matches nothing: no row, so no flag to change
        if key != self.current:
            self.current = key
            self.show_detail(key)
        return key

    def action_toggle(self) -> None:  # type: ignore[override]  # no attribute: the current flag
        dest = self._under_cursor()
        if dest is None:
            return
        spec = self.schema.get(dest)
        if spec is None:
            return
        if spec.is_bool:
            on_now = bool(self.values.get(spec.dest, spec.default))
            self.post_message(self.Edited(spec.dest, not on_now))
        else:
            self.query_one(FlagDetail).focus_control()

    def action_reset(self) -> None:
        dest = self._under_cursor()
        if dest is not None and dest in self.values:
            self.post_message(self.Edited(dest, None))

    def clear_search(self) -> None:
        """Show every flag again (after a paste or a profile load: none may hide)."""
        search = self.query_one("#flag-search", Input)
        if search.value or self.query_text:
            with search.prevent(Input.Changed):
                search.value = ""
            self.query_text = ""
            self.rebuild()

    def focus_search(self) -> None:
        search = self.query_one("#flag-search", Input)
        search.focus()
        # typing replaces the last query, as in a browser's find bar
        search.select_all()


class FlagDetail(Vertical):
    """The focused flag: what it is, its default, its help, and the control to change it.

    The three kinds of control stay mounted and are shown or hidden: rebuilding
    them on every cursor move raced with their own mounting (a Select's overlay),
    and rebuilding the input while the user types fought the typing. The controls
    and the Reset button are mounted once, when the first frame is up (which shows
    the first flag's name and help, and keeps the controls' line): with the Launch
    button, which comes with the first verdict, they cost that frame ~4% of its CPU.
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.spec: FlagSpec | None = None
        self.control: Switch | Select[Any] | Input | None = None
        self._shown: tuple[Any, bool] = (None, False)  # the value show() was given, and is_set
        self._options_for: str | None = None  # the flag whose choices the Select holds
        self._all_mounted = False

    def compose(self) -> ComposeResult:
        yield Static("", id="flag-title")
        yield Static("", id="flag-help")
        yield Horizontal(id="flag-control")
        yield Label("", id="flag-error")

    def on_mount(self) -> None:
        self.query_one("#flag-error", Label).display = False

    async def mount_controls(self) -> None:
        """The controls, once: called when the first frame is up (MainScreen.first_frame_shown)."""
        if self.query("#ctl-switch"):
            return
        switch = Switch(value=False, classes="flag-value", id="ctl-switch", animate=False)
        select = Select[Any](
            [],
            prompt=UNSET,
            classes="flag-value",
            id="ctl-select",
            allow_blank=True,
            compact=True,
        )
        field = Input(classes="flag-value", id="ctl-input", compact=True)
        switch.display = select.display = field.display = False
        reset = Button(
            "Reset", classes="flag-reset", variant="default", compact=True, disabled=True
        )
        await self.query_one("#flag-control", Horizontal).mount(switch, select, field, reset)
        self._all_mounted = True
        if self.spec is not None:
            self.show(self.spec, *self._shown)  # a flag shown before they were there

    def show(self, spec: FlagSpec, value: Any, is_set: bool) -> None:
        same = self.spec is not None and self.spec.dest == spec.dest
        self.spec = spec
        self._shown = (value, is_set)
        if not same:
            title = Text.assemble(
                (spec.name, "bold"),
                ("  " + " ".join(spec.options[1:]), "dim") if len(spec.options) > 1 else "",
                (f"   {_type_words(spec)} · default {_default_text(spec)}", "dim"),
            )
            if spec.deprecated and spec.new_flag:
                title.append(f" · deprecated: use {spec.new_flag}", style="yellow")
            self.query_one("#flag-title", Static).update(title)
            help_text = (
                spec.help
                or "sglang's help text appears here when sglaunch can read it from your sglang installation."
            )
            self.query_one("#flag-help", Static).update(
                Text(help_text, style="" if spec.help else "dim italic")
            )
            self.query_one("#flag-error", Label).display = False
        control: Switch | Select[Any] | Input | None
        if not self._all_mounted:
            control = None  # the controls come a moment after the first frame
        elif spec.is_bool:
            control = switch = self.query_one("#ctl-switch", Switch)
            with switch.prevent(Switch.Changed):
                switch.value = bool(value) if is_set else bool(spec.default)
        elif spec.choices:
            control = select = self.query_one("#ctl-select", Select)
            with select.prevent(Select.Changed):
                if self._options_for != spec.dest:
                    select.set_options([(str(c), c) for c in spec.choices])
                    self._options_for = spec.dest
                select.value = value if is_set and value in spec.choices else Select.NULL
        else:
            control = field = self.query_one("#ctl-input", Input)
            field.password = is_secret_flag(spec)
            # never rewrite the text under the user's cursor: it is the source of the value
            if not (same and field.has_focus):
                with field.prevent(Input.Changed):
                    field.value = display_value(value) if is_set else ""
                field.placeholder = (
                    "space-separated values"
                    if spec.is_list
                    else f"{_type_words(spec)}; empty = sglang decides"
                )
        for ctl in self.query(".flag-value"):
            ctl.display = ctl is control
        self.control = control
        self._sync_reset(is_set)

    def _sync_reset(self, is_set: bool) -> None:
        for button in self.query(".flag-reset").results(Button):
            button.disabled = not is_set

    def focus_control(self) -> None:
        if self.control is not None:
            self.control.focus()

    def _emit(self, value: Any) -> None:
        if self.spec is not None:
            self.post_message(FlagEditor.Edited(self.spec.dest, value))

    @on(Switch.Changed, "#ctl-switch")
    def _switch(self, event: Switch.Changed) -> None:
        event.stop()
        self._emit(event.value)

    @on(Select.Changed, "#ctl-select")
    def _select(self, event: Select.Changed) -> None:
        event.stop()
        self._emit(None if event.value is Select.NULL else event.value)

    @on(Input.Changed, "#ctl-input")
    def _typed(self, event: Input.Changed) -> None:
        event.stop()
        if self.spec is None:
            return
        err = self.query_one("#flag-error", Label)
        err.display = False
        if not event.value.strip():
            self._emit(None)
            return
        try:
            value = parse_value(self.spec, event.value)
        except FlagValueError as exc:
            # shown, not applied: sglang's parser would stop here
            err.update(Text(str(exc), style="red"))
            err.display = True
            return
        self._emit(value)

    @on(Input.Submitted, "#ctl-input")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.screen.query_one("#flag-table", RowList).focus()

    @on(Button.Pressed, ".flag-reset")
    def _reset(self, event: Button.Pressed) -> None:
        event.stop()
        for field in self.query("#ctl-input").results(Input):
            if field.display:
                with field.prevent(Input.Changed):
                    field.value = ""
        self._emit(None)
