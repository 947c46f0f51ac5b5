"""The editor screen: GPUs, model, every sglang flag, the findings and the launch line.

The screen draws; the App owns the session and the verdict and calls `render` after every
change. Widgets are re-rendered only when what they show changed, so a keystroke reaches
the screen within a frame.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from sglaunch.flags.schema import FlagSchema
from sglaunch.secrets import Masker, secret_values
from sglaunch.session import LaunchSession
from sglaunch.tui.widgets.findings import FindingsPanel
from sglaunch.tui.widgets.flag_editor import FlagEditor
from sglaunch.tui.widgets.memory import MemoryPanel, one_line
from sglaunch.tui.widgets.panels import CommandPreview, GpuPanel, ModelPanel
from sglaunch.validators.facts import GpuMode
from sglaunch.validators.findings import Finding, Severity
from sglaunch.verdict import Tone, Verdict

if TYPE_CHECKING:
    from sglaunch.validators.memory.plan import MemoryPlan

TONE_STYLE = {Tone.PENDING: "dim", Tone.OK: "green", Tone.WARN: "yellow", Tone.ERROR: "red"}
# F6 / shift+F6 cycle these, in this order (Tab walks every control in between)
PANELS = ("#flag-search", "#flag-table", "#finding-list")


def flags_title(schema: FlagSchema, version_label: str | None = None) -> str:
    label = version_label or f"sglang {schema.sglang_version}"
    return f"flags · {label} · {len(schema)} flags"


def blocked_reason(session: LaunchSession, verdict: Verdict) -> str | None:
    """Why the launch button is off, or None when it may launch."""
    if session.model is None:
        if session.model_pending:
            return f"loading {session.model_pending}…"
        return "open a model first (ctrl+o)"
    errors = verdict.errors
    if errors:
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        return f"fix first: {errors[0].message}{more}"
    return None


def title_text(session: LaunchSession) -> str:
    name = session.profile_name or "unsaved launch"
    return f"sglaunch · {name}{' *' if session.dirty else ''}"


def subtitle_text(session: LaunchSession, verdict: Verdict) -> str:
    if session.model_pending:
        return f"loading {session.model_pending}…"
    model = session.model
    if model is None:
        if session.model_error:
            return "model not loaded · ctrl+o to open another"
        return "no model loaded · ctrl+o to open one"
    errors = len(verdict.errors)
    return f"{model.source} · " + (
        f"{errors} error{'s' if errors != 1 else ''}" if errors else "ready to launch"
    )


def facts_line(session: LaunchSession) -> Text:
    """The narrow layout's one-line stand-in for the GPU and model panels."""
    gpu = session.gpu
    parts = [gpu.describe() + (" (planning)" if gpu.mode is GpuMode.PLANNING else "")]
    m = session.model
    if m is not None:
        parts.append(m.architecture)
        if m.is_minicpm_sala:
            kinds = [
                k
                for k, on in (
                    ("sparse", m.has_minicpm_sparse_attention),
                    ("lightning", m.has_lightning_layers),
                )
                if on
            ]
            parts.append("+".join(kinds) or "dense")
    elif session.model_pending:
        parts.append(f"loading {session.model_pending}…")
    elif session.model_error:
        parts.append("model error: " + session.model_error)
    return Text(" · ".join(parts), style="dim")


def shown_findings(session: LaunchSession, verdict: Verdict) -> list[Finding]:
    """The findings as the screen shows them: a secret sglang echoed back is masked."""
    values = secret_values(session.argv(), session.schema)
    if not values:
        return list(verdict.findings)
    masker = Masker(values, session.schema, by_position=False)
    return [
        replace(f, message=masker(f.message), detail=masker(f.detail)) for f in verdict.findings
    ]


@dataclass
class _Shown:
    """What the widgets last drew, to skip re-rendering what did not change."""

    findings: tuple[object, ...] = ()
    model: tuple[object, ...] = ()
    preview: tuple[str, str] = ("", "")


class MainScreen(Screen[None]):
    """The one-screen layout of the editor."""

    AUTO_FOCUS = "#flag-table"

    def __init__(self, schema: FlagSchema) -> None:
        super().__init__()
        self.schema = schema
        self._shown = _Shown()

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield Static("", id="facts-line")
        with Horizontal(id="body"):
            with Vertical(id="left"):
                gpu = GpuPanel(id="gpu-panel")
                gpu.border_title = "GPUs"
                yield gpu
                yield MemoryPanel(id="memory-panel")
                model = ModelPanel(id="model-panel")
                model.border_title = "model"
                yield model
            editor = FlagEditor(self.schema, id="flag-editor")
            editor.border_title = flags_title(self.schema)
            yield editor
            findings = FindingsPanel(id="findings")
            findings.border_title = "findings"
            yield findings
        yield CommandPreview(id="command")
        yield Footer()

    # --- drawing --------------------------------------------------------------------

    def render_all(
        self,
        session: LaunchSession,
        verdict: Verdict,
        *,
        preview: tuple[str, str],
        plan: MemoryPlan | None = None,
    ) -> None:
        """Every widget from the session, its verdict and its memory plan."""
        findings = self.query_one(FindingsPanel)
        if verdict.findings != self._shown.findings:
            findings.show(shown_findings(session, verdict))
            self._shown.findings = verdict.findings
        flagged = {d for f in verdict.findings if f.severity is Severity.ERROR for d in f.flags}
        self.query_one(FlagEditor).refresh_values(session.flags, flagged)
        self.render_model(session)
        if preview != self._shown.preview:
            self._shown.preview = preview
            self.query_one(CommandPreview).show(preview[1], mode=preview[0])
        self.query_one(MemoryPanel).show(plan)
        line = facts_line(session)
        if plan is not None:
            line.append(" · " + one_line(plan))
        self.query_one("#facts-line", Static).update(line)
        findings.set_verdict(Text(verdict.status, style=TONE_STYLE[verdict.tone]))
        findings.set_launch(blocked_reason(session, verdict))

    def render_model(self, session: LaunchSession) -> None:
        trust = bool(session.flags.get("trust_remote_code"))
        key = (id(session.model), session.model_pending, session.model_error, trust)
        if key == self._shown.model:
            return
        self._shown.model = key
        panel = self.query_one(ModelPanel)
        if session.model_pending:
            panel.show_loading(session.model_pending)
        elif session.model_error:
            kept = session.model.source if session.model is not None else None
            panel.show_error(session.model_error, kept=kept)
        elif session.model is not None:
            panel.show(session.model, trust_remote_code=trust)
        else:
            panel.show_empty()

    def render_gpus(self, session: LaunchSession, *, probing: bool = False) -> None:
        self.query_one(GpuPanel).show(session.gpu, probing=probing)

    def set_flags_title(self, text: str) -> None:
        self.query_one(FlagEditor).border_title = text
