"""The editor screen: GPUs, model, every sglang flag, the findings and the launch line.

The screen draws; the App owns the session and the verdict and calls `render` after every
change. Widgets are re-rendered only when what they show changed, so a keystroke reaches
the screen within a frame.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.geometry import Size
from textual.screen import Screen
from textual.widgets import Footer, Header, Static
from textual.widgets._header import HeaderTitle

from sglaunch.display import fit_title
from sglaunch.secrets import Masker, secret_values
from sglaunch.tui.widgets.findings import FindingsPanel
from sglaunch.tui.widgets.flag_editor import FlagDetail, FlagEditor
from sglaunch.tui.widgets.memory import MemoryPanel, one_line
from sglaunch.tui.widgets.panels import CommandPreview, GpuPanel, ModelPanel
from sglaunch.validators.findings import Finding, Severity

if TYPE_CHECKING:
    from sglaunch.flags.schema import FlagSchema
    from sglaunch.program import LaunchPython
    from sglaunch.session import LaunchSession
    from sglaunch.validators.memory.plan import MemoryPlan
    from sglaunch.verdict import Verdict

# keyed by Tone's values (a StrEnum): the verdict module loads after the first frame
TONE_STYLE = {"pending": "dim", "ok": "green", "warn": "yellow", "error": "red"}
# F6 / shift+F6 cycle these, in this order (Tab walks every control in between)
PANELS = ("#flag-search", "#flag-table", "#finding-list")
TITLED = ("#gpu-panel", "#memory-panel", "#model-panel", "#flag-editor", "#findings", "#command")


def flags_title(schema: FlagSchema, version_label: str | None = None) -> str:
    label = version_label or f"sglang {schema.sglang_version}"
    return f"flags · {label} · {len(schema)} flags"


def blocked_reason(session: LaunchSession, verdict: Verdict) -> str | None:
    """Why the launch button is off, or None when it may launch."""
    if session.model is None:
        if session.model_pending:
            return f"loading {session.model_pending}…"
        if not session.model_note:  # a repo sglang will download may launch unread
            return "open a model first (ctrl+o)"
    errors = verdict.errors
    if errors:
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        return f"fix first: {errors[0].message}{more}"
    return None


def title_text(session: LaunchSession) -> str:
    name = session.profile_name or "unsaved launch"
    return f"sglaunch · {name}{' *' if session.dirty else ''}"


def subtitle_text(
    session: LaunchSession, verdict: Verdict, launch: LaunchPython | None = None
) -> str:
    if session.model_pending:
        return f"loading {session.model_pending}…"
    model = session.model
    if model is None and session.model_note and session.model_source:
        errors = len(verdict.errors)
        return f"{session.model_source} · config not read (not in the local cache) · " + (
            f"{errors} error{'s' if errors != 1 else ''}" if errors else "launchable unchecked"
        )
    if model is None:
        if session.model_error:
            return "model not loaded · ctrl+o to open another"
        return "no model loaded · ctrl+o to open one"
    errors = len(verdict.errors)
    return f"{model.source} · " + (
        f"{errors} error{'s' if errors != 1 else ''}" if errors else _ready(launch)
    )


def _ready(launch: LaunchPython | None) -> str:
    """Never a bare "ready to launch" while the Python that launches is in doubt."""
    if launch is None:
        return "ready to launch"
    if launch.concern:
        return f"! {launch.concern} · {launch.line}"
    return f"ready to {launch.line}"


def facts_line(session: LaunchSession, memory: str = "") -> Text:
    """The narrow layout's one-line stand-in for the GPU, memory and model panels."""
    gpu = session.gpu
    # "NVIDIA" says nothing here: the 80 columns are better spent on the memory summary
    described = gpu.describe().replace("NVIDIA ", "")
    from sglaunch.validators.facts import GpuMode  # drawn after the first frame

    parts = [described + (" (planning)" if gpu.mode is GpuMode.PLANNING else "")]
    if memory:  # before the model's details: at 80 columns the line's end is cut off
        parts.append(memory)
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


