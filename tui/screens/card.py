"""A finding's card: what it means, when it happens, the solutions, and its fixes on number keys."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from sglaunch.validators.cards import Card
from sglaunch.validators.findings import Finding, Fix


class CardScreen(ModalScreen[Fix | None]):
    """Dismisses with the fix the user chose, or None."""

    BINDINGS = [
        Binding("escape", "dismiss_none", "Close"),
        Binding("1", "fix(0)", "Fix 1", show=False),
        Binding("2", "fix(1)", "Fix 2", show=False),
        Binding("3", "fix(2)", "Fix 3", show=False),
        Binding("g", "goto", "Go to flag"),
    ]

    def __init__(self, finding: Finding, card: Card, before: str, afters: list[str]) -> None:
        super().__init__()
        self.finding = finding
        self.card = card
        self.before = before
        self.afters = afters  # the user's own launch line after each fix
        self.goto: str | None = None

    def compose(self) -> ComposeResult:
        c, f = self.card, self.finding
        with Vertical(id="card"):
            yield Static(Text.assemble((f.code, "bold"), "  ", (c.title, "bold")), id="card-title")
            with VerticalScroll(id="card-body"):
                yield Static(
                    Text(f.message, style="bold red" if f.is_error else "bold"),
                    classes="card-message",
                )
                if f.detail:
                    yield Static(Text(f.detail, style="italic"), classes="card-detail")
                yield Static(Text("What it means", style="bold underline"), classes="card-head")
                yield Static(c.what, classes="card-text")
                yield Static(Text("When it happens", style="bold underline"), classes="card-head")
                yield Static(c.when, classes="card-text")
                yield Static(Text("Solutions", style="bold underline"), classes="card-head")
                yield Static(
                    "\n".join(f"{i}. {s}" for i, s in enumerate(c.solutions, 1)),
                    classes="card-text",
                )
                yield Static(
                    Text("Example fix (your launch line)", style="bold underline"),
                    classes="card-head",
                )
                example = Text.assemble(
                    ("before  ", "dim"), (self.before or c.example_before, "red")
                )
                if self.afters:
                    example.append("\nafter   ", style="dim")
                    example.append(self.afters[0], style="green")
                elif c.example_after:
                    example.append("\nafter   ", style="dim")
                    example.append(c.example_after, style="green")
                yield Static(example, classes="card-text card-example")
                source = (
                    f.source
                    if f.source != "builtin"
                    else f"built-in rule, mirrors sglang {f.ref or c.ref}"
                )
                yield Static(Text(f"source: {source}", style="dim"), classes="card-source")
                if c.related:
                    yield Static(
                        Text("related: " + ", ".join(c.related), style="dim"), classes="card-source"
                    )
            with Horizontal(id="card-fixes"):
                for i, fix in enumerate(f.fixes[:3]):
                    yield Button(
                        f"{i + 1} {fix.label}",
                        id=f"fix-{i}",
                        variant="primary" if i == 0 else "default",
                    )
                yield Button("Close (esc)", id="card-close")

    def on_mount(self) -> None:
        if self.finding.fixes:
            self.query_one("#fix-0", Button).focus()
        else:
            self.query_one("#card-close", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        bid = event.button.id or ""
        if bid.startswith("fix-"):
            self.action_fix(int(bid.split("-")[1]))
        else:
            self.dismiss(None)

    def action_fix(self, index: int) -> None:
        if index < len(self.finding.fixes):
            self.dismiss(self.finding.fixes[index])

    def action_dismiss_none(self) -> None:
        self.dismiss(None)

    def action_goto(self) -> None:
        if self.finding.flags:
            self.goto = self.finding.flags[0]
        self.dismiss(None)
