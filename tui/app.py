"""The sglaunch app: GPUs, model and every sglang flag on one screen, validated live.

State lives in a UI-free `LaunchSession`; every edit re-runs the built-in rules
at once, and asks sglang's own resolution (the oracle) in a worker thread,
debounced, latest request wins. Workers post messages; `@on` handlers own the
state; nothing blocks the event loop.
"""

from __future__ import annotations

import contextlib
import os
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
from sglaunch.facts.model import hf_cached_repos
from sglaunch.facts.presets import parse_gpu_spec
from sglaunch.flags.launchline import LaunchLine
from sglaunch.flags.schema import FlagSchema
from sglaunch.session import LaunchSession
from sglaunch.tui.collaborators import Collaborators
from sglaunch.tui.screens.card import CardScreen
from sglaunch.tui.screens.dialogs import (
    ConfirmScreen,
    GpuChoice,
    GpuScreen,
    OpenModelScreen,
    PasteScreen,
    ResolvedScreen,
)
from sglaunch.tui.widgets.findings import FindingsPanel
from sglaunch.tui.widgets.flag_editor import FlagEditor
from sglaunch.tui.widgets.panels import CommandPreview, GpuPanel, ModelPanel
from sglaunch.validators.cards import card_for
from sglaunch.validators.facts import GpuFacts, GpuMode, ModelFacts
from sglaunch.validators.findings import Finding, Fix, Severity

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


