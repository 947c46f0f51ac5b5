"""The sglaunch app: GPUs, model and every sglang flag on one screen, validated live.

The launch being edited is a UI-free `LaunchSession`; both tiers of the verdict are a
`TwoTier`; the running server is the App's (not a screen's), so leaving the monitor never
loses it. The App holds UI state only: which screen, the preview mode, timers. Slow work
(probing GPUs, reading a model, asking sglang, starting a server) runs in workers that post
messages (`tui.messages`); the `@on` handlers here own every change. The dialogs' module is
imported where a dialog opens: the first frame does without it. So are the rules: the session
is made, and first checked, just after that frame, which draws none of its verdict yet.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shlex
import signal
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.timer import Timer

from sglaunch.errors import UserError
from sglaunch.flags.schema import FlagSchema, bundled_schema
from sglaunch.tui import hangup
from sglaunch.tui import messages as m
from sglaunch.tui.palette import editor_commands, keys_command
from sglaunch.tui.screens.help import HelpScreen
from sglaunch.tui.screens.main import PANELS, MainScreen, blocked_reason, subtitle_text, title_text
from sglaunch.tui.server import ServerControl
from sglaunch.tui.widgets.findings import FindingsPanel
from sglaunch.tui.widgets.flag_editor import FlagEditor
from sglaunch.validators.findings import Finding, Fix, Severity
from sglaunch.validators.release_spans import semantics

if TYPE_CHECKING:
    from sglaunch.flags.launchline import LaunchLine
    from sglaunch.profiles import Profile, ProfileStore
    from sglaunch.program import LaunchPython
    from sglaunch.release import ActiveVersion
    from sglaunch.runtime.attach_target import AttachTarget
    from sglaunch.session import LaunchSession
    from sglaunch.tui.collaborators import Collaborators
    from sglaunch.tui.profile_flow import ProfileFlow
    from sglaunch.tui.screens.dialogs import GpuPick
    from sglaunch.validators.memory.plan import MemoryPlan
    from sglaunch.verdict import OracleRequest, TwoTier, Verdict

RETRY_EVERY_S = 30.0  # looking for sglang again on focus, at most this often
# a flag that runs code from the model folder: any change to it is said out loud
SECURITY_FLAGS = {"trust_remote_code": "the model folder's own Python code will run in sglang"}


class SglaunchApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "sglaunch"
    SUB_TITLE = "launch assistant for SGLang"
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (110, "-medium"), (150, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (32, "-tall")]
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
        Binding("f1,question_mark", "show_keys", "Keys"),
        Binding("m", "layouts", "Layouts", show=False),
        Binding("slash", "search", "Search flags", show=False),
        Binding("c", "copy_command", "Copy command", show=False),
        Binding("y", "toggle_preview", "YAML preview", show=False),
        Binding("f6", "focus_panel(1)", "Next panel", show=False),
        Binding("shift+f6", "focus_panel(-1)", "Previous panel", show=False),
    ]
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
            "focus_panel",
            "layouts",
        }
    )

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
        sglang_version: str | None = None,
        attach: AttachTarget | None = None,
        on_first_frame: Callable[[], None] | None = None,
    ) -> None:
        super().__init__()
        if collaborators.css_rules is not None:
            from sglaunch.tui.css_cache import CachedStylesheet

            # before any CSS is read: Textual made its stylesheet in __init__ and reads the
            # app's and the widgets' CSS from the first message on
            self.stylesheet = CachedStylesheet.replacing(self.stylesheet, collaborators.css_rules)
        self.schema = schema
        self.c = collaborators
        self.debounce = debounce
        self.initial_profile = profile
        self.initial_model = model
        self.attach = attach  # a running server to watch (sglaunch attach), not to own
        self._on_first_frame = on_first_frame  # the launcher's: garbage collection back on
        # the release the checks are for: named or the newest until the installed one answers
        self._sglang_version = sglang_version  # the release named, read at first use
        self.probing = not gpu_spec
        # the session is made on first use, which is after the first frame: its first
        # verdict imports every rule module, and that frame draws none of it
        self._session_args = (gpu_spec, argv, env)
        self._session: LaunchSession | None = None
        self._verdict: Verdict | None = None
        self.server = ServerControl(
            self, collaborators.server_factory, on_measured=self.read_memory_facts
        )
        self.preview_mode = "command"
        self._oracle_timer: Timer | None = None
        # timings read by bench/startup.py
        self.last_refresh_ms: float = 0.0
        self.last_edit_done_at: float = 0.0
        self.first_frame_at: float | None = None
        self.first_frame_cpu: float | None = None  # the process's CPU seconds by then
        self._validated_with: str | None = None  # the opened profile's release, to compare
        self._retried_at = -RETRY_EVERY_S
        self._hung_up = False  # the terminal went away: ending, once
        self._model_release: str | None = None  # the release the model's facts were read for

    @property
    def session(self) -> LaunchSession:
        """The launch being edited (made, and checked, on first use)."""
        return self._session if self._session is not None else self._make_session()

    @property
    def verdict(self) -> Verdict:
        """Both tiers' verdict on the session, as last merged."""
        if self._verdict is None:
            self._make_session()  # which merges its first verdict
        assert self._verdict is not None
        return self._verdict

    @verdict.setter
    def verdict(self, value: Verdict) -> None:
        self._verdict = value

    @functools.cached_property
    def named_version(self) -> str | None:
        """The release named on the command line (`--sglang-version`), if any."""
        from sglaunch.release import parse_named  # the release modules load after the frame

        return parse_named(self._sglang_version)

    @functools.cached_property
    def active(self) -> ActiveVersion:
        """The release the checks are for: the one named, else the newest until the
        installed one answers."""
        from sglaunch.release import choose

        return choose(None, self.named_version)

    @functools.cached_property
    def tiers(self) -> TwoTier:
        """Both tiers of the verdict: the rules here, sglang's own through the oracle."""
        from sglaunch.verdict import TwoTier  # made with the first check, after the first frame

        return TwoTier(self.c.oracle)

    @functools.cached_property
    def profile_flow(self) -> ProfileFlow:
        """Opening, saving and recovering profiles (made at first use, after the first frame)."""
        from sglaunch.tui.profile_flow import ProfileFlow  # the profiles modules, then

        return ProfileFlow(self)

    def _make_session(self) -> LaunchSession:
        # after the first frame: the session's modules (model, profiles, launch) load here
        from sglaunch.session import LaunchSession, inherited_env

        gpu_spec, argv, env = self._session_args
        session = LaunchSession(
            self.schema,
            default_python=self.c.launch_python,
            inherited=inherited_env(os.environ),
        )
        session.sglang_version = self.active.version
        session.validate()
        if gpu_spec:
            session.choose_preset(gpu_spec)
        if argv or env:
            session.load_argv(argv or [], env)
        self._session = session
        self._verdict = self.tiers.verdict(session)
        return session

    # --- lifecycle ----------------------------------------------------------------------

    def get_default_screen(self) -> Screen[Any]:
        # the main screen is the default one: no empty screen is composed first
        return MainScreen(self.schema)

    def on_mount(self) -> None:
        # the first frame shows the editor; probing GPUs and loading the model follow
        self.call_after_refresh(self._start)
        if not self.is_headless:
            self._watch_terminal()

    def _watch_terminal(self) -> None:
        """End as quitting does when the terminal goes away (tui/hangup.py says why)."""
        fd = hangup.terminal_fd()
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, self.hung_up)
        if fd is not None:
            self.set_interval(
                hangup.CHECK_EVERY_S, lambda: self.hung_up() if hangup.terminal_gone(fd) else None
            )

    def hung_up(self) -> None:
        """The terminal is gone: no question can be asked, so an owned server is stopped
        (it would run on unwatched) and sglaunch exits; an attached one keeps running."""
        if self._hung_up:
            return
        self._hung_up = True
        # kept here, on the thread that owns the session, before anything is stopped; the
        # server is stopped whatever the save does
        try:
            self.profile_flow.keep_unsaved()
        finally:
            self._end_after_hangup()

    @work(thread=True, exclusive=True, group="quit")
    def _end_after_hangup(self) -> None:
        with contextlib.suppress(Exception):
            self.server.stop_and_wait()
        # not App.exit: Textual's shutdown waits on a writer thread that died writing to
        # the dead terminal, forever; the server is stopped and unsaved edits are kept
        hangup.exit_now(128 + signal.SIGHUP)

    def _start(self) -> None:
        self.first_frame_at = time.time()
        self.first_frame_cpu = time.process_time()
        if self._on_first_frame is not None:
            self._on_first_frame()
        self.call_next(self.main.first_frame_shown)
        self.main.render_gpus(self.session, probing=self.probing)
        if self.probing:
            self.probe_gpus()
        if self.initial_profile:
            self.open_profile(self.initial_profile)
            gpu_spec = self._session_args[0]
            profile = self.session.profile
            if gpu_spec and profile is not None:
                # `--gpu` beats the profile's GPUs, as `--model` beats its model: a change
                # to a profile that names its own; for one that names none (the GPUs found
                # where it runs) the machine it is checked on, not an edit
                self.session.choose_preset(gpu_spec)
                if not profile.gpus.preset:
                    self.session.mark_clean()
                self.main.render_gpus(self.session)
                self.refresh_views()
            if self.initial_model:  # `--model` beats the profile's model
                self.load_model(self.initial_model)
        else:
            if self.initial_model:
                self.load_model(self.initial_model)
            self.session.mark_clean()  # nothing typed yet: nothing to lose
        self.start_oracle()
        if self.attach is not None:
            # not before the first frame: the runtime loads when there is a server to show
            from sglaunch.runtime.watch import Watcher

            self.server.watch(Watcher(self.attach))
        self.main.set_flags_title(f"{self.active.label()} · {len(self.schema)} flags")
        if self.c.flag_facts is not None:
            self.load_flag_facts(self.named_version)
        self.report_recovered()
        self.refresh_views()

    @work(thread=True, exclusive=True, group="recovered")
    def report_recovered(self) -> None:
        self.profile_flow.report_recovered()  # App.notify is thread-safe

    def on_unmount(self) -> None:
        if "tiers" in vars(self):  # made: an app that ended before its first check has none
            self.tiers.close()

    @property
    def main(self) -> MainScreen:
        """The editor screen (modals and the monitor sit above it)."""
        return next(s for s in reversed(self.screen_stack) if isinstance(s, MainScreen))

    # --- workers ------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="gpus")
    def probe_gpus(self) -> None:
        from sglaunch.memory.assumptions import memory_facts  # in the worker, after the frame

        gpu = self.c.gpu_probe()
        # the start-up cost measured on these GPUs before (a small file): read it here too
        self.post_message(m.GpusProbed(gpu, memory_facts(gpu)))

    def load_model(self, source: str) -> None:
        # only the latest request may land: an earlier, slower load is dropped when it ends
        self.session.request_model(source)
        self._load_model(source)

    def _load_model(self, source: str) -> None:
        # the facts are the release's (its model types, native classes, config classes):
        # a later change of release reads the model again (_reload_for_release)
        self._model_release = self.active.version
        self._read_model(source, self.active.version)

    def _reload_for_release(self) -> None:
        source = self.session.model_source
        if source and semantics(self._model_release) != semantics(self.active.version):
            self.load_model(source)

    @work(thread=True, exclusive=True, group="model")
    def _read_model(self, source: str, version: str | None) -> None:
        from sglaunch.facts.model import ModelNotCached  # in the worker, after the first frame

        started = time.perf_counter()
        try:
            # the release decides which model types need remote code, as for check
            facts = self.c.model_loader(source, sglang_version=version)
        except ModelNotCached as exc:
            self.post_message(m.ModelFailed(source, exc.message, not_cached=True))
            return
        except UserError as exc:
            self.post_message(m.ModelFailed(source, exc.message))
            return
        except Exception as exc:  # a config no loader expected: say so, never crash
            message = f"cannot load {source}: {type(exc).__name__}: {exc}"
            self.post_message(m.ModelFailed(source, message))
            return
        self.post_message(m.ModelLoaded(source, facts, started, version))

    @work(thread=True, exclusive=True, group="schema")
    def load_flag_facts(self, named: str | None) -> None:
        assert self.c.flag_facts is not None
        try:
            facts = self.c.flag_facts(named)
        except Exception:
            return  # the bundled schema stays; only help text is missing
        self.post_message(m.FlagFactsLoaded(facts))

    @work(thread=True, exclusive=True, group="oracle-start")
    def start_oracle(self) -> None:
        self.post_message(m.OracleStarted(self.tiers.start()))

    @work(thread=True, exclusive=True, group="oracle")
    def ask_oracle(self, request: OracleRequest) -> None:
        self.post_message(m.OracleAnswered(self.tiers.ask(request)))

    @work(thread=True, exclusive=True, group="hf-cache")
    def list_cached_models(self) -> None:
        # the cache can be large or on a network disk: list it off the event loop
        from sglaunch.facts.model import hf_cached_repos  # in the worker, after the frame

        self.post_message(m.CachedModelsListed(hf_cached_repos(self.c.hf_cache_dirs)))

    # --- messages ---------------------------------------------------------------------

    @on(m.GpusProbed)
    def _gpus_probed(self, message: m.GpusProbed) -> None:
        self.probing = False
        gpu = message.gpu
        self.session.set_memory_facts(message.memory)
        self.session.set_probed(gpu)  # a chosen preset stays chosen; the probe is in ctrl+g
        # no toast when there is no GPU: the GPU panel says why, and a toast at start
        # would cover the panels for its first seconds
        self.main.render_gpus(self.session)
        self.refresh_views()

    @on(m.ModelLoaded)
    def _model_loaded(self, message: m.ModelLoaded) -> None:
        if semantics(message.release) != semantics(self._model_release):
            return  # read for a release no longer checked for: its reread is on the way
        if self.session.model_loaded(message.source, message.facts):
            self._say_version_changes()
            self.refresh_views()

    def profile_opened(self, profile: Profile) -> None:
        """A profile is the launch now: check for the release it names, unless one is known."""
        # with the profiles, after the first frame
        from sglaunch.release import VersionSource, choose
        from sglaunch.revalidate import profile_named_version

        validated = profile.validated
        self._validated_with = validated.sglang_version if validated is not None else None
        named = self.named_version or profile_named_version(validated)
        if self.active.source is not VersionSource.INSTALLED and named != self.active.version:
            self.active = choose(None, named)
            self._use_release(self.active.version)

    def _say_version_changes(self) -> None:
        """Once the profile's model is read: what differs from the release it was validated with."""
        from sglaunch.revalidate import version_changes  # with the profiles, after the frame

        old, self._validated_with = self._validated_with, None
        s = self.session
        change = version_changes(
            old, self.active.version, s.argv(), gpu=s.gpu, model=s.model, env=s.check_env()
        )
        if change is not None and not change.same:
            self.notify("\n".join(change.lines()), title="sglang version", timeout=12)

    @on(m.ModelFailed)
    def _model_failed(self, message: m.ModelFailed) -> None:
        if message.not_cached:
            # the user's model all the same: kept, and checked without its config
            if self.session.model_not_cached(message.source):
                self.notify(self.session.model_note or "", title="Model", timeout=8)
                self.refresh_views()
            return
        if not self.session.model_failed(message.source, message.message):
            return
        kept = self.session.model.source if self.session.model is not None else None
        note = f"\nstill checking against {kept}" if kept else ""
        self.notify(message.message + note, title="Model not loaded", severity="error", timeout=8)
        self.refresh_views(ask=False)

    @on(m.FlagFactsLoaded)
    def _flag_facts_loaded(self, message: m.FlagFactsLoaded) -> None:
        from sglaunch.release import VersionSource  # loaded by then: the facts are its

        facts = message.facts
        kept = self.active.source is VersionSource.NAMED and facts.active.source is not (
            VersionSource.INSTALLED
        )
        if kept:
            # no sglang here, and the profile named its release: keep checking for that one
            self._use_release(self.active.version)
        else:
            self.active = facts.active
            self._use_schema(facts.schema)
            self.session.set_sglang_version(facts.active.version)
            self.main.set_flags_title(facts.summary())
            self._reload_for_release()
        for line in facts.lines():
            self.notify(line, title="sglang version", severity="warning", timeout=10)
        self.refresh_views()

    def _use_schema(self, schema: FlagSchema) -> None:
        """Another release's flags, or the same with sglang's help text: search covers it."""
        if schema.help_included or schema.sglang_version != self.schema.sglang_version:
            self.schema = schema
            self.session.schema = schema
            self.main.query_one(FlagEditor).set_schema(schema)

    def _use_release(self, version: str) -> None:
        """Check for `version` with its bundled flags (no installed sglang says otherwise)."""
        self._use_schema(bundled_schema(version))
        self.session.set_sglang_version(version)
        self.main.set_flags_title(f"{self.active.label()} · {len(self.schema)} flags")
        self._reload_for_release()

    @on(m.OracleStarted)
    def _oracle_started(self, message: m.OracleStarted) -> None:
        self.tiers.started(message.status)
        self.refresh_views()

    @on(m.OracleAnswered)
    def _oracle_answered(self, message: m.OracleAnswered) -> None:
        if self.tiers.answered(message.reply, self.session):
            self.refresh_views(ask=False)

    @on(m.CachedModelsListed)
    def _open_model_dialog(self, message: m.CachedModelsListed) -> None:
        def done(source: str | None) -> None:
            if source:
                self.load_model(source)
                self.refresh_views()

        from sglaunch.tui.screens.dialogs import OpenModelScreen  # loads when opened

        self.push_screen(OpenModelScreen(message.repos, self.session.model_source), done)

    @on(m.ServerReported)
    def _server_reported(self, message: m.ServerReported) -> None:
        self.server.reported(message.event)

    @on(m.ServerNotStarted)
    def _server_not_started(self, message: m.ServerNotStarted) -> None:
        self.server.not_started(message.message, message.diagnosis)

    # --- editing ----------------------------------------------------------------------

    @on(FlagEditor.Edited)
    def _edited(self, message: FlagEditor.Edited) -> None:
        t0 = time.perf_counter()
        flags = self.session.flags
        if (message.value is None and message.dest not in flags) or (
            message.value is not None and flags.get(message.dest) == message.value
        ):
            return  # nothing changed: no re-check, no oracle request
        if message.value is None:
            self.session.unset_flag(message.dest)
        else:
            self.session.set_flag(message.dest, message.value)
        self._say_security(message.dest)
        self.refresh_views()
        self.last_edit_done_at = time.perf_counter()
        self.last_refresh_ms = (self.last_edit_done_at - t0) * 1000

    def _say_security(self, *dests: str) -> None:
        for dest in dests:
            why = SECURITY_FLAGS.get(dest)
            if why is None:
                continue
            on_now = bool(self.session.flags.get(dest))
            name = self.schema.cli_name(dest)
            self.notify(
                f"{name} is {'on' if on_now else 'off'}" + (f": {why}" if on_now else ""),
                title="Security",
                severity="warning" if on_now else "information",
                timeout=6,
            )

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

    def apply_fix(self, fix: Fix, *, toast: str | None = None) -> None:
        self.session.apply_fix(fix)
        self._say_security(*fix.set, *fix.unset)
        if toast is None:
            self.notify(fix.label, title="Fix applied", timeout=4)
        else:
            self.notify(toast, title=fix.label, timeout=4)
        self.refresh_views()

    def jump_to_flag(self, dest: str) -> None:
        self.main.query_one(FlagEditor).select(dest, focus=True)

    def open_card(self, finding: Finding) -> None:
        # kept out of the first frame: the catalogue's look-up imports every rule and card
        from sglaunch.catalogue import card_for
        from sglaunch.tui.screens.card import CardScreen  # with the cards it shows

        card = card_for(finding.code, finding.message, finding.source)
        before = self.session.command_line(display=True)
        afters = [self.session.command_line(display=True, fix=f) for f in finding.fixes[:1]]
        screen = CardScreen(finding, card, before, afters)

        def done(fix: Fix | None) -> None:
            if fix is not None:
                self.apply_fix(fix)
            elif screen.goto:
                self.jump_to_flag(screen.goto)

        self.push_screen(screen, done)

    # --- views ------------------------------------------------------------------------

    def refresh_views(self, *, ask: bool = True) -> None:
        """Re-render everything from the session; the built-in verdict is already there."""
        if not any(isinstance(s, MainScreen) for s in self.screen_stack):
            return
        self.verdict = self.tiers.verdict(self.session)
        # one compositor pass for all the widgets a change touches
        with self.batch_update():
            self.main.render_all(
                self.session, self.verdict, preview=self.preview(), plan=self.memory_plan()
            )
            self.update_title()
        if ask:
            self.schedule_oracle()

    def memory_plan(self) -> MemoryPlan | None:
        """sglang's start-up memory plan for the launch (~0.1 ms, pure: no calibration I/O)."""
        if self.session.model is None:
            return None

        answer = self.verdict.answer
        # kept out of the first frame, which draws no plan yet
        from sglaunch.validators.memory.plan import plan_memory

        return plan_memory(self.session.check_input(), answer.resolved if answer else None)

    @property
    def last_findings(self) -> list[Finding]:
        return list(self.verdict.findings)

    def launch_blockers(self) -> list[Finding]:
        return self.verdict.errors

    def update_title(self) -> None:
        self.title = title_text(self.session)
        launch = self.launch_interpreter()
        self.sub_title = (
            f"{subtitle_text(self.session, self.verdict, launch)} · for {self.active.label()}"
        )

    def launch_interpreter(self) -> LaunchPython:
        """Which Python runs the server; its sglang is the installed one the checks used."""
        from sglaunch.release import VersionSource  # loaded by then, with the session

        installed = self.active.version if self.active.source is VersionSource.INSTALLED else None
        return self.session.launch_interpreter(installed)

    def preview(self) -> tuple[str, str]:
        if self.preview_mode == "yaml":
            return "yaml", self.config_yaml(comments=False)
        if self.session.nodes > 1:
            return "nodes", self.session.node_command_lines(display=True)
        return "command", self.session.command_line(display=True)

    def config_yaml(self, *, comments: bool = True) -> str:
        """The launch as sglang `--config` YAML: the same export as `profiles export`."""
        from sglaunch.profiles import to_yaml  # yaml (~35 ms): only when the YAML is shown

        try:
            profile = self.session.to_profile(self.session.profile_name or "launch")
            text = to_yaml(profile, schema=self.schema).text.rstrip("\n")
        except UserError as exc:
            return f"# cannot write this launch as YAML: {exc.message}"
        if comments:
            return text
        # on screen the keys come first: the file's own comments would fill the pane
        keys = [line for line in text.splitlines() if not line.startswith("#")]
        launch = next((ln[2:] for ln in text.splitlines() if ln.startswith("# launch: ")), "")
        return "\n".join([*keys, f"# {launch}" if launch else ""]).rstrip()

    def schedule_oracle(self, *, immediate: bool = False) -> None:
        if self.tiers.waits_for(self.session) is not None:
            return
        if self._oracle_timer is not None:
            self._oracle_timer.stop()
        self._oracle_timer = self.set_timer(
            0.001 if immediate else self.debounce, self._send_oracle
        )

    def _send_oracle(self) -> None:
        request = self.tiers.request(self.session)
        if request is not None:
            self.ask_oracle(request)
            self.refresh_views(ask=False)

    # --- actions ----------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return action not in self.EDITOR_ACTIONS or isinstance(self.screen, MainScreen)

    def action_search(self) -> None:
        self.main.query_one(FlagEditor).focus_search()

    def action_copy_command(self) -> None:
        if self.preview_mode == "yaml":
            text = self.config_yaml()
        elif self.session.nodes > 1:
            text = self.session.node_command_lines()  # every node's line, each runnable
        else:
            text = self.session.command_line()
        self.copy_to_clipboard(text)
        self.notify("copied to the clipboard", timeout=3)

    def action_toggle_preview(self) -> None:
        self.preview_mode = "yaml" if self.preview_mode == "command" else "command"
        self.refresh_views(ask=False)

    def action_show_keys(self) -> None:
        title = (
            "the editor" if isinstance(self.screen, MainScreen) else self.screen.__class__.__name__
        )
        self.push_screen(HelpScreen(self.screen, getattr(self.screen, "HELP_TITLE", title)))

    def action_show_help_panel(self) -> None:
        # Textual's keys panel docks beside the editor and squashes it: a modal instead
        self.action_show_keys()

    def action_focus_panel(self, step: int) -> None:
        ids = list(PANELS)
        focused = self.focused.id if self.focused is not None else None
        i = ids.index(f"#{focused}") if focused and f"#{focused}" in ids else -1
        self.main.query_one(ids[(i + step) % len(ids)]).focus()

    def action_retry_oracle(self) -> None:
        if self.tiers.retry():
            self.notify("looking for sglang again", timeout=3)
            self.start_oracle()
            self.refresh_views(ask=False)
        else:
            self.notify("no sglang interpreter is configured", severity="warning")

    def on_app_focus(self) -> None:
        # back from another terminal (where `sglaunch oracle setup` ran, say): look again,
        # at most every RETRY_EVERY_S: a broken install costs seconds of imports per try
        from sglaunch.verdict import Phase  # loaded with the first check

        now = time.monotonic()
        if self.tiers.phase is Phase.UNAVAILABLE and now - self._retried_at >= RETRY_EVERY_S:
            self._retried_at = now
            self.action_retry_oracle()

    def action_paste(self) -> None:
        def done(line: LaunchLine | None) -> None:
            if line is None:
                return
            source = self.session.load_launch_line(line)
            if source:
                self.load_model(source)
            n = len(self.session.flags)
            self.notify(f"loaded {n} flag{'s' if n != 1 else ''} from the launch line", timeout=4)
            self.after_load()

        from sglaunch.tui.screens.dialogs import PasteScreen  # loads when opened

        self.push_screen(PasteScreen(), done)

    def after_load(self) -> None:
        """A paste or a profile replaced the flags: show them all, and what is wrong."""
        self.main.query_one(FlagEditor).clear_search()
        self.main.render_gpus(self.session, probing=self.probing)
        self.refresh_views()
        self.main.query_one("#finding-list").focus()
        if self.session.flags.get("trust_remote_code"):
            self._say_security("trust_remote_code")  # arrived with the line: say it

    def action_open_model(self) -> None:
        self.list_cached_models()

    def action_pick_gpus(self) -> None:
        def done(pick: GpuPick | None) -> None:
            if pick is None:
                return
            choice = pick.choice
            try:
                if choice is not None and choice.preset:
                    self.session.choose_preset(choice.preset)
                elif choice is not None and choice.visible is not None:
                    self.session.choose_devices(choice.visible)
                if pick.nodes != self.session.nodes or pick.nodes != self.session.flags.get(
                    "nnodes", 1
                ):
                    # the line's --nnodes too, so the checks see what every node runs
                    self.session.choose_nodes(pick.nodes)
            except UserError as exc:
                self.notify(exc.message, severity="error")
                return
            self.main.render_gpus(self.session)
            self.refresh_views()

        from sglaunch.tui.screens.dialogs import GpuScreen  # loads when opened

        probed = self.session.probed
        self.push_screen(
            GpuScreen(
                self.session.gpu, probed, self.session.gpu_choice.visible, self.session.nodes
            ),
            done,
        )

    def _export_name(self, what: str) -> str | None:
        """The saved profile a multi-node export or engine launch is named after; None (and
        why, in a toast) when this launch has none."""
        name = self.session.profile_name
        if name is None:
            self.notify(
                f"{what} is named after a saved profile: save this launch first (ctrl+s)",
                severity="warning",
                timeout=8,
            )
        return name

    def action_export_nodes(self, fmt: str) -> None:
        """Write a multi-node launch's export (`sglaunch profiles export NAME --format FMT`'s
        exporter) as it is on screen, into the export folder."""
        name = self._export_name("An export")
        if name is None:
            return
        try:
            profile = self.session.to_profile(name)
        except UserError as exc:
            self.notify(exc.message, title="Not exported", severity="error", timeout=8)
            return
        self._write_export(profile, fmt)

    @work(thread=True, group="export")
    def _write_export(self, profile: Profile, fmt: str) -> None:
        from sglaunch.profiles.engines import export_nodes  # loads when an export is asked
        from sglaunch.safeio import shown

        try:
            path = export_nodes(profile, fmt, self.c.export_dir or Path.cwd())
        except UserError as exc:
            self.notify(exc.message, title="Not exported", severity="error", timeout=8)
            return
        self.notify(f"wrote {shown(path)}", title="Exported", timeout=8)  # thread-safe

    def action_engine_launch(self, target: str) -> None:
        """Say the command that hands the saved profile to an engine (`--apply --target`):
        the engine's submission runs there, with its own checks and output."""
        name = self._export_name("A launch on an engine")
        if name is None:
            return
        unsaved = (
            " · save first (ctrl+s): the engine gets the saved profile, not unsaved edits"
            if self.dirty
            else ""
        )
        command = f"sglaunch --profile {shlex.quote(name)} --apply --target {target}"
        self.copy_to_clipboard(command)
        self.notify(f"{command}{unsaved}", title="Run this (copied)", timeout=12)

    def action_layouts(self) -> None:
        """The parallel layouts that fit these GPUs; picking one sets its sizes."""
        if self.session.model is None:
            self.notify("open a model first (ctrl+o)", severity="warning")
            return
        from sglaunch.memory.api import layouts
        from sglaunch.tui.screens.layouts import LayoutsScreen, layout_applied  # loads when opened

        plan = self.memory_plan()
        k = plan.knobs if plan is not None else None
        current = (k.tp, k.dp, k.pp, k.attn_dp) if k is not None else (1, 1, 1, 1)
        line_nodes = self.session.flags.get("nnodes", 1)
        screen = LayoutsScreen(
            layouts(self.session.check_input()),
            self.session.gpu.count,
            current,
            nodes=self.session.nodes,
            current_nodes=line_nodes if isinstance(line_nodes, int) else 1,
        )
        cli = self.session.schema.cli_name
        self.push_screen(
            screen,
            lambda fix: (
                self.apply_fix(fix, toast=layout_applied(fix, cli)) if fix is not None else None
            ),
        )

    def action_resolved(self) -> None:
        from sglaunch.tui.screens.dialogs import ResolvedScreen, resolved_view  # when opened

        view = resolved_view(self.session, self.verdict, self.tiers)
        self.push_screen(ResolvedScreen(view))

    def action_launch(self) -> None:
        blocked = blocked_reason(self.session, self.verdict)
        if blocked:
            self.notify(blocked, title="Cannot launch", severity="error", timeout=8)
            return
        if self.c.host_check is None:
            self.confirm_launch([])
            return
        self.notify("checking the host…", timeout=3)
        self.check_host(self.session.revision)

    @work(thread=True, exclusive=True, group="host")
    def check_host(self, revision: int) -> None:
        assert self.c.host_check is not None
        try:
            findings = self.c.host_check(self.session)
        except Exception as exc:  # a collector this host defeats: say so, launch unchecked
            findings = [Finding("host-fact-unknown", Severity.INFO, f"host checks failed: {exc}")]
        self.post_message(m.HostChecked(findings, revision))

    @on(m.HostChecked)
    def _host_checked(self, message: m.HostChecked) -> None:
        if message.revision != self.session.revision:
            return  # the launch changed while the host was checked: ctrl+l again
        errors = [f for f in message.findings if f.is_error]
        if errors:
            body = "\n".join(f"{f.code}: {f.message}" for f in errors[:3])
            more = f"\n(+{len(errors) - 3} more: sglaunch doctor)" if len(errors) > 3 else ""
            self.notify(body + more, title="Cannot launch", severity="error", timeout=12)
            return
        self.confirm_launch(message.findings)

    def confirm_launch(self, host: list[Finding]) -> None:
        """The launch dialog: the verdict's warnings and the host's, or straight on."""
        from sglaunch.validators.facts import GpuMode  # loaded by then, with the session

        warnings = [f for f in self.verdict.findings if f.severity is Severity.WARNING]
        warnings += [f for f in host if f.severity is Severity.WARNING]
        lines = [f"! {w.message}" for w in warnings[:5]]
        if self.session.gpu.mode is GpuMode.PLANNING:
            # the checks were for a preset, not for GPUs sglang will find on this machine
            lines.insert(
                0,
                f"! planning mode: checked for {self.session.gpu.describe()}, not for this "
                "machine's GPUs; sglang will use whatever GPUs it finds here",
            )
        interpreter = self.launch_interpreter()
        lines[:0] = [f"! {w}" for w in interpreter.warnings]
        if not lines:
            self.start_launch()
            return
        title = "Launch with warnings?" if warnings else "Launch in planning mode?"
        if interpreter.warnings:
            title = "Launch with this Python?"
        body = "\n".join([interpreter.line, *lines])
        from sglaunch.tui.screens.dialogs import ConfirmScreen  # loads when opened

        screen = ConfirmScreen(title, body, yes="Launch (y)")
        self.push_screen(screen, lambda yes: self.start_launch() if yes else None)

    def launch_spec(self) -> Any:
        answer = self.verdict.answer
        return self.session.launch_spec(
            os.environ, resolved=answer.resolved if answer is not None else None
        )

    def restart_server(self) -> None:
        """The monitor's `r`: the edited launch, through the same checks as ctrl+l."""
        blocked = blocked_reason(self.session, self.verdict)
        if blocked:
            self.notify(blocked, title="Not restarted", severity="error", timeout=8)
            return
        try:
            spec = self.launch_spec()
        except UserError as exc:  # e.g. a secret's variable is no longer set
            self.notify(exc.message, title="Not restarted", severity="error", timeout=10)
            return
        self.notify("restarting with the current flags", timeout=4)
        self.server.restart(spec)

    @work(thread=True, exclusive=True, group="memory-facts")
    def read_memory_facts(self) -> None:
        from sglaunch.memory.assumptions import memory_facts  # in the worker

        self.post_message(m.MemoryFactsRead(memory_facts(self.session.gpu)))

    @on(m.MemoryFactsRead)
    def _memory_facts_read(self, message: m.MemoryFactsRead) -> None:
        self.session.set_memory_facts(message.memory)
        self.refresh_views(ask=False)

    def start_launch(self) -> None:
        try:
            spec = self.launch_spec()
        except UserError as exc:
            self.notify(exc.message, title="Cannot launch", severity="error", timeout=10)
            return
        self.server.launch(spec)

    # --- profiles (tui/profile_flow.py) ------------------------------------------------

    def store(self) -> ProfileStore:
        return self.profile_flow.store()

    @property
    def dirty(self) -> bool:
        return self.session.dirty

    def open_profile(self, name: str) -> None:
        self.profile_flow.open(name)

    def save_profile(self, name: str) -> bool:
        return self.profile_flow.save(name)

    def action_save_profile(self) -> None:
        self.profile_flow.save_current()

    def action_profiles(self, save_as: str | None = None, note: str = "") -> None:
        self.profile_flow.picker(save_as=save_as, note=note)

    # --- quitting ---------------------------------------------------------------------

    async def action_quit(self) -> None:
        if self.server.running():
            from sglaunch.tui.screens.dialogs import ConfirmScreen  # loads when opened

            screen = ConfirmScreen(
                "Quit sglaunch?",
                "The sglang server is running. Quitting stops it (SIGTERM, then SIGKILL).",
                yes="Stop and quit (y)",
            )
            self.push_screen(screen, self._stop_and_quit)
            return
        if self.dirty:
            name = self.session.profile_name
            what = (
                f"Changes to {name} are not saved"
                if name is not None
                else "This launch is not saved as a profile"
            )
            from sglaunch.tui.screens.dialogs import ConfirmScreen  # loads when opened

            screen = ConfirmScreen(
                "Quit with unsaved changes?", f"{what} (ctrl+s saves it).", yes="Quit (y)"
            )
            self.push_screen(screen, lambda yes: self.exit() if yes else None)
            return
        self.exit()

    def _stop_and_quit(self, yes: bool | None) -> None:
        if yes:
            self.stop_then_exit()

    @work(thread=True, exclusive=True, group="quit")
    def stop_then_exit(self) -> None:
        with contextlib.suppress(Exception):
            self.server.stop_and_wait()
        self.call_from_thread(self.exit)

    # --- command palette ----------------------------------------------------------------

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        for command in super().get_system_commands(screen):
            yield keys_command(self) if command.title == "Keys" else command
        if isinstance(screen, MainScreen):  # the editor's commands act on the editor
            yield from editor_commands(self, self.verdict.findings, nodes=self.session.nodes)
