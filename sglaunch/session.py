"""The launch being edited: the one editing model that the TUI, `check` and `--apply` drive.

A session holds the flags, the environment, the model, the GPU selection, the program that
runs it, and the profile it came from with the state it was saved in. Every change goes
through a method here and re-runs the built-in rules at once (well under a millisecond);
asking sglang (the oracle) is `sglaunch.verdict`'s business, because it is slow.

`CUDA_VISIBLE_DEVICES` is part of the GPU selection, never of the environment: it is
derived from the selection when a launch or a check needs it, so it cannot be kept twice
and disagree (a pasted `CUDA_VISIBLE_DEVICES=0,1 …` line used to show in the preview and
vanish from the saved profile).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from sglaunch.checking import build_input
from sglaunch.errors import UserError
from sglaunch.facts.gpu import planning_fallback, select_visible
from sglaunch.facts.model import (
    bundled_copy_note,
    model_path_for_launch,
    model_path_for_sglang,
    not_cached_note,
    source_for_path,
)
from sglaunch.facts.presets import DEFAULT_PLANNING, parse_gpu_spec
from sglaunch.flags.argv import parse_argv, to_argv
from sglaunch.flags.launchline import LaunchLine
from sglaunch.flags.schema import FlagSchema, FlagSpec
from sglaunch.profiles.profile import (
    MAX_NODES,
    GpuSelection,
    Profile,
    Validated,
    check_nodes,
    validate_name,
)
from sglaunch.program import (
    Entry,
    LaunchPython,
    as_entry,
    launch_python_facts,
    program_argv,
    program_length,
)
from sglaunch.secrets import (
    MASK,
    default_secret_env,
    env_reference,
    is_secret_env_name,
    is_secret_flag,
    mask_argv,
    resolve_secret_values,
    shell_reference,
)
from sglaunch.validators.facts import CheckInput, FlagIssue, GpuFacts, GpuMode, ModelFacts
from sglaunch.validators.findings import Fix

if TYPE_CHECKING:
    from sglaunch.runtime.after_launch import Prediction
    from sglaunch.runtime.spec import LaunchSpec
    from sglaunch.validators.engine import Report
    from sglaunch.validators.memory.baseline import MemoryFacts

CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
ADHOC = "adhoc"
INHERITED_ENV_PREFIXES = ("SGLANG_", "SGL_")


def inherited_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The shell's variables that change what sglang does: the server inherits them."""
    return {k: v for k, v in environ.items() if k.startswith(INHERITED_ENV_PREFIXES)}


@dataclass(frozen=True)
class GpuChoice:
    """Which GPUs the launch is for.

    A planning `preset` (checks for a machine one may not have), or `visible` devices
    (`CUDA_VISIBLE_DEVICES` among the probed GPUs), or neither: every probed GPU.
    """

    preset: str | None = None
    visible: str | None = None

    def describe(self) -> str:
        if self.preset:
            return f"planning for {self.preset}"
        if self.visible is not None:
            return f"{CUDA_VISIBLE_DEVICES}={self.visible}"
        return "every GPU found"


@dataclass(frozen=True)
class Snapshot:
    """What a saved profile holds, to tell whether there are unsaved changes."""

    model: str | None
    flags: tuple[tuple[str, str], ...]
    env: tuple[tuple[str, str], ...]
    secrets: tuple[tuple[str, str], ...]
    gpus: GpuChoice
    entry: str
    python: str | None
    nodes: int = 1


def _refuse_bad_nodes(nodes: int) -> None:
    """UserError for a node count no deployment has."""
    problems = check_nodes(nodes)
    if problems:
        raise UserError(f"--nodes: {problems[0][1]}")