class CachedModels(Message):
    def __init__(self, repos: list[str]) -> None:
        super().__init__()
        self.repos = repos


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
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-medium"), (150, "-wide")]
    # priority: a text field (ctrl+k deletes to the end there) must not swallow them;
    # check_action lets the key through to the field when the editor is not on screen
    BINDINGS = [
        Binding("ctrl+o", "open_model", "Model", priority=True),
        Binding("ctrl+g", "pick_gpus", "GPUs", priority=True),
        Binding("ctrl+k", "paste", "Paste line", priority=True),
        Binding("ctrl+r", "resolved", "Resolved", priority=True),
        Binding("ctrl+l", "launch", "Launch", priority=True),
        Binding("ctrl+s", "save_profile", "Save", priority=True),
        Binding("f2", "profiles", "Profiles", priority=True),
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
        profile: str | None = None,
    ) -> None:
        super().__init__()
        self.initial_profile = profile
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
        # timings read by bench/startup.py
        self.last_refresh_ms: float = 0.0
        self.last_edit_done_at: float = 0.0
        self.monitor_screen: Any = None
        self.profile_name: str | None = None
        self.loaded_profile: Any = None  # the Profile as loaded/saved (its revision guards saves)
        self.chosen_preset: str | None = gpu_spec
        self._saved_snapshot: tuple[Any, ...] | None = None
        self.first_frame_at: float | None = None
        self._model_shown: tuple[Any, ...] | None = None
        self._model_wanted: str | None = None

    # --- lifecycle ----------------------------------------------------------------------

    def get_default_screen(self) -> Screen[Any]:
        # the main screen is the default one: no empty screen is composed first
        return MainScreen(self.schema)

    def on_mount(self) -> None:
        # the first frame shows the editor; probing GPUs and loading the model follow
        self.call_after_refresh(self._start)

    def _start(self) -> None:
        # runs after the first refresh: the editor with every flag is on screen
        self.first_frame_at = time.time()
        gpu_panel = self.screen.query_one(GpuPanel)
        if self.gpu_spec:
            gpu_panel.show(self.session.gpu)
        else:
            gpu_panel.show(self.session.gpu, probing=True)
            self.probe_gpus()
        if self.initial_profile:
            asked_model = self.initial_model
            self.open_profile(self.initial_profile)
            if asked_model:  # `--model` beats the profile's model
                self.session.model_source = asked_model
                self.initial_model = asked_model
                self.load_model(asked_model)
        elif self.initial_model:
            self.load_model(self.initial_model)
        self._saved_snapshot = (
            self.snapshot() if self.initial_profile is None else self._saved_snapshot
        )
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

    def load_model(self, source: str) -> None:
        # only the latest request may land: an earlier, slower load is dropped when it ends
        self._model_wanted = source
        self._load_model(source)

    @work(thread=True, exclusive=True, group="model")
    def _load_model(self, source: str) -> None:
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
        if self.chosen_preset:
            # a machine chosen to plan for (a profile's preset, or ctrl+g) stays chosen;
            # the GPUs found here are offered in ctrl+g
            self.screen_query(GpuPanel).show(self.session.gpu)
            return
        self.session.set_gpu(gpu)
        self.screen_query(GpuPanel).show(gpu)
        if gpu.mode is GpuMode.PLANNING and gpu.status:
            self.notify(gpu.status, title="No GPU", timeout=6)
        self.refresh_views()

    @on(ModelLoaded)
    def _model_loaded(self, message: ModelLoaded) -> None:
        if message.source != self._model_wanted:
            return
        self.model_error = None
        self.session.set_model(message.source, message.facts)
        snap = self._saved_snapshot
        if snap is not None and snap[0] is None:
            # the model the launch started with finished loading: not an edit
            self._saved_snapshot = (message.source, *snap[1:])
        self.refresh_views()

    @on(ModelFailed)
    def _model_failed(self, message: ModelFailed) -> None:
        if message.source != self._model_wanted:
            return
        self.model_error = message.message
        kept = self.session.model.source if self.session.model is not None else None
        self.screen_query(ModelPanel).show_error(message.source, message.message, kept=kept)
        note = f"\nstill checking against {kept}" if kept else ""
        self.notify(message.message + note, title="Model not loaded", severity="error", timeout=8)

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
            # no verdict for this revision; the worker restarts on the next request
            self.oracle.fault_revision = message.revision
            self.oracle.reason = message.error
            self.oracle.revision = -1
            self.oracle.findings = ()
            self.refresh_views(ask=False)
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
        current = self.session.flags.get(message.dest)
        if (message.value is None and message.dest not in self.session.flags) or (
            message.value is not None
            and message.dest in self.session.flags
            and current == message.value
        ):
            return  # nothing changed: no re-check, no oracle request
        if message.value is None:
            self.session.unset_flag(message.dest)
        else:
            self.session.set_flag(message.dest, message.value)
        self.refresh_views()
        self.last_edit_done_at = time.perf_counter()
        self.last_refresh_ms = (self.last_edit_done_at - t0) * 1000

    @on(FindingsPanel.OpenCard)
    def _open_card(self, message: FindingsPanel.OpenCard) -> None:
        self.open_card(message.finding)

    @on(FindingsPanel.OpenOverrides)
    def _open_overrides(self) -> None:
        self.action_resolved()

    @on(FindingsPanel.JumpTo)
    def _jump(self, message: FindingsPanel.JumpTo) -> None:
        self.jump_to_flag(message.dest)

    @on(FindingsPanel.LaunchPressed)
    def _launch_pressed(self) -> None:
        self.action_launch()

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
        card = card_for(finding.code, finding.message, finding.source)
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
        # one compositor pass for all the widgets a change touches
        with self.batch_update():
            self._refresh_views(ask)

    def _refresh_views(self, ask: bool) -> None:
        findings = self.current_findings()
        # widgets are re-rendered only when what they show changed: a keystroke
        # must reach the screen within a frame
        if findings != self.last_findings:
            self.screen_query(FindingsPanel).show(findings)
        self.last_findings = findings
        flagged = {d for f in findings if f.severity is Severity.ERROR for d in f.flags}
        self.screen_query(FlagEditor).refresh_values(self.session.flags, flagged)
        model_key = (
            id(self.session.model),
            self.model_error,
            bool(self.session.flags.get("trust_remote_code")),
        )
        if model_key != self._model_shown:
            self._model_shown = model_key
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
        self.screen_query(FindingsPanel).set_launch(self.launch_blocked_reason())

    def launch_blocked_reason(self) -> str | None:
        if self.session.model is None:
            return "open a model first (ctrl+o)"
        errors = self.launch_blockers()
        if errors:
            more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
            return f"fix first: {errors[0].message}{more}"
        return None

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

    # --- profiles ---------------------------------------------------------------------

    def store(self) -> Any:
        from sglaunch.profiles import ProfileStore

        return ProfileStore(self.c.profile_dir)

    def snapshot(self) -> tuple[Any, ...]:
        """What a saved profile holds, to tell whether there are unsaved changes."""
        s = self.session
        # the GPUs the user chose (a preset, a subset), not what the probe found
        return (
            s.model_source,
            repr(sorted(s.flags.items())),
            repr(sorted(s.env.items())),
            self.visible_devices,
            self.chosen_preset,
            s.entry,
        )

    @property
    def dirty(self) -> bool:
        return self._saved_snapshot is not None and self.snapshot() != self._saved_snapshot

    def profile_from_session(self, name: str) -> Any:
        from dataclasses import replace
        from datetime import UTC, datetime

        from sglaunch import SGLANG_VERSION
        from sglaunch.profiles import GpuSelection, Profile, Validated
        from sglaunch.secrets import default_secret_env, is_secret_flag

        s = self.session
        flags = {k: v for k, v in s.flags.items() if k != "model_path"}
        base = (
            self.loaded_profile
            if self.loaded_profile is not None and self.loaded_profile.name == name
            else None
        )
        secrets = dict(base.secrets) if base is not None else {}
        for dest in list(flags):
            spec = self.schema.get(dest)
            if spec is not None and is_secret_flag(spec):
                # never stored as text: a reference to the variable that holds it
                secrets[dest] = secrets.get(dest) or default_secret_env(dest)
                del flags[dest]
        env = {k: v for k, v in s.env.items() if k != "CUDA_VISIBLE_DEVICES"}
        gpus = GpuSelection(cuda_visible_devices=self.visible_devices, preset=self.chosen_preset)
        validated = Validated(
            sglang_version=self.oracle.version or SGLANG_VERSION,
            gpu_names=[d.name for d in s.gpu.devices],
            gpu_count=s.gpu.count,
            at=datetime.now(UTC),
        )
        profile = Profile(
            name=name,
            model=s.model_source,
            flags=flags,
            env=env,
            secrets=secrets,
            gpus=gpus,
            sglang_python=base.sglang_python if base is not None else None,
            entry=s.entry,  # type: ignore[arg-type]
            notes=base.notes if base is not None else "",
            validated=validated,
        )
        return replace(profile, revision=base.revision) if base is not None else profile

    def open_profile(self, name: str) -> None:
        try:
            profile = self.store().load(name)
        except UserError as exc:
            self.notify(exc.message, title="Profile not loaded", severity="error", timeout=8)
            return
        self.apply_profile(profile)

    def apply_profile(self, profile: Any) -> None:
        s = self.session
        s.flags = dict(profile.flags)
        s.env = dict(profile.env)
        s.entry = profile.entry
        if profile.sglang_python:
            s.python = profile.sglang_python
        s.issues = []
        if profile.gpus.preset:
            try:
                s.gpu = parse_gpu_spec(profile.gpus.preset)
                self.chosen_preset = profile.gpus.preset
            except UserError as exc:
                self.notify(exc.message, severity="warning")
        self.visible_devices = profile.gpus.cuda_visible_devices
        if self.visible_devices:
            s.env["CUDA_VISIBLE_DEVICES"] = self.visible_devices
        self.profile_name = profile.name
        self.loaded_profile = profile
        s.revision += 1
        s.validate()
        if profile.model:
            self.initial_model = profile.model
            s.model_source = profile.model
            self.load_model(profile.model)
        self._saved_snapshot = self.snapshot()
        self.screen_query(GpuPanel).show(s.gpu)
        self.refresh_views()

    def save_profile(self, name: str) -> bool:
        from sglaunch.profiles import validate_name

        try:
            validate_name(name)
            profile = self.profile_from_session(name)
            if self.loaded_profile is None or self.loaded_profile.name != name:
                from dataclasses import replace

                profile = replace(profile, revision=None)  # "save as": a new file
            saved = self.store().save(profile)
        except UserError as exc:
            self.notify(exc.message, title="Not saved", severity="error", timeout=10)
            return False
        self.loaded_profile = saved
        self.profile_name = saved.name
        self._saved_snapshot = self.snapshot()
        for dest, variable in saved.secrets.items():
            if dest in self.session.flags:  # typed in: the profile keeps only a reference
                self.notify(
                    f"{self.schema.cli_name(dest)} is saved as a reference: "
                    f"export {variable}=<the value> before launching",
                    timeout=8,
                )
        self.notify(f"saved profile {saved.name}", timeout=4)
        self.update_title()
        return True

    def action_save_profile(self) -> None:
        if self.profile_name is None:
            from sglaunch.profiles.profile import name_from_model

            source = self.session.model_source
            self.action_profiles(save_as=name_from_model(source) if source else "")
            return
        self.save_profile(self.profile_name)

    def action_profiles(self, save_as: str | None = None) -> None:
        from sglaunch.tui.screens.profiles import ProfileAction, ProfilesScreen

        store = self.store()

        def diff_with(name: str) -> list[Any]:
            from sglaunch.profiles import diff

            return diff(store.load(name), self.profile_from_session(name), self.schema)

        def done(action: ProfileAction | None) -> None:
            if action is None:
                return
            if action.kind == "load":
                if self.dirty:
                    self.push_screen(
                        ConfirmScreen(
                            "Discard unsaved changes?",
                            f"Loading {action.name} replaces the launch you are editing.",
                            yes="Load (y)",
                        ),
                        lambda yes: self.open_profile(action.name) if yes else None,
                    )
                else:
                    self.open_profile(action.name)
            elif action.kind == "save_as":
                self.save_profile(action.name)
            elif action.kind == "delete":

                def delete(yes: bool | None) -> None:
                    if not yes:
                        return
                    try:
                        backup = store.delete(action.name)
                    except UserError as exc:
                        self.notify(exc.message, severity="error")
                        return
                    if self.profile_name == action.name:
                        self.profile_name = None
                        self.loaded_profile = None
                    self.notify(
                        f"deleted {action.name} (its last version is in {backup})", timeout=6
                    )
                    self.update_title()

                self.push_screen(
                    ConfirmScreen(
                        f"Delete profile {action.name}?",
                        "Its last version stays in a .bak file.",
                        yes="Delete (y)",
                    ),
                    delete,
                )

        self.push_screen(
            ProfilesScreen(store.list(), self.profile_name, diff_with, save_as=save_as), done
        )

    def update_title(self) -> None:
        name = self.profile_name or "unsaved launch"
        self.title = f"sglaunch · {name}{' *' if self.dirty or self.profile_name is None else ''}"
        errors = len(self.launch_blockers())
        model = self.session.model
        if model is None:
            self.sub_title = "no model loaded · ctrl+o to open one"
            return
        self.sub_title = f"{model.source} · " + (
            f"{errors} error{'s' if errors != 1 else ''}" if errors else "ready to launch"
        )

    def refresh_preview(self) -> None:
        preview = self.screen_query(CommandPreview)
        if self.preview_mode == "yaml":
            preview.show(self.config_yaml(), mode="yaml")
        else:
            preview.show(self.session.command_line(display=True), mode="command")

    def config_yaml(self) -> str:
        """The launch as sglang `--config` YAML: the same export as `profiles export`."""
        from sglaunch.profiles import to_yaml

        try:
            profile = self.profile_from_session(self.profile_name or "launch")
            return to_yaml(profile, schema=self.schema).text.rstrip("\n")
        except UserError as exc:
            return f"# cannot write this launch as YAML: {exc.message}"

    def refresh_verdict(self) -> None:
        o = self.oracle
        if o.phase == "starting":
            text = Text("⋯ starting sglang's own check (built-in rules are live)", style="dim")
        elif o.phase == "unavailable":
            text = Text(
                f"sglang check unavailable: {o.reason} — built-in rules only", style="yellow"
            )
        elif o.fault_revision == self.session.revision:
            text = Text(f"sglang check failed: {o.reason} — built-in rules only", style="yellow")
        elif o.revision == self.session.revision:
            answer_ok = bool(getattr(o.answer, "ok", False))
            # errors sglang's resolution cannot see: they fail later, while the server starts
            later = sum(
                1
                for f in self.last_findings
                if f.severity is Severity.ERROR and f.source == "builtin"
            )
            if answer_ok and later:
                text = Text(
                    f"! sglang {o.version or ''} accepts these flags; "
                    f"{later} error{'s' if later != 1 else ''} would stop the launch later",
                    style="yellow",
                )
            elif answer_ok:
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

    # these act on the editor: over the monitor or a dialog they would act out of sight
    EDITOR_ACTIONS = frozenset(
        {
            "open_model",
            "pick_gpus",
            "paste",
            "resolved",
            "launch",
            "save_profile",
            "profiles",
            "search",
            "copy_command",
            "toggle_preview",
            "focus_next_panel",
        }
    )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return action not in self.EDITOR_ACTIONS or isinstance(self.screen, MainScreen)

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
        self._list_cached_models()

    @work(thread=True, exclusive=True, group="hf-cache")
    def _list_cached_models(self) -> None:
        # the cache can be large or on a network disk: list it off the event loop
        self.post_message(CachedModels(hf_cached_repos(self.c.hf_cache_dirs)))

    @on(CachedModels)
    def _open_model_dialog(self, message: CachedModels) -> None:
        def done(source: str | None) -> None:
            if source:
                self.initial_model = source
                self.load_model(source)
                self.refresh_views()

        self.push_screen(OpenModelScreen(message.repos, self.session.model_source), done)

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
                self.chosen_preset = choice.preset
                self.session.set_env("CUDA_VISIBLE_DEVICES", None)  # a preset has no devices
                self.session.set_gpu(gpu)
            elif choice.visible is not None and self.real_gpus is not None:
                self.visible_devices = choice.visible
                self.chosen_preset = None
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
            from sglaunch.oracle.findings import meaningful_changes

            answer = self.oracle.answer
            explicit = set(getattr(answer, "explicit", None) or self.session.flags)
            changes = meaningful_changes(answer, explicit)
            # ports, the random seed, bookkeeping, features that stay off
            hidden = len(answer.changed) - len(changes)
            source = f"(from sglang {self.oracle.version or ''}'s own resolution)"
        else:
            report = self.session.report or self.session.validate()
            changes = dict(report.changes)
            explicit = set(self.session.flags)
            hidden = 0
            source = "(predicted by the built-in rules; sglang's check has not answered)"
        self.push_screen(ResolvedScreen(changes, source, explicit=explicit, hidden=hidden))

    def launch_blockers(self) -> list[Finding]:
        return [f for f in self.last_findings if f.is_error]

    def action_launch(self) -> None:
        blocked = self.launch_blocked_reason()
        if blocked:
            self.notify(blocked, title="Cannot launch", severity="error", timeout=8)
            return
        warnings = [f for f in self.last_findings if f.severity is Severity.WARNING]
        lines = [f"! {w.message}" for w in warnings[:5]]
        if self.session.gpu.mode is GpuMode.PLANNING:
            # the checks were for a preset, not for GPUs sglang will find on this machine
            lines.insert(
                0,
                f"! planning mode: checked for {self.session.gpu.describe()}, not for this "
                "machine's GPUs; sglang will use whatever GPUs it finds here",
            )
        if lines:

            def go(yes: bool | None) -> None:
                if yes:
                    self.start_launch()

            title = "Launch with warnings?" if warnings else "Launch in planning mode?"
            self.push_screen(ConfirmScreen(title, "\n".join(lines), yes="Launch (y)"), go)
            return
        self.start_launch()

    def launch_spec(self) -> Any:
        from sglaunch.runtime import LaunchSpec

        env = dict(self.session.env)
        if self.visible_devices:
            env["CUDA_VISIBLE_DEVICES"] = self.visible_devices
        python = self.c.launch_python or self.session.python
        argv = list(self.session.argv())
        if self.loaded_profile is not None and self.loaded_profile.secrets:
            from sglaunch.profiles import resolve_secret_values

            # secrets live in the environment, never in the profile: read them now
            values = resolve_secret_values(
                self.loaded_profile.secrets,
                os.environ,
                self.schema,
                profile=self.loaded_profile.name,
            )
            for dest, value in values.items():
                if dest not in self.session.flags:
                    argv += [self.schema.cli_name(dest), value]
        return LaunchSpec(
            argv=tuple(argv),
            python=python,
            entry=self.session.entry,
            env=env,
            profile=self.profile_name or "adhoc",
        )

    def start_launch(self) -> None:
        if self.c.server_factory is None:
            self.notify("no server launcher configured", severity="error")
            return
        try:
            spec = self.launch_spec()
        except UserError as exc:
            self.notify(exc.message, title="Cannot launch", severity="error", timeout=10)
            return
        from sglaunch.tui.screens.monitor import MonitorScreen

        current = self.monitor_screen
        if (
            current is not None
            and current.monitor is not None
            and not current.state.status.finished
        ):
            # the server is still up: show it and restart it with the edited flags
            self.push_screen("monitor")
            current.action_restart()
            return
        if current is not None:
            self.uninstall_screen("monitor")
        self.monitor_screen = MonitorScreen(
            self.c.server_factory, spec, self.session, respec=self.launch_spec
        )
        self.install_screen(self.monitor_screen, "monitor")
        self.push_screen("monitor")

    def server_running(self) -> bool:
        m = self.monitor_screen
        return m is not None and m.monitor is not None and not m.state.status.finished

    async def action_quit(self) -> None:
        if not self.server_running():
            if self.dirty:
                what = (
                    f"Changes to {self.profile_name} are not saved"
                    if self.profile_name is not None
                    else "This launch is not saved as a profile"
                )
                self.push_screen(
                    ConfirmScreen(
                        "Quit with unsaved changes?",
                        f"{what} (ctrl+s saves it).",
                        yes="Quit (y)",
                    ),
                    lambda yes: self.exit() if yes else None,
                )
                return
            self.exit()
            return

        def answer(yes: bool | None) -> None:
            if yes:
                self.stop_then_exit()

        self.push_screen(
            ConfirmScreen(
                "Quit sglaunch?",
                "The sglang server is running. Quitting stops it (SIGTERM, then SIGKILL).",
                yes="Stop and quit (y)",
            ),
            answer,
        )

    @work(thread=True, exclusive=True, group="quit")
    def stop_then_exit(self) -> None:
        if self.monitor_screen is not None:
            self.monitor_screen.stop_and_wait()
        self.call_from_thread(self.exit)

    def action_focus_next_panel(self) -> None:
        self.screen.focus_next()

    # --- command palette ----------------------------------------------------------------

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        if not isinstance(screen, MainScreen):
            return  # the editor's commands act on the editor
        yield SystemCommand("Search flags", "Find a flag by name or help text", self.action_search)
        yield SystemCommand(
            "Save profile", "Save this launch (ctrl+s); names it first", self.action_save_profile
        )
        yield SystemCommand(
            "Profiles", "Load, save as, diff or delete saved launches", self.action_profiles
        )
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
