"""A fast single-line row list: thousands of rows, each rendered once and cached.

Textual's DataTable re-renders every visible cell when any cell changes (its
caches are keyed by a table-wide update count), which costs a frame per
keystroke at 500+ rows. This line-API widget caches each row's strip by key,
so changing one value re-renders one row. Reusable: it knows nothing of flags.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget


def text_strip(text: Text, width: int, console) -> Strip:  # type: ignore[no-untyped-def]
    """One line of Rich text as a Strip exactly `width` cells wide."""
    text = text.copy()
    text.truncate(width, overflow="ellipsis", pad=True)
    segments = list(text.render(console))
    if text.style:
        # Text.render leaves the text's own base style to the console
        own = text.style if isinstance(text.style, Style) else Style.parse(text.style)
        segments = [Segment(t, own + s if s else own, c) for t, s, c in segments]
    return Strip(segments).simplify()


class RowHeader(Widget):
    """A fixed line drawn exactly like RowList's rows, so columns line up."""

    DEFAULT_CSS = """
    RowHeader {
        height: 1;
    }
    """

    def __init__(self, text: Callable[[], Text], *, id: str | None = None) -> None:
        super().__init__(id=id)
        # asked at each draw: the columns it lines up with may be settled only then
        self.text = text

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y != 0:
            return Strip.blank(width, self.rich_style)
        strip = text_strip(self.text(), width, self.app.console)
        return Strip(
            [Segment(t, self.rich_style + s if s else self.rich_style, c) for t, s, c in strip],
            strip.cell_length,
        ).adjust_cell_length(width, self.rich_style)


class _LazyTexts(dict[str, Text]):
    """Row texts made on first use: a frame shows ~50 of 500+ rows, so the rest wait."""

    def __init__(self, make: Callable[[str], Text] | None = None) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, key: str) -> Text:
        if self.make is None:
            raise KeyError(key)
        text = self[key] = self.make(key)
        return text


