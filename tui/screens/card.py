"""A finding's card: what it means, when it happens, the solutions, and its fixes on number keys."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from sglaunch.validators.findings import Finding, Fix

if TYPE_CHECKING:
    from sglaunch.validators.cards import Card


class CardScreen(ModalScreen[Fix | None]):
    """Dismisses with the fix the user chose, or None."""

    HELP_TITLE = "a finding's card"
    # the body scrolls from here whatever has the focus (a fix button, at first)
    BINDINGS = [
        Binding("escape", "dismiss_none", "Close"),
        Binding("f", "fix(0)", "Apply fix"),
        Binding("1", "fix(0)", "Fix 1", show=False),
        Binding("2", "fix(1)", "Fix 2", show=False),
        Binding("3", "fix(2)", "Fix 3", show=False),
        Binding("g", "goto", "Go to flag"),
        Binding("f1,question_mark", "app.show_keys", "Keys"),
        Binding("up", "scroll(-1)", "Scroll", show=False),
        Binding("down", "scroll(1)", "Scroll", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "Top", show=False),
        Binding("end", "edge(1)", "Bottom", show=False),
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
                if c.source:
                    yield Static(
                        Text(f"Where sglang raises it  {c.ref}", style="bold underline"),
                        classes="card-head",
                    )
                    yield Static(Text("\n".join(c.source)), classes="card-text")
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
            yield Static(Text(self.keys_line(), style="dim"), id="card-keys")
            with Horizontal(id="card-fixes"):
                for i, fix in enumerate(f.fixes[:3]):
                    yield Button(
                        f"{i + 1} {fix.label}",
                        id=f"fix-{i}",
                        variant="primary" if i == 0 else "default",
                    )
                yield Button("Close (esc)", id="card-close")

    def keys_line(self) -> str:
        """The keys that work on this card, and only those."""
        keys = ["↑↓ PgUp PgDn scroll"]
        if self.finding.fixes:
            keys.append("f or 1 applies the first fix")
        if self.finding.flags:
            keys.append("g goes to the flag")
        return " · ".join([*keys, "esc closes"])

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "fix":
            index = parameters[0] if parameters else 0
            return isinstance(index, int) and index < len(self.finding.fixes)
        if action == "goto":
            return bool(self.finding.flags)
        return True

    def _body(self) -> VerticalScroll:
        return self.query_one("#card-body", VerticalScroll)

    def action_scroll(self, step: int) -> None:
        self._body().scroll_relative(y=step, animate=False)

    def action_page(self, step: int) -> None:
        body = self._body()
        body.scroll_relative(y=step * max(body.size.height - 1, 1), animate=False)

    def action_edge(self, end: int) -> None:
        body = self._body()
        if end:
            body.scroll_end(animate=False)
        else:
            body.scroll_home(animate=False)

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