def breakpoint_classes(app: App[object], size: Size) -> list[str]:
    """The classes Textual's resize gives a screen of `size` (its breakpoint rule)."""
    names = []
    for points, cells in (
        (app.HORIZONTAL_BREAKPOINTS, size.width),
        (app.VERTICAL_BREAKPOINTS, size.height),
    ):
        for at, name in sorted(points or (), reverse=True):
            if cells >= at:
                names.append(name)
                break
    return names


class MainScreen(Screen[None]):
    """The one-screen layout of the editor."""

    AUTO_FOCUS = "#flag-table"

    def __init__(self, schema: FlagSchema) -> None:
        super().__init__()
        self.schema = schema
        self._shown = _Shown()
        # panel titles as set (full) and as shown (fitted to the panel's width)
        self._full_titles: dict[str, str] = {}
        self._fitted_titles: dict[str, str] = {}
        self._facts = Text()  # the narrow layout's facts line, whole
        self._facts_keep = 1

    def compose(self) -> ComposeResult:
        # the classes the first resize would set, set before the first layout: the first
        # frame is then styled and laid out once, not again when that resize arrives
        self.add_class(*breakpoint_classes(self.app, self.app.size))
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
        self.query_one(MemoryPanel).show(plan, verdict.findings)
        memory = one_line(plan, verdict.findings) if plan is not None else ""
        self._facts = facts_line(session, memory)
        self._facts_keep = 2 if memory else 1  # the GPUs and the memory summary stay
        self.query_one("#facts-line", Static).update(self._facts)
        findings.set_verdict(Text(verdict.status, style=TONE_STYLE[verdict.tone]))
        findings.set_launch(blocked_reason(session, verdict))
        self.fit_titles()

    def render_model(self, session: LaunchSession) -> None:
        trust = bool(session.flags.get("trust_remote_code"))
        key = (
            id(session.model),
            session.model_pending,
            session.model_error,
            session.model_note,
            trust,
        )
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
            panel.show(session.model, trust_remote_code=trust, note=session.model_note)
        elif session.model_note:
            panel.show_not_cached(session.model_note)
        else:
            panel.show_empty()

    async def first_frame_shown(self) -> None:
        """What the first frame leaves out, now that it is up: the focused flag's controls."""
        await self.query_one(FlagDetail).mount_controls()

    def render_gpus(self, session: LaunchSession, *, probing: bool = False) -> None:
        self.query_one(GpuPanel).show(session.gpu, probing=probing)

    def set_flags_title(self, text: str) -> None:
        self.query_one(FlagEditor).border_title = text
        self.fit_titles()

    def on_mount(self) -> None:
        self.watch(self.app, "sub_title", lambda: self.fit_titles(), init=False)
        self.watch(self.app, "title", lambda: self.fit_titles(), init=False)

    def on_resize(self) -> None:
        self.call_after_refresh(self.fit_titles)

    def _fit_header(self) -> None:
        """The header's subtitle within the header: its last (least important) ` · ` parts
        go first, so no word is cut."""
        title, full = self.app.title, self.app.sub_title
        width = self.query_one(HeaderTitle).size.width - len(title) - len(" — ")
        if width <= 0 or len(full) <= width:
            self.sub_title = None  # the app's, whole
        else:
            self.sub_title = fit_title(full, width)

    def fit_titles(self) -> None:
        """Each panel's title within its border: Textual cuts a long one mid-word, so the
        less important ` · ` parts go first, then words, with an ellipsis."""
        self._fit_header()
        facts = self.query_one("#facts-line", Static)
        if facts.size.width > 0:  # shown (narrow): its last parts go first, then words
            fitted = fit_title(self._facts.plain, facts.size.width, keep=self._facts_keep)
            facts.update(self._facts if fitted == self._facts.plain else Text(fitted, "dim"))
        for selector in TITLED:
            widget = self.query_one(selector)
            title = widget.border_title
            if not title or "[" in title:  # markup: left to Textual
                continue
            if title == self._fitted_titles.get(selector):
                title = self._full_titles.get(selector, title)  # still the one fitted
            width = widget.outer_size.width - 4  # the corners and a space each side
            if width <= 0:
                continue
            shown = fit_title(title, width)
            self._full_titles[selector] = title
            self._fitted_titles[selector] = shown
            if shown != widget.border_title:
                widget.border_title = shown
