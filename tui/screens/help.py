"""`?` / F1: the keys that work on the screen underneath, and how focus moves."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, Static

FOCUS_ORDER = (
    "Tab / shift+Tab walk every control; F6 / shift+F6 jump between the flag search, the flag "
    "table and the findings. After a paste or a profile load the findings have the focus, so "
    "Enter opens the first finding's card. Enter on a flag edits it (on an on/off flag it moves "
    "to the switch); only Space toggles."
)


def key_rows(screen: Screen[object]) -> list[tuple[str, str]]:
    """(keys, what they do) for every shown, enabled binding active on `screen`."""
    seen: dict[str, list[str]] = {}
    for active in screen.active_bindings.values():
        binding = active.binding
        if not active.enabled or not binding.description:
            continue
        keys = seen.setdefault(binding.description, [])
        shown = screen.app.get_key_display(binding)
        if shown not in keys:
            keys.append(shown)
    return [(" / ".join(keys), what) for what, keys in seen.items()]


class HelpScreen(ModalScreen[None]):
    BINDINGS = [
        Binding("escape,question_mark,f1", "close", "Close"),
    ]

    def __init__(self, under: Screen[object], title: str) -> None:
        super().__init__()
        self.rows = key_rows(under)
        self.title_text = title

    def compose(self) -> ComposeResult:
        with Vertical(id="help", classes="dialog"):
            yield Static(Text(f"Keys · {self.title_text}", style="bold"), classes="dialog-title")
            with VerticalScroll(id="help-body"):
                table = Table.grid(padding=(0, 2))
                table.add_column(style="bold", no_wrap=True)
                table.add_column()
                for keys, what in self.rows:
                    table.add_row(keys, what)
                yield Static(table)
                yield Static(Text(FOCUS_ORDER, style="dim"), id="help-focus")
            yield Button("Close (esc)", id="help-close")

    def on_mount(self) -> None:
        self.query_one("#help-body", VerticalScroll).focus()

    def on_button_pressed(self) -> None:
        self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)
