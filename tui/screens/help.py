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


# Textual's own keys worth listing; its scrolling, cursor and text-editing keys are not
TEXTUAL_KEPT = frozenset({"quit", "command_palette"})
# moving about: every list and field has them, and FOCUS_ORDER says how focus moves
NAVIGATION = frozenset(
    {
        "up",
        "down",
        "left",
        "right",
        "home",
        "end",
        "pageup",
        "pagedown",
        "ctrl+pageup",
        "ctrl+pagedown",
        "tab",
        "shift+tab",
    }
)


def _declared_by_sglaunch(node: object, binding: Binding) -> bool:
    """Whether the class that declares `binding` (on `node`'s class or a base) is ours."""
    for cls in type(node).__mro__:
        for declared in cls.__dict__.get("BINDINGS", ()):
            if (
                isinstance(declared, Binding)
                and declared.action == binding.action
                and declared.description == binding.description
            ):
                return cls.__module__.startswith("sglaunch.")
    return False


def meaningful(node: object, binding: Binding) -> bool:
    """A key the help lists: one of sglaunch's own, or quitting and the palette."""
    if binding.key in NAVIGATION:
        return False
    return binding.action in TEXTUAL_KEPT or _declared_by_sglaunch(node, binding)


def key_rows(screen: Screen[object]) -> list[tuple[str, str]]:
    """(keys, what they do) for every meaningful, enabled binding active on `screen`."""
    seen: dict[str, list[str]] = {}
    for active in screen.active_bindings.values():
        binding = active.binding
        if not active.enabled or not binding.description:
            continue
        if not meaningful(active.node, binding):
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
