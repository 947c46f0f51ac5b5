"""The findings list: errors, warnings and sglang's silent overrides, plus the verdict status."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, OptionList, Static
from textual.widgets.option_list import Option

from sglaunch.display import shorten_lines
from sglaunch.validators.findings import Finding, Severity

MARKS = {
    Severity.ERROR: ("✗", "bold red"),
    Severity.WARNING: ("!", "bold yellow"),
    Severity.OVERRIDE: ("→", "cyan"),
    Severity.INFO: ("·", "dim"),
}


OVERRIDE_CODE = "sglang-override"


def overrides_text(overrides: Sequence[Finding]) -> Text:
    fields = [f.override.field for f in overrides if f.override is not None]
    shown = ", ".join(fields[:4]) + (f", +{len(fields) - 4} more" if len(fields) > 4 else "")
    mark, style = MARKS[Severity.OVERRIDE]
    return Text.assemble(
        (mark + " ", style),
        (f"sglang will also change {len(overrides)} values", "bold"),
        "\n  ",
        shown,
        ("  (enter: see them all)", "dim"),
    )


def finding_text(f: Finding) -> Text:
    mark, style = MARKS[f.severity]
    text = Text.assemble((mark + " ", style), (f.code, "bold"), "\n  ", f.message)
    if f.source != "builtin":
        text.append("  ✓ sglang", style="green dim")
    return text


class FindingsPanel(Vertical):
    BINDINGS = [
        Binding("g", "jump", "Go to flag"),
        Binding("f", "quick_fix", "Apply fix"),
    ]

    class OpenCard(Message):
        def __init__(self, finding: Finding) -> None:
            super().__init__()
            self.finding = finding

    class JumpTo(Message):
        def __init__(self, dest: str) -> None:
            super().__init__()
            self.dest = dest

    class QuickFix(Message):
        def __init__(self, finding: Finding) -> None:
            super().__init__()
            self.finding = finding

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.findings: list[Finding] = []
        # what each line of the list is: a finding, or None for the overrides' summary
        self._rows: list[Finding | None] = []
        self._blocked_by = ""  # why the launch button is off, whole

    class LaunchPressed(Message):
        pass

    class OpenOverrides(Message):
        """The summary line of sglang's own overrides was chosen: show them all."""

    def compose(self) -> ComposeResult:
        yield OptionList(id="finding-list")
        yield Static("", id="verdict")
        # the Launch button and the reason it is off come with the first verdict
        # (set_launch): there is nothing checked to launch before it, and with the flag's
        # controls (FlagDetail) they cost the first frame ~4% of its CPU
        yield Horizontal(id="launch-row")

    def set_launch(self, blocked_by: str | None) -> None:
        """Disable the launch button while an error stands, and say which."""
        self._blocked_by = blocked_by or ""
        row = self.query_one("#launch-row", Horizontal)
        if not row.children:  # the first verdict
            row.mount(
                Button("▶ Launch (ctrl+l)", id="launch-button", variant="success", compact=True),
                Static("", id="launch-reason"),
            )
            self.call_after_refresh(self._show_reason)  # at the width it is laid out at
        button = self.query_one("#launch-button", Button)
        button.disabled = blocked_by is not None
        button.tooltip = blocked_by
        self._show_reason()

    def _show_reason(self) -> None:
        # two lines at most (the CSS's max-height): cut at a word's end with an ellipsis,
        # not mid-word by the border; the button's tooltip has it whole
        for reason in self.query("#launch-reason").results(Static):
            width = reason.size.width
            text = shorten_lines(self._blocked_by, width, 2) if width > 0 else self._blocked_by
            reason.update(Text(text, style="red"))

    def on_resize(self) -> None:
        self.call_after_refresh(self._show_reason)

    @on(Button.Pressed, "#launch-button")
    def _launch(self, event: Button.Pressed) -> None:
        event.stop()
        self.post_message(self.LaunchPressed())

    def show(self, findings: Sequence[Finding]) -> None:
        self.findings = list(findings)
        ol = self.query_one("#finding-list", OptionList)
        keep = ol.highlighted
        ol.clear_options()
        self._rows = []
        if not self.findings:
            ol.add_option(
                Option(
                    Text(
                        "✓ no findings: sglang will accept this launch as far as the rules know",
                        style="green",
                    ),
                    disabled=True,
                )
            )
        else:
            # sglang's own overrides are context, not problems: past one, a single line
            # that opens them all, so errors and warnings stay in view
            oracle_overrides = [f for f in self.findings if f.code == OVERRIDE_CODE]
            rows: list[Finding | None] = [
                f for f in self.findings if len(oracle_overrides) < 2 or f.code != OVERRIDE_CODE
            ]
            if len(oracle_overrides) >= 2:
                rows.append(None)
            self._rows = rows
            ol.add_options(
                [Option(finding_text(f) if f else overrides_text(oracle_overrides)) for f in rows]
            )
            # the cursor stays where it was, or starts on the first (most severe) finding
            ol.highlighted = keep if keep is not None and keep < len(rows) else 0
        errors = sum(1 for f in self.findings if f.severity is Severity.ERROR)
        self.border_title = (
            f"findings ({errors} error{'s' if errors != 1 else ''})" if errors else "findings"
        )
        self.set_class(errors > 0, "-errors")

    def set_verdict(self, text: Text) -> None:
        self.query_one("#verdict", Static).update(text)

    def _current(self) -> Finding | None:
        ol = self.query_one("#finding-list", OptionList)
        if ol.highlighted is None or not self.findings or ol.highlighted >= len(self._rows):
            return None
        return self._rows[ol.highlighted]

    def highlight(self, finding: Finding) -> bool:
        """Put the cursor on a finding's line (a collapsed override: on the summary)."""
        for i, row in enumerate(self._rows):
            if row is finding or (row is None and finding.code == OVERRIDE_CODE):
                self.query_one("#finding-list", OptionList).highlighted = i
                return True
        return False

    @on(OptionList.OptionSelected, "#finding-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        f = self._current()
        if f is not None:
            self.post_message(self.OpenCard(f))
        elif self.findings:
            self.post_message(self.OpenOverrides())

    def action_jump(self) -> None:
        f = self._current()
        if f is not None and f.flags:
            self.post_message(self.JumpTo(f.flags[0]))

    def action_quick_fix(self) -> None:
        f = self._current()
        if f is not None and f.fixes:
            self.post_message(self.QuickFix(f))