class LaunchSession:
    """One launch being edited. Read the state through properties; change it through methods."""

    def __init__(
        self,
        schema: FlagSchema,
        *,
        gpus: GpuChoice | None = None,
        probed: GpuFacts | None = None,
        default_python: str | None = None,
        planning_default: str = DEFAULT_PLANNING,
        inherited: Mapping[str, str] | None = None,
    ) -> None:
        self.schema = schema
        self._flags: dict[str, Any] = {}
        self._env: dict[str, str] = {}
        # the shell's SGLANG_* variables: checked with, inherited by the server, never saved
        self.inherited: Mapping[str, str] = MappingProxyType(dict(inherited or {}))
        self._secrets: dict[str, str] = {}  # secret flag dest -> the variable holding it
        self._choice = gpus or GpuChoice()
        self._probed = probed
        self._planning_default = planning_default
        self._gpu = self._derive_gpu()
        # the machines chosen for this server (--nodes, the GPU dialog); None: the launch
        # line's --nnodes says
        self._nodes: int | None = None
        self.entry: Entry = "launch_server"
        self.python: str | None = None  # the launch's own interpreter (a profile's, a paste's)
        # the interpreter that has sglang, found by sglaunch: used when the launch names none
        self.default_python = default_python
        self.model_source: str | None = None
        self.model: ModelFacts | None = None
        self.model_pending: str | None = None  # asked for, not loaded yet
        self.model_error: str | None = None
        # the model is the user's but its config is not here (a repo sglang will download):
        # what the checks say of that, instead of any other model's facts
        self.model_note: str | None = None
        self.issues: list[FlagIssue] = []
        # the sglang release the verdict is for (sglaunch/release.py); None: the schema's
        self.sglang_version: str | None = None
        # start-up memory beyond the GPU facts: the calibrated cost, --assume-free-gib
        self.memory: MemoryFacts | None = None
        self.profile: Profile | None = None  # as loaded or last saved: its revision guards saves
        self._saved: Snapshot | None = None
        self.revision = 0  # bumped on every change; stale oracle answers are compared against it
        self.report: Report = self.validate()

    # --- what is being edited -------------------------------------------------------

    @property
    def flags(self) -> Mapping[str, Any]:
        return MappingProxyType(self._flags)

    @property
    def env(self) -> Mapping[str, str]:
        """The launch's own variables; CUDA_VISIBLE_DEVICES lives in the GPU choice."""
        return MappingProxyType(self._env)

    @property
    def secrets(self) -> Mapping[str, str]:
        return MappingProxyType(self._secrets)

    @property
    def gpu_choice(self) -> GpuChoice:
        return self._choice

    @property
    def probed(self) -> GpuFacts | None:
        return self._probed

    @property
    def gpu(self) -> GpuFacts:
        """The GPUs the checks are for, derived from the choice and what the probe found:
        one node's GPUs, on `nodes` machines."""
        return self._gpu.on_nodes(self.nodes)

    @property
    def nodes(self) -> int:
        """The machines this server spans: as chosen, else the line's --nnodes, else 1."""
        if self._nodes is not None:
            return self._nodes

        line = self._flags.get("nnodes")
        if isinstance(line, int) and not isinstance(line, bool) and 1 <= line <= MAX_NODES:
            return line
        return 1

    @property
    def nodes_chosen(self) -> bool:
        """Whether the topology was chosen (rather than read from the line's --nnodes)."""
        return self._nodes is not None

    def set_nodes(self, nodes: int | None) -> Report:
        """Plan for `nodes` machines, each with these GPUs (None: as the line's --nnodes says).
        Raises UserError for a count no deployment has."""
        if nodes is not None:
            _refuse_bad_nodes(nodes)
        self._nodes = nodes
        return self._changed()

    def choose_nodes(self, nodes: int) -> Report:
        """The topology chosen in an editor (the TUI's GPU dialog): the plan's nodes and the
        line's --nnodes together, as a pasted line's --nnodes sets the nodes, so the checks
        see what every node will run (a missing --dist-init-addr is then a finding). One
        node drops --nnodes and --node-rank. Raises UserError for a count no deployment has."""
        _refuse_bad_nodes(nodes)
        self._nodes = nodes
        if nodes > 1:
            self._flags["nnodes"] = nodes
            if self._flags.get("node_rank", 0) >= nodes:
                self._flags.pop("node_rank", None)
        else:
            self._flags.pop("nnodes", None)
            self._flags.pop("node_rank", None)
        self.issues = [i for i in self.issues if i.dest not in ("nnodes", "node_rank")]
        return self._changed()

    @property
    def profile_name(self) -> str | None:
        return self.profile.name if self.profile is not None else None

    def environment(self) -> dict[str, str]:
        """The variables the server will see on top of the inherited ones."""
        env = dict(self._env)
        if self._choice.visible is not None:
            env[CUDA_VISIBLE_DEVICES] = self._choice.visible
        return env

    def check_env(self) -> dict[str, str]:
        """What sglang will read: the inherited variables, then the launch's own."""
        return {**self.inherited, **self.environment()}

    def _derive_gpu(self) -> GpuFacts:
        c = self._choice
        if c.preset:
            return parse_gpu_spec(c.preset)
        probed = self._probed
        if probed is None:
            # not probed yet (or never will be): plan for the default machine meanwhile
            return planning_fallback("GPUs not probed yet", self._planning_default)
        if c.visible is not None and probed.mode is GpuMode.NVML:
            return select_visible(probed, c.visible)
        return probed

    # --- changes --------------------------------------------------------------------

    def _changed(self) -> Report:
        self.revision += 1
        return self.validate()

    def check_input(self) -> CheckInput:
        return build_input(
            self._flags,
            gpu=self.gpu,
            model=self.model,
            env=self.check_env(),
            schema=self.schema,
            issues=self.issues,
            sglang_version=self.sglang_version,
            memory=self._memory_for_gpu(),
        )

    def _memory_for_gpu(self) -> MemoryFacts | None:
        """The memory facts for the GPUs checked for: a planning preset has no measured
        start-up cost (one measured on the GPUs found here says nothing of it)."""
        m = self.memory
        if m is None or self._gpu.mode is GpuMode.NVML or not m.startup_cost_by_tp:
            return m
        return replace(m, startup_cost_by_tp={}, calibration_source="")

    def validate(self) -> Report:
        # kept out of check's start-up (it sends sglang's question before building its
        # session): the engine imports every rule module
        from sglaunch.validators.engine import validate

        self.report = validate(self.check_input())
        return self.report

    def set_flag(self, dest: str, value: Any) -> Report:
        spec = self._spec(dest)
        if value is None or (spec.is_bool and value is False and spec.action != "boolean_optional"):
            self._flags.pop(dest, None)
        else:
            self._flags[dest] = value
        self._secrets.pop(dest, None)  # a value typed in replaces the reference
        self.issues = [i for i in self.issues if i.dest != dest]
        return self._changed()

    def unset_flag(self, dest: str) -> Report:
        self._flags.pop(dest, None)
        self._secrets.pop(dest, None)
        self.issues = [i for i in self.issues if i.dest != dest]
        return self._changed()

    def apply_fix(self, fix: Fix) -> Report:
        self._flags = dict(fix.apply(self._flags))
        touched = set(fix.unset) | set(fix.set)
        for dest in touched:
            self._secrets.pop(dest, None)
        self.issues = [i for i in self.issues if i.dest not in touched]
        return self._changed()

    def set_env(self, name: str, value: str | None) -> Report:
        if name == CUDA_VISIBLE_DEVICES:
            # the devices are a GPU choice: one place, whichever way they were typed
            return self.choose_devices(value)
        if value is None:
            self._env.pop(name, None)
        else:
            self._env[name] = value
        return self._changed()

    def choose_preset(self, preset: str) -> Report:
        """Plan for a machine (UserError for a name no preset has); a preset has no devices."""
        gpu = parse_gpu_spec(preset)
        self._choice = GpuChoice(preset=gpu.preset)
        self._gpu = gpu
        return self._changed()

    def choose_devices(self, visible: str | None) -> Report:
        """Use these probed GPUs (None: all of them)."""
        self._choice = GpuChoice(visible=visible)
        self._gpu = self._derive_gpu()
        return self._changed()

    def set_memory_facts(self, memory: MemoryFacts | None) -> Report:
        """What is known of these GPUs' start-up cost (sglaunch.memory.assumptions reads it)."""
        self.memory = memory
        return self._changed()

    def set_sglang_version(self, version: str | None) -> Report:
        """The release the checks are for (the installed one, once it is known)."""
        self.sglang_version = version
        return self._changed()

    def set_probed(self, gpu: GpuFacts) -> Report:
        """What the GPU probe found; a chosen preset stays chosen."""
        self._probed = gpu
        self._gpu = self._derive_gpu()
        return self._changed()

    def request_model(self, source: str) -> None:
        """A model is wanted; its facts arrive with `model_loaded` (or `model_failed`)."""
        self.model_pending = source
        self.model_error = None
        if self.model is None:
            self.model_source = source  # nothing loaded to keep meanwhile

    def model_loaded(self, source: str, facts: ModelFacts) -> bool:
        """The facts of a requested model; False (ignored) when a later request replaced it."""
        if source != self.model_pending:
            return False
        was_saved = self._saved is not None and not self.dirty
        self.model_pending = None
        self.model_error = None
        self.model_note = bundled_copy_note(source, facts)
        self.model_source = source
        self.model = facts
        if was_saved:
            self._saved = self.snapshot()  # the launch's own model finished loading: no edit
        self._changed()
        return True

    def model_failed(self, source: str, message: str) -> bool:
        """A requested model could not be read; the launch keeps the model it had."""
        if source != self.model_pending:
            return False
        self.model_pending = None
        self.model_error = message
        return True

    def model_not_cached(self, source: str) -> bool:
        """A requested repo id that is not in the local cache: a valid launch (sglang will
        download it), so it becomes the launch's model and the checks run without its config.
        Never the previous model's facts: that would check, save and launch another model.
        False (ignored) when a later request replaced it."""
        if source != self.model_pending:
            return False
        was_saved = self._saved is not None and not self.dirty
        self.model_pending = None
        self.model_error = None
        self.model_source = source
        self.model = None
        self.model_note = not_cached_note(source)
        if was_saved:
            self._saved = self.snapshot()
        self._changed()
        return True

    def load_argv(self, argv: Sequence[str], env: Mapping[str, str] | None = None) -> str | None:
        """Replace the flags with a launch's argv (and env); returns its model, as a source.

        A bundled example's folder reads back as `example:NAME`.
        """
        parsed = parse_argv(list(argv), self.schema)
        values = dict(parsed.values)
        model_path = values.pop("model_path", None)
        self._flags = values
        self._secrets = {}
        self.issues = list(parsed.issues)
        if env is not None:
            env = dict(env)
            visible = env.pop(CUDA_VISIBLE_DEVICES, None)
            self._env = env
            if visible is not None:
                self._choice = GpuChoice(visible=visible)
                self._gpu = self._derive_gpu()
        self._changed()
        return source_for_path(str(model_path)) if model_path is not None else None

    def load_launch_line(self, line: LaunchLine) -> str | None:
        self.entry = as_entry(line.entry)
        if line.python:
            self.python = line.python
        return self.load_argv(line.argv, line.env)

    # --- profiles -------------------------------------------------------------------

    def load_profile(self, profile: Profile) -> Report:
        """Edit `profile`: its flags, environment, secrets, GPUs, program and model.

        The model is only requested here: the caller loads its facts (off the event loop
        in the TUI) and hands them to `model_loaded`. Raises UserError for a preset no
        longer known.
        """
        gpus = profile.gpus
        choice = GpuChoice(preset=gpus.preset, visible=gpus.cuda_visible_devices)
        if choice.preset:
            parse_gpu_spec(choice.preset)  # a bad preset fails before anything changes
        self._flags = dict(profile.flags)
        self._env = {k: v for k, v in profile.env.items() if k != CUDA_VISIBLE_DEVICES}
        self._secrets = dict(profile.secrets)
        self._choice = choice
        self._gpu = self._derive_gpu()
        # a profile of one node leaves the topology to its line's --nnodes (profiles saved
        # before they had `nodes` said it only there)
        self._nodes = profile.nodes if profile.nodes != 1 else None
        self.entry = profile.entry
        self.python = profile.sglang_python
        self.issues = []
        self.profile = profile
        self.model = None
        self.model_error = None
        self.model_note = None
        self.model_source = profile.model
        self.model_pending = profile.model
        self._saved = self.snapshot()
        return self._changed()

    @classmethod
    def from_profile(
        cls,
        profile: Profile,
        schema: FlagSchema,
        *,
        probed: GpuFacts | None = None,
        default_python: str | None = None,
        inherited: Mapping[str, str] | None = None,
    ) -> LaunchSession:
        session = cls(schema, probed=probed, default_python=default_python, inherited=inherited)
        session.load_profile(profile)
        return session

    def to_profile(self, name: str, *, sglang_version: str | None = None) -> Profile:
        """This launch as a profile named `name`. Secrets become references, never text.

        Saving under the loaded profile's name keeps its revision (the store refuses the
        save if the file changed since); any other name is a new profile ("save as").
        """
        validate_name(name)
        flags = dict(self._flags)
        secrets = dict(self._secrets)
        for dest in list(flags):
            spec = self.schema.get(dest)
            if spec is not None and is_secret_flag(spec):
                # typed in: the profile keeps a reference to the variable that will hold it
                secrets[dest] = secrets.get(dest) or default_secret_env(dest)
                del flags[dest]
        base = self.profile if self.profile is not None and self.profile.name == name else None
        gpu = self._gpu
        validated = None
        if sglang_version is not None:
            validated = Validated(
                sglang_version=sglang_version,
                gpu_names=[d.name for d in gpu.devices],
                gpu_count=gpu.count,
                at=datetime.now(UTC),
            )
        profile = Profile(
            name=name,
            model=self.model_source,
            flags=flags,
            # a secret-looking variable is never stored (unsaved_env() names them)
            env={k: v for k, v in self._env.items() if k not in self.unsaved_env()},
            secrets=secrets,
            gpus=GpuSelection(
                cuda_visible_devices=self._choice.visible, preset=self._choice.preset
            ),
            sglang_python=self.python,
            entry=self.entry,
            notes=base.notes if base is not None else "",
            validated=validated or (base.validated if base is not None else None),
            nodes=self.nodes,
        )
        return replace(profile, revision=base.revision if base is not None else None)

    def unsaved_env(self) -> list[str]:
        """The launch's variables a profile will not keep: their names look like secrets
        (HF_TOKEN=…). The launch still passes them; a saved profile needs them exported."""
        return sorted(
            k for k, v in self._env.items() if is_secret_env_name(k) and not env_reference(v)
        )

    def mark_saved(self, profile: Profile) -> None:
        """`profile` is what the store now holds for this launch."""
        self.profile = profile
        # what was typed in is now a reference; the value stays in the flags for this session
        self._secrets = {d: v for d, v in profile.secrets.items() if d not in self._flags}
        self._saved = self.snapshot()

    def mark_clean(self) -> None:
        """The launch as it is now counts as saved (a fresh start, nothing to lose yet)."""
        self._saved = self.snapshot()

    def forget_profile(self) -> None:
        """The profile this launch came from was deleted: the launch is unsaved now."""
        self.profile = None

    def snapshot(self) -> Snapshot:
        def items(mapping: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
            return tuple(sorted((k, repr(v)) for k, v in mapping.items()))

        secrets = {
            **self._secrets,
            **{d: "typed" for d in self._flags if (s := self.schema.get(d)) and is_secret_flag(s)},
        }
        flags = {d: v for d, v in self._flags.items() if d not in secrets}
        return Snapshot(
            model=self.model_source,
            flags=items(flags),
            env=items(self._env),
            secrets=items(secrets),
            gpus=self._choice,
            entry=self.entry,
            python=self.python,
            nodes=self.nodes,
        )

    @property
    def dirty(self) -> bool:
        """Unsaved edits: anything that differs from the profile as loaded or saved."""
        return self._saved is None or self.snapshot() != self._saved

    def model_changed(self) -> bool:
        """The model is no longer the loaded profile's (a paste of another model's line)."""
        return self.profile is not None and self.profile.model != self.model_source

    # --- views ------------------------------------------------------------------------

    def _spec(self, dest: str) -> FlagSpec:
        spec = self.schema.get(dest)
        if spec is None:
            raise KeyError(f"sglang has no flag with dest {dest!r}")
        return spec

    def model_path(self) -> str | None:
        """--model-path for sglang's check: a bundled example's folder, whose config it reads."""
        if self.model_source is None:
            return None
        return model_path_for_sglang(self.model_source)

    def launch_model_path(self) -> str | None:
        """--model-path for the launch, its preview and exports: an example's hub repo id."""
        if self.model_source is None:
            return None
        return model_path_for_launch(self.model_source)

    def argv(self, fix: Fix | None = None) -> list[str]:
        """sglang's argv for this launch (with `fix` applied): --model-path, the flags, then
        referenced secrets.

        A referenced secret is `****` here: enough to check (a secret's value never
        changes a verdict), never a secret on screen. `launch_spec` reads the values.
        """
        flags = fix.apply(self._flags) if fix is not None else self._flags
        out = self._base_argv(flags, path=self.model_path())
        for dest in self._secrets:
            if dest not in flags:
                out += [self.schema.cli_name(dest), MASK]
        return out

    def other_rank(self) -> int | None:
        """Across nodes, the rank sglang's check also asks about: a worker (1) for the head's
        line, the head (0) for a worker's; None on one node."""
        nnodes = self._flags.get("nnodes")
        if not isinstance(nnodes, int) or isinstance(nnodes, bool) or nnodes <= 1:
            return None
        if self._flags.get("ep_join_mode") is not None:
            return None  # an elastic-EP joiner is its own group, never the head's line
        rank = self._flags.get("node_rank", 0)
        return 1 if rank == 0 else 0

    def rank_argv(self, rank: int) -> list[str]:
        """`argv()` as the node at --node-rank `rank` runs it (the same line but its rank)."""
        out = self._base_argv({**self._flags, "node_rank": rank}, path=self.model_path())
        for dest in self._secrets:
            if dest not in self._flags:
                out += [self.schema.cli_name(dest), MASK]
        return out

    def _base_argv(
        self, flags: Mapping[str, Any] | None = None, *, path: str | None = None
    ) -> list[str]:
        """--model-path (`path`, else the launch's), then the flags."""
        flags = self._flags if flags is None else flags
        out: list[str] = []
        path = path or self.launch_model_path()
        if path:
            out += ["--model-path", path]
        return out + to_argv({k: v for k, v in flags.items() if k != "model_path"}, self.schema)

    @property
    def launch_python(self) -> str | None:
        """The interpreter that will run sglang: the launch's own, else the one sglaunch found
        (whose sglang the oracle checks with)."""
        return self.python or self.default_python

    def launch_interpreter(self, checked_version: str | None = None) -> LaunchPython:
        """Which Python will run the server (program.py's rule: the launch's own, else the
        one whose sglang was checked) and what is known of it; `checked_version` is the
        checked interpreter's sglang, when one was found."""
        return launch_python_facts(
            self.python, self.default_python, checked_version=checked_version
        )

    def command(self, fix: Fix | None = None) -> list[str]:
        return [*program_argv(self.entry, self.launch_python), *self.argv(fix)]

    def node_command_lines(self, *, display: bool = False) -> str:
        """One launch line per node, each a comment naming its node then the line: the same
        line but --nnodes and --node-rank."""
        nodes = self.nodes
        lines = []
        for rank in range(nodes):
            role = "the head: API server" if rank == 0 else "a worker"
            lines.append(f"# node {rank} of {nodes} ({role})")
            lines.append(self.command_line(display=display, rank=rank))
        return "\n".join(lines)

    def command_line(
        self,
        *,
        multiline: bool = False,
        display: bool = False,
        fix: Fix | None = None,
        rank: int | None = None,
    ) -> str:
        """The launch as one shell line, as it will run (with `fix` applied, to preview it).

        `display` is for the screen: secrets masked, and a bundled example's folder marked
        with the example's name (a shell comment, so the line still runs when copied).
        """
        env_items = sorted(self.environment().items())
        flags = self._fixed(fix)
        if rank is not None:
            # the line node `rank` runs: the topology's count, its own rank
            flags = {**flags, "nnodes": self.nodes, "node_rank": rank}
        cmd = [*program_argv(self.entry, self.launch_python), *self._base_argv(flags)]
        if display:
            env_items = [(k, MASK if is_secret_env_name(k) else v) for k, v in env_items]
            cmd = mask_argv(cmd, self.schema)
        words = [shlex.quote(t) for t in cmd]
        for dest, var in self._secrets.items():
            if dest not in flags:
                # a copied line that runs: the variable the profile reads it from, never ****
                words += [self.schema.cli_name(dest), MASK if display else shell_reference(var)]
        env = [f"{k}={shlex.quote(v)}" for k, v in env_items]
        note = ""
        if display and self.model_source and self.model_source.startswith("example:"):
            note = f"  # {self.model_source}"
        if not multiline:
            return " ".join([*env, *words]) + note
        cut = program_length(self.entry)
        head = " ".join([*env, *words[:cut]])
        return " \\\n    ".join([head, *_pairs(words[cut:])]) + note

    def _fixed(self, fix: Fix | None) -> Mapping[str, Any]:
        return fix.apply(self._flags) if fix is not None else self._flags

    def launch_spec(
        self,
        environ: Mapping[str, str],
        *,
        resolved: Mapping[str, Any] | None = None,
        python: str | None = None,
    ) -> LaunchSpec:
        """What to start: referenced secrets read from `environ` now (UserError if unset)."""
        # the runtime package loads yaml and the monitor: not in `sglaunch check`'s start-up
        from sglaunch.runtime.spec import LaunchSpec

        if self.model_source is None:
            raise UserError("no model: open one first (ctrl+o, or --model PATH)")
        refs = {d: v for d, v in self._secrets.items() if d not in self._flags}
        values = resolve_secret_values(refs, environ, self.schema, profile=self.profile_name)
        argv = self._base_argv()
        for dest, value in values.items():
            argv += [self.schema.cli_name(dest), value]
        return LaunchSpec(
            argv=tuple(argv),
            python=python or self.launch_python or "python",
            entry=self.entry,
            env=self.environment(),
            profile=self.profile_name or ADHOC,
            resolved=resolved,
            prediction=self.prediction(resolved),
        )

    def prediction(self, resolved: Mapping[str, Any] | None = None) -> Prediction | None:
        """The memory plan a launch is compared with once sglang logs its own figures."""
        if self.model is None:
            return None
        # the runtime package loads yaml and the monitor: not in `sglaunch check`'s start-up
        from sglaunch.runtime.after_launch import Prediction
        from sglaunch.validators.memory.plan import plan_memory  # the same: the whole plan

        plan = plan_memory(self.check_input(), resolved)
        gpu = self._gpu
        real = gpu.mode is GpuMode.NVML and gpu.primary is not None
        return Prediction(
            plan,
            gpu_name=gpu.primary.name if real and gpu.primary is not None else None,
            driver=gpu.driver_version,
            tp_size=plan.knobs.tp,
        )


def _pairs(words: list[str]) -> list[str]:
    """Group `--flag value` words (already shell-quoted) for a readable multi-line command."""
    out: list[str] = []
    for word in words:
        if word.startswith("--") or not out:
            out.append(word)
        else:
            out[-1] += " " + word
    return out
