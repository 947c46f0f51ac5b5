"""The sglaunch app: GPUs, model and every sglang flag on one screen, validated live.

State lives in a UI-free `LaunchSession`; every edit re-runs the built-in rules
at once, and asks sglang's own resolution (the oracle) in a worker thread,
debounced, latest request wins. Workers post messages; `@on` handlers own the
state; nothing blocks the event loop.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Header, Static

from sglaunch.checking import merge_findings
from sglaunch.errors import UserError
from sglaunch.facts.presets import parse_gpu_spec
from sglaunch.flags.launchline import LaunchLine
from sglaunch.flags.schema import FlagSchema
from sglaunch.session import LaunchSession
from sglaunch.validators.cards import generic_card, get_card, match_card
from sglaunch.validators.facts import GpuFacts, GpuMode, ModelFacts
from sglaunch.validators.findings import Finding, Fix, Severity
from tui.collaborators import Collaborators
from tui.screens.card import CardScreen
from tui.screens.dialogs import (
    ConfirmScreen,
    GpuChoice,
    GpuScreen,
    OpenModelScreen,
    PasteScreen,
    ResolvedScreen,
    hf_cached_repos,
)
from tui.widgets.findings import FindingsPanel
from tui.widgets.flag_editor import FlagEditor
from tui.widgets.panels import CommandPreview, GpuPanel, ModelPanel

# --- messages from workers ------------------------------------------------------------


class GpusProbed(Message):
    def __init__(self, gpu: GpuFacts) -> None:
        super().__init__()
        self.gpu = gpu


class ModelLoaded(Message):
    def __init__(self, source: str, facts: ModelFacts, started: float) -> None:
        super().__init__()
        self.source = source
        self.facts = facts
        self.started = started


class ModelFailed(Message):
    def __init__(self, source: str, message: str) -> None:
        super().__init__()
        self.source = source
        self.message = message


class OracleReady(Message):
    def __init__(self, available: bool, reason: str, version: str | None) -> None:
        super().__init__()
        self.available = available
        self.reason = reason
        self.version = version


class SchemaLoaded(Message):
    def __init__(self, schema: FlagSchema) -> None:
        super().__init__()
        self.schema = schema


class OracleVerdict(Message):
    def __init__(
        self, revision: int, answer: Any, findings: list[Finding], error: str | None = None
    ) -> None:
        super().__init__()
        self.revision = revision
        self.answer = answer
        self.findings = findings
        self.error = error


@dataclass
class OracleState:
    phase: str = "starting"  # starting | ready | unavailable
    reason: str = ""
    version: str | None = None
    revision: int = -1  # the session revision the last verdict answered
    answer: Any = None
    findings: tuple[Finding, ...] = ()
    asked: int = -1  # the revision last sent
    fault_revision: int = -1  # the revision whose request got no verdict (fault)


class MainScreen(Screen[None]):
    """The one-screen layout; the App owns the state and fills these widgets."""

    AUTO_FOCUS = "#flag-table"

    def __init__(self, schema: FlagSchema) -> None:
        super().__init__()
        self.schema = schema

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield Static("", id="facts-line")
        with Horizontal(id="body"):
            with Vertical(id="left"):
                gpu = GpuPanel(id="gpu-panel")
                gpu.border_title = "GPUs"
                yield gpu
                model = ModelPanel(id="model-panel")
                model.border_title = "model"
                yield model
            editor = FlagEditor(self.schema, id="flag-editor")
            editor.border_title = (
                f"flags · sglang {self.schema.sglang_version} · {len(self.schema)} flags"
            )
            yield editor
            findings = FindingsPanel(id="findings")
            findings.border_title = "findings"
            yield findings
        yield CommandPreview(id="command")
        yield Footer()


class SglaunchApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "sglaunch"
    SUB_TITLE = "launch assistant for SGLang"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (120, "-wide")]
    BINDINGS = [
        Binding("ctrl+o", "open_model", "Model"),
        Binding("ctrl+g", "pick_gpus", "GPUs"),
        Binding("ctrl+k", "paste", "Paste line"),
        Binding("ctrl+r", "resolved", "Resolved"),
        Binding("ctrl+l", "launch", "Launch"),
        Binding("slash", "search", "Search", show=False),
        Binding("c", "copy_command", "Copy", show=False),
        Binding("y", "toggle_preview", "YAML", show=False),
        Binding("f6", "focus_next_panel", "Next panel", show=False),
    ]

    def __init__(
        self,
        *,
        schema: FlagSchema,
        collaborators: Collaborators,
        model: str | None = "example:minicpm-sala",
        gpu_spec: str | None = None,
        argv: list[str] | None = None,
        env: dict[str, str] | None = None,
        debounce: float = 0.35,
    ) -> None:
        super().__init__()
        self.schema = schema
        self.c = collaborators
        self.initial_model = model
        self.gpu_spec = gpu_spec
        self.debounce = debounce
        placeholder = parse_gpu_spec(gpu_spec) if gpu_spec else parse_gpu_spec("H100x8")
        self.session = LaunchSession(schema=schema, gpu=placeholder, env=dict(env or {}))
        if argv:
            self.session.load_argv(argv)
        self.real_gpus: GpuFacts | None = None
        self.visible_devices: str | None = None
        self.oracle = OracleState(phase="starting" if collaborators.oracle else "unavailable")
        if collaborators.oracle is None:
            self.oracle.reason = "no sglang interpreter configured"
        self.preview_mode = "command"
        self._oracle_timer: Timer | None = None
        self.last_findings: list[Finding] = []
        self.model_error: str | None = None
        self.launched: Any = None
        # keystroke-to-finding timing, read by bench/startup.py
        self.last_refresh_ms: float = 0.0

    # --- lifecycle ----------------------------------------------------------------------

    def on_mount(self) -> None:
        self.push_screen(MainScreen(self.schema))
        self.call_after_refresh(self._start)

    def _start(self) -> None:
        gpu_panel = self.screen.query_one(GpuPanel)
        if self.gpu_spec:
            gpu_panel.show(self.session.gpu)
        else:
            gpu_panel.show(self.session.gpu, probing=True)
            self.probe_gpus()
        if self.initial_model:
            self.load_model(self.initial_model)
        if self.c.oracle is not None:
            self.start_oracle()
        if self.c.schema_loader is not None:
            self.load_schema()
        self.refresh_views()

    def on_unmount(self) -> None:
        if self.c.oracle is not None:
            # closing must never stop the app from exiting
            with contextlib.suppress(Exception):
                self.c.oracle.close()

    # --- workers ------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="gpus")
    def probe_gpus(self) -> None:
        self.post_message(GpusProbed(self.c.gpu_probe()))

    @work(thread=True, exclusive=True, group="model")
    def load_model(self, source: str) -> None:
        started = time.perf_counter()
        try:
            facts = self.c.model_loader(source)
        except UserError as exc:
            self.post_message(ModelFailed(source, exc.message))
            return
        except Exception as exc:  # a config no loader expected: say so, never crash
            self.post_message(
                ModelFailed(source, f"cannot load {source}: {type(exc).__name__}: {exc}")
            )
            return
        self.post_message(ModelLoaded(source, facts, started))

    @work(thread=True, exclusive=True, group="schema")
    def load_schema(self) -> None:
        assert self.c.schema_loader is not None
        try:
            schema = self.c.schema_loader()
        except Exception:
            return  # the bundled schema stays; only help text is missing
        if schema is not None and schema.help_included:
            self.post_message(SchemaLoaded(schema))

    @work(thread=True, exclusive=True, group="oracle-start")
    def start_oracle(self) -> None:
        assert self.c.oracle is not None
        try:
            status = self.c.oracle.start()
            self.post_message(
                OracleReady(bool(status.available), status.reason, status.sglang_version)
            )
        except Exception as exc:
            self.post_message(OracleReady(False, f"{type(exc).__name__}: {exc}", None))

    @work(thread=True, exclusive=True, group="oracle")
    def ask_oracle(
        self, revision: int, argv: list[str], env: dict[str, str], gpu: GpuFacts
    ) -> None:
        assert self.c.oracle is not None
        try:
            answer = self.c.oracle.resolve(argv, env, gpu)
            fault = getattr(answer, "fault", "")
            if fault:
                self.post_message(OracleVerdict(revision, answer, [], error=str(fault)))
                return
            found = self.c.oracle_findings(answer) if self.c.oracle_findings else []
            self.post_message(OracleVerdict(revision, answer, found))
        except Exception as exc:
            self.post_message(
                OracleVerdict(revision, None, [], error=f"{type(exc).__name__}: {exc}")
            )

    # --- messages ---------------------------------------------------------------------

    @on(GpusProbed)
    def _gpus(self, message: GpusProbed) -> None:
        gpu = message.gpu
        if gpu.mode is GpuMode.NVML:
            self.real_gpus = gpu
        self.session.set_gpu(gpu)
        self.screen_query(GpuPanel).show(gpu)
        if gpu.mode is GpuMode.PLANNING and gpu.status:
            self.notify(gpu.status, title="No GPU", timeout=6)
        self.refresh_views()

    @on(ModelLoaded)
    def _model_loaded(self, message: ModelLoaded) -> None:
        self.model_error = None
        self.session.set_model(message.source, message.facts)
        self.refresh_views()

    @on(ModelFailed)
    def _model_failed(self, message: ModelFailed) -> None:
        self.model_error = message.message
        self.screen_query(ModelPanel).show_error(message.source, message.message)
        self.notify(message.message, title="Model not loaded", severity="error", timeout=8)

    @on(SchemaLoaded)
    def _schema_loaded(self, message: SchemaLoaded) -> None:
        # same flags, now with sglang's help text: search covers it too
        self.schema = message.schema
        self.session.schema = message.schema
        self.screen_query(FlagEditor).set_schema(message.schema)

    @on(OracleReady)
    def _oracle_ready(self, message: OracleReady) -> None:
        if message.available:
            self.oracle.phase = "ready"
            self.oracle.version = message.version
            self.schedule_oracle(immediate=True)
        else:
            self.oracle.phase = "unavailable"
            self.oracle.reason = message.reason
        self.refresh_verdict()

    @on(OracleVerdict)
    def _verdict(self, message: OracleVerdict) -> None:
        if message.revision != self.session.revision:
            return  # stale: the flags changed since this was asked
        if message.error:
            self.oracle.phase = "unavailable"
            self.oracle.reason = message.error
            self.oracle.revision = -1
            self.oracle.findings = ()
            # the worker restarts on the next request; try again then
            self.oracle.phase = "ready" if self.c.oracle is not None else "unavailable"
            self.oracle.reason = message.error
            self.refresh_views(ask=False)
            self.screen_query(FindingsPanel).set_verdict(
                Text(f"sglang check failed: {message.error}", style="yellow")
            )
            return
        self.oracle.revision = message.revision
        self.oracle.answer = message.answer
        self.oracle.findings = tuple(message.findings)
        if message.answer is not None and getattr(message.answer, "sglang_version", None):
            self.oracle.version = message.answer.sglang_version
        self.oracle.reason = ""
        self.refresh_views(ask=False)

    # --- editing ----------------------------------------------------------------------

    @on(FlagEditor.Edited)
    def _edited(self, message: FlagEditor.Edited) -> None:
        t0 = time.perf_counter()
        if message.value is None:
            self.session.unset_flag(message.dest)
        else:
            self.session.set_flag(message.dest, message.value)
        self.refresh_views()
        self.last_refresh_ms = (time.perf_counter() - t0) * 1000

    @on(FindingsPanel.OpenCard)
    def _open_card(self, message: FindingsPanel.OpenCard) -> None:
        self.open_card(message.finding)

    @on(FindingsPanel.JumpTo)
    def _jump(self, message: FindingsPanel.JumpTo) -> None:
        self.jump_to_flag(message.dest)

    @on(FindingsPanel.QuickFix)
    def _quick_fix(self, message: FindingsPanel.QuickFix) -> None:
        self.apply_fix(message.finding.fixes[0])

    def apply_fix(self, fix: Fix) -> None:
        self.session.apply_fix(fix)
        self.notify(fix.label, title="Fix applied", timeout=4)
        self.refresh_views()

    def jump_to_flag(self, dest: str) -> None:
        self.screen_query(FlagEditor).select(dest, focus=True)

    def open_card(self, finding: Finding) -> None:
        card = (
            get_card(finding.code)
            or match_card(finding.message)
            or generic_card(finding.message, finding.source)
        )
        before = self.session.command_line(display=True)
        afters = []
        for fix in finding.fixes[:1]:
            probe = LaunchSession(
                schema=self.schema,
                gpu=self.session.gpu,
                model_source=self.session.model_source,
                model=self.session.model,
                flags=fix.apply(self.session.flags),
                env=dict(self.session.env),
                entry=self.session.entry,
                python=self.session.python,
            )
            afters.append(probe.command_line(display=True))
        screen = CardScreen(finding, card, before, afters)

        def done(fix: Fix | None) -> None:
            if fix is not None:
                self.apply_fix(fix)
            elif screen.goto:
                self.jump_to_flag(screen.goto)

        self.push_screen(screen, done)

    # --- views ------------------------------------------------------------------------

    def screen_query(self, kind: type, selector: str | None = None) -> Any:
        """The widget on the main screen (modals sit above it)."""
        target = next(
            (s for s in reversed(self.screen_stack) if isinstance(s, MainScreen)), self.screen
        )
        return target.query_one(selector, kind) if selector else target.query_one(kind)

    def current_findings(self) -> list[Finding]:
        report = self.session.report or self.session.validate()
        if self.oracle.revision == self.session.revision and self.oracle.answer is not None:
            return merge_findings(
                report.findings,
                bool(getattr(self.oracle.answer, "ok", False)),
                list(self.oracle.findings),
            )
        return list(report.findings)

    def refresh_views(self, *, ask: bool = True) -> None:
        """Re-render everything from the session; the built-in verdict is already there."""
        if not any(isinstance(s, MainScreen) for s in self.screen_stack):
            return
        findings = self.current_findings()
        self.last_findings = findings
        self.screen_query(FindingsPanel).show(findings)
        flagged = {d for f in findings if f.severity is Severity.ERROR for d in f.flags}
        self.screen_query(FlagEditor).refresh_values(self.session.flags, flagged)
        if self.session.model is not None and self.model_error is None:
            self.screen_query(ModelPanel).show(
                self.session.model,
                trust_remote_code=bool(self.session.flags.get("trust_remote_code")),
            )
        elif self.session.model is None and self.model_error is None and self.initial_model:
            self.screen_query(ModelPanel).show_loading(self.initial_model)
        self.refresh_preview()
        self.refresh_facts_line()
        self.update_title()
        if ask:
            self.schedule_oracle()
        self.refresh_verdict()

    def refresh_facts_line(self) -> None:
        """The narrow layout's one-line stand-in for the GPU and model panels."""
        m = self.session.model
        parts = [
            self.session.gpu.describe()
            + (" (planning)" if self.session.gpu.mode is GpuMode.PLANNING else "")
        ]
        if m is not None:
            parts.append(m.architecture)
            if m.is_minicpm_sala:
                parts.append(
                    "sparse" * m.has_minicpm_sparse_attention
                    + "+" * (m.has_minicpm_sparse_attention and m.has_lightning_layers)
                    + "lightning" * m.has_lightning_layers
                    or "dense"
                )
        elif self.model_error:
            parts.append("model error: " + self.model_error)
        self.screen_query(Static, "#facts-line").update(Text(" · ".join(parts), style="dim"))

    def update_title(self) -> None:
        errors = sum(1 for f in self.last_findings if f.severity is Severity.ERROR)
        self.sub_title = f"{self.session.model_source or 'no model'} · " + (
            f"{errors} error{'s' if errors != 1 else ''}" if errors else "ready to launch"
        )

    def refresh_preview(self) -> None:
        preview = self.screen_query(CommandPreview)
        if self.preview_mode == "yaml":
            preview.show(self.config_yaml(display=True), mode="yaml")
        else:
            preview.show(self.session.command_line(display=True), mode="command")

    def config_yaml(self, *, display: bool = False) -> str:
        from sglaunch.flags.argv import format_value

        lines = []
        path = self.session.model_path()
        if (
            display
            and self.session.model_source
            and self.session.model_source.startswith("example:")
        ):
            path = f"<{self.session.model_source}>"
        if path:
            lines.append(f"model-path: {path}")
        for dest, value in self.session.flags.items():
            spec = self.schema.get(dest)
            key = (spec.name if spec else "--" + dest).lstrip("-")
            if isinstance(value, bool):
                lines.append(f"{key}: {'true' if value else 'false'}")
            elif isinstance(value, list):
                lines.append(f"{key}: [{', '.join(format_value(v) for v in value)}]")
            else:
                lines.append(f"{key}: {format_value(value)}")
        return "\n".join(lines)

    def refresh_verdict(self) -> None:
        o = self.oracle
        if o.phase == "starting":
            text = Text("⋯ starting sglang's own check (built-in rules are live)", style="dim")
        elif o.phase == "unavailable" or o.fault_revision == self.session.revision:
            text = Text(
                f"sglang check unavailable: {o.reason} — built-in rules only", style="yellow"
            )
        elif o.revision == self.session.revision:
            answer_ok = bool(getattr(o.answer, "ok", False))
            if answer_ok:
                text = Text(
                    f"✓ confirmed by sglang {o.version or ''}: it accepts this launch",
                    style="green",
                )
            else:
                text = Text(
                    f"✗ confirmed by sglang {o.version or ''}: it rejects this launch", style="red"
                )
        else:
            text = Text("⋯ checking with sglang…", style="dim")
        self.screen_query(FindingsPanel).set_verdict(text)

    def schedule_oracle(self, *, immediate: bool = False) -> None:
        if self.c.oracle is None or self.oracle.phase != "ready" or self.session.model is None:
            return
        if self._oracle_timer is not None:
            self._oracle_timer.stop()
        if self.session.issues:
            return  # sglang's parser would stop at those first
        self._oracle_timer = self.set_timer(
            0.001 if immediate else self.debounce, self._send_oracle
        )

    def _send_oracle(self) -> None:
        revision = self.session.revision
        if self.oracle.asked == revision:
            return
        self.oracle.asked = revision
        env = dict(self.session.env)
        if self.visible_devices:
            env["CUDA_VISIBLE_DEVICES"] = self.visible_devices
        self.ask_oracle(revision, self.session.argv(), env, self.session.gpu)
        self.refresh_verdict()

    # --- actions ----------------------------------------------------------------------

    def action_search(self) -> None:
        self.screen_query(FlagEditor).focus_search()

    def action_copy_command(self) -> None:
        text = self.config_yaml() if self.preview_mode == "yaml" else self.session.command_line()
        self.copy_to_clipboard(text)
        self.notify("copied to the clipboard", timeout=3)

    def action_toggle_preview(self) -> None:
        self.preview_mode = "yaml" if self.preview_mode == "command" else "command"
        self.refresh_preview()

    def action_paste(self) -> None:
        def done(line: LaunchLine | None) -> None:
            if line is None:
                return
            model_path, _ = self.session.load_launch_line(line)
            if model_path:
                self.load_model(model_path)
            self.notify(f"loaded {len(self.session.flags)} flags from the launch line", timeout=4)
            self.refresh_views()

        self.push_screen(PasteScreen(), done)

    def action_open_model(self) -> None:
        def done(source: str | None) -> None:
            if source:
                self.initial_model = source
                self.screen_query(ModelPanel).show_loading(source)
                self.load_model(source)

        self.push_screen(
            OpenModelScreen(hf_cached_repos(self.c.hf_cache_dirs), self.session.model_source), done
        )

    def action_pick_gpus(self) -> None:
        def done(choice: GpuChoice | None) -> None:
            if choice is None:
                return
            if choice.preset:
                try:
                    gpu = parse_gpu_spec(choice.preset)
                except UserError as exc:
                    self.notify(exc.message, severity="error")
                    return
                self.visible_devices = None
                self.session.set_gpu(gpu)
            elif choice.visible is not None and self.real_gpus is not None:
                self.visible_devices = choice.visible
                chosen = [int(x) for x in choice.visible.split(",")]
                devices = tuple(d for d in self.real_gpus.devices if d.index in chosen)
                from dataclasses import replace

                self.session.set_gpu(
                    replace(
                        self.real_gpus,
                        devices=devices,
                        status=f"CUDA_VISIBLE_DEVICES={choice.visible}",
                    )
                )
                self.session.set_env("CUDA_VISIBLE_DEVICES", choice.visible)
            self.screen_query(GpuPanel).show(self.session.gpu)
            self.refresh_views()

        self.push_screen(GpuScreen(self.session.gpu, self.real_gpus, self.visible_devices), done)

    def action_resolved(self) -> None:
        if (
            self.oracle.revision == self.session.revision
            and getattr(self.oracle.answer, "changed", None) is not None
        ):
            changes = {k: (v[0], v[1]) for k, v in self.oracle.answer.changed.items()}
            source = f"(from sglang {self.oracle.version or ''}'s own resolution)"
        else:
            report = self.session.report or self.session.validate()
            changes = dict(report.changes)
            source = "(predicted by the built-in rules; sglang's check has not answered)"
        self.push_screen(ResolvedScreen(changes, source))

    def launch_blockers(self) -> list[Finding]:
        return [f for f in self.last_findings if f.severity is Severity.ERROR]

    def action_launch(self) -> None:
        blockers = self.launch_blockers()
        if self.session.model is None:
            self.notify("open a model first (ctrl+o)", title="Cannot launch", severity="error")
            return
        if blockers:
            self.notify(
                f"{blockers[0].message} — fix it first (select the finding, then a fix)",
                title=f"Cannot launch: {len(blockers)} error{'s' if len(blockers) != 1 else ''}",
                severity="error",
                timeout=8,
            )
            return
        warnings = [f for f in self.last_findings if f.severity is Severity.WARNING]
        if warnings:
            body = "\n".join(f"! {w.message}" for w in warnings[:5])

            def go(yes: bool | None) -> None:
                if yes:
                    self.start_launch()

            self.push_screen(ConfirmScreen("Launch with warnings?", body, yes="Launch (y)"), go)
            return
        self.start_launch()

    def start_launch(self) -> None:
        if self.c.server_factory is None:
            self.notify("no server launcher configured", severity="error")
            return
        from tui.screens.monitor import MonitorScreen

        self.push_screen(
            MonitorScreen(self.c.server_factory, self.session, visible=self.visible_devices)
        )

    def action_focus_next_panel(self) -> None:
        self.screen.focus_next()

    # --- command palette ----------------------------------------------------------------

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand(
            "Open model", "Open a model folder, a cached repo or an example", self.action_open_model
        )
        yield SystemCommand(
            "Paste launch line",
            "Load a python -m sglang.launch_server / sglang serve line",
            self.action_paste,
        )
        yield SystemCommand("Choose GPUs", "Pick GPUs or a planning preset", self.action_pick_gpus)
        yield SystemCommand(
            "Show what sglang will change",
            "The resolved view: you asked → sglang will use",
            self.action_resolved,
        )
        yield SystemCommand(
            "Launch server", "Launch sglang with these flags and monitor it", self.action_launch
        )
        yield SystemCommand(
            "Copy launch command", "Copy the launch line to the clipboard", self.action_copy_command
        )
        yield SystemCommand(
            "Toggle YAML preview",
            "Show the flags as sglang --config YAML",
            self.action_toggle_preview,
        )
        for f in self.last_findings:
            if f.fixes:
                yield SystemCommand(
                    f"Fix: {f.fixes[0].label}",
                    f"{f.code}: {f.message}",
                    lambda f=f: self.apply_fix(f.fixes[0]),
                )