class RowList(ScrollView, can_focus=True):
    """Rows of (key, Text); a cursor; Highlighted/Selected messages."""

    DEFAULT_CSS = """
    RowList {
        background: $surface;
        overflow-x: hidden;
    }
    RowList > .row-list--cursor {
        background: $block-cursor-blurred-background;
    }
    RowList:focus > .row-list--cursor {
        background: $block-cursor-background;
        color: $block-cursor-foreground;
        text-style: bold;
    }
    """

    COMPONENT_CLASSES = {"row-list--cursor"}

    BINDINGS = [
        Binding("up", "cursor_up", "Up", show=False),
        Binding("down", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
        Binding("enter", "select", "Select", show=False),
    ]

    cursor: reactive[int] = reactive(0, always_update=True)

    class Highlighted(Message):
        def __init__(self, row_list: RowList, key: str) -> None:
            super().__init__()
            self.row_list = row_list
            self.key = key

        @property
        def control(self) -> RowList:
            return self.row_list

    class Selected(Message):
        def __init__(self, row_list: RowList, key: str) -> None:
            super().__init__()
            self.row_list = row_list
            self.key = key

        @property
        def control(self) -> RowList:
            return self.row_list

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._keys: list[str] = []
        self._texts: _LazyTexts = _LazyTexts()
        self._index: dict[str, int] = {}
        self._skip: set[str] = set()  # rows the cursor passes over (headings)
        self._cache: dict[tuple[str, int], Strip] = {}

    # --- data -------------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self._keys)

    def row_keys(self) -> list[str]:
        return list(self._keys)

    @property
    def cursor_key(self) -> str | None:
        return self._keys[self.cursor] if 0 <= self.cursor < len(self._keys) else None

    def set_rows(
        self,
        rows: list[tuple[str, Text | None]],
        *,
        skip: set[str] | None = None,
        make: Callable[[str], Text] | None = None,
    ) -> None:
        """The rows, in order; a row whose text is None gets `make(key)` when first drawn."""
        self._keys = [k for k, _ in rows]
        self._texts = _LazyTexts(make)
        self._texts.update((k, t) for k, t in rows if t is not None)
        self._index = {k: i for i, k in enumerate(self._keys)}
        self._skip = set(skip or ())
        self._cache.clear()
        self.virtual_size = Size(0, len(self._keys))
        self.refresh()

    def update_row(self, key: str, text: Text) -> None:
        if key not in self._index:
            return
        self._texts[key] = text
        for cache_key in [c for c in self._cache if c[0] == key]:
            del self._cache[cache_key]
        self.refresh_row(self._index[key])

    def refresh_row(self, index: int) -> None:
        y = index - self.scroll_offset.y
        if 0 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def move_to(self, key: str) -> bool:
        index = self._index.get(key)
        if index is None:
            return False
        self.cursor = index
        # after new rows the scroll range only settles on the next layout: scroll again then
        self.call_after_refresh(self._show_cursor)
        return True

    def _show_cursor(self) -> None:
        self.scroll_to_region(Region(0, self.cursor, 1, 1), animate=False, immediate=True)

    # --- rendering ------------------------------------------------------------------

    @property
    def line_width(self) -> int:
        """Cells a row may use: the content width less the vertical scrollbar."""
        return self.scrollable_content_region.width

    def render_line(self, y: int) -> Strip:
        index = y + self.scroll_offset.y
        width = self.line_width
        base = self.rich_style
        if index >= len(self._keys):
            return Strip.blank(width, base)
        key = self._keys[index]
        cached = self._cache.get((key, width))
        if cached is None:
            cached = text_strip(self._texts[key], width, self.app.console)
            self._cache[(key, width)] = cached
        if index == self.cursor:
            style = base + self.get_component_rich_style("row-list--cursor")
        else:
            style = base
        # the row's own colours win over the list's background
        return Strip(
            [Segment(t, style + s if s else style, c) for t, s, c in cached], cached.cell_length
        ).adjust_cell_length(width, style)

    def on_resize(self, event: events.Resize) -> None:
        # rows never scroll sideways (overflow-x: hidden): only a new width makes them stale,
        # and the strips for the old one go. A virtual size set again would lay out again.
        if event.size.width != self.virtual_size.width:
            self._cache.clear()

    # --- cursor -----------------------------------------------------------------------

    def validate_cursor(self, value: int) -> int:
        return max(0, min(value, len(self._keys) - 1)) if self._keys else 0

    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh_row(old)
        self.refresh_row(new)
        self.scroll_to_region(Region(0, new, 1, 1), animate=False, immediate=True)
        key = self.cursor_key
        if key is not None:
            self.post_message(self.Highlighted(self, key))

    def _step(self, start: int, delta: int) -> int:
        i = start
        while 0 <= i + delta < len(self._keys):
            i += delta
            if self._keys[i] not in self._skip:
                return i
        return start

    def action_cursor_up(self) -> None:
        self.cursor = self._step(self.cursor, -1)

    def action_cursor_down(self) -> None:
        self.cursor = self._step(self.cursor, 1)

    def action_page_up(self) -> None:
        if not self._keys:
            return
        target = max(self.cursor - max(self.size.height - 1, 1), 0)
        self.cursor = target if self._keys[target] not in self._skip else self._step(target, 1)

    def action_page_down(self) -> None:
        if not self._keys:
            return
        target = min(self.cursor + max(self.size.height - 1, 1), len(self._keys) - 1)
        self.cursor = target if self._keys[target] not in self._skip else self._step(target, -1)

    def action_first(self) -> None:
        self.cursor = self._step(-1, 1)

    def action_last(self) -> None:
        self.cursor = self._step(len(self._keys), -1)

    def action_select(self) -> None:
        key = self.cursor_key
        if key is not None and key not in self._skip:
            self.post_message(self.Selected(self, key))

    def on_click(self, event: events.Click) -> None:
        index = event.y + self.scroll_offset.y
        if 0 <= index < len(self._keys) and self._keys[index] not in self._skip:
            if index == self.cursor:
                self.action_select()
            else:
                self.cursor = index
