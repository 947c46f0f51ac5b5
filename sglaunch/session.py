"""A launch being edited: model, GPUs, flags and environment, with its built-in verdict.

UI-free: the TUI drives one, `--apply` drives one, tests drive one. Every
change re-runs the built-in rules synchronously (well under a millisecond);
asking sglang (the oracle) is the caller's business, because it is slow.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sglaunch.checking import build_input
from sglaunch.facts.model import model_path_for_sglang
from sglaunch.flags.argv import (
    FlagTypeError,
    check_choice,
    convert,
    format_value,
    parse_argv,
    to_argv,
)
from sglaunch.flags.launchline import LaunchLine
from sglaunch.flags.schema import FlagSchema, FlagSpec
from sglaunch.validators.engine import Report, validate
from sglaunch.validators.facts import FlagIssue, GpuFacts, ModelFacts
from sglaunch.validators.findings import Fix

ENTRY_LAUNCH_SERVER = "launch_server"
ENTRY_SERVE = "serve"


class FlagValueError(ValueError):
    """A value typed into the editor that sglang's parser would reject; the message is argparse's."""


@dataclass
class LaunchSession:
    schema: FlagSchema
    gpu: GpuFacts
    model_source: str | None = None
    model: ModelFacts | None = None
    flags: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    entry: str = ENTRY_LAUNCH_SERVER
    python: str = "python"
    issues: list[FlagIssue] = field(default_factory=list)
    report: Report | None = None
    revision: int = 0  # bumped on every change; stale oracle answers are compared against it

    # --- changes --------------------------------------------------------------------

    def _changed(self) -> Report:
        self.revision += 1
        return self.validate()

    def validate(self) -> Report:
        inp = build_input(
            self.flags,
            gpu=self.gpu,
            model=self.model,
            env=self.env,
            schema=self.schema,
            issues=self.issues,
        )
        self.report = validate(inp)
        return self.report

    def set_flag(self, dest: str, value: Any) -> Report:
        spec = self._spec(dest)
        if value is None or (spec.is_bool and value is False and spec.action != "boolean_optional"):
            self.flags.pop(dest, None)
        else:
            self.flags[dest] = value
        self.issues = [i for i in self.issues if i.dest != dest]
        return self._changed()

    def unset_flag(self, dest: str) -> Report:
        self.flags.pop(dest, None)
        self.issues = [i for i in self.issues if i.dest != dest]
        return self._changed()

    def apply_fix(self, fix: Fix) -> Report:
        self.flags = dict(fix.apply(self.flags))
        touched = set(fix.unset) | set(fix.set)
        self.issues = [i for i in self.issues if i.dest not in touched]
        return self._changed()

    def set_env(self, name: str, value: str | None) -> Report:
        if value is None:
            self.env.pop(name, None)
        else:
            self.env[name] = value
        return self._changed()

    def set_gpu(self, gpu: GpuFacts) -> Report:
        self.gpu = gpu
        return self._changed()

    def set_model(self, source: str, facts: ModelFacts) -> Report:
        self.model_source = source
        self.model = facts
        return self._changed()

    def load_argv(
        self, argv: list[str], env: Mapping[str, str] | None = None
    ) -> tuple[str | None, Report]:
        """Replace the flags with a launch's argv; returns (its --model-path, report)."""
        parsed = parse_argv(argv, self.schema)
        values = dict(parsed.values)
        model_path = values.pop("model_path", None)
        self.flags = values
        self.issues = list(parsed.issues)
        if env is not None:
            self.env = dict(env)
        return model_path, self._changed()

    def load_launch_line(self, line: LaunchLine) -> tuple[str | None, Report]:
        self.entry = line.entry
        if line.python:
            self.python = line.python
        return self.load_argv(line.argv, line.env)

    # --- views ------------------------------------------------------------------------

    def _spec(self, dest: str) -> FlagSpec:
        spec = self.schema.get(dest)
        if spec is None:
            raise KeyError(f"sglang has no flag with dest {dest!r}")
        return spec

    def model_path(self) -> str | None:
        if self.model_source is None:
            return None
        return model_path_for_sglang(self.model_source)

    def argv(self) -> list[str]:
        """sglang's argv for this launch: --model-path first, then the flags."""
        out: list[str] = []
        path = self.model_path()
        if path:
            out += ["--model-path", path]
        return out + to_argv(
            {k: v for k, v in self.flags.items() if k != "model_path"}, self.schema
        )

    def command(self) -> list[str]:
        if self.entry == ENTRY_SERVE:
            return ["sglang", "serve", *self.argv()]
        return [self.python, "-m", "sglang.launch_server", *self.argv()]

    def command_line(self, *, multiline: bool = False, display: bool = False) -> str:
        """The launch as one shell line.

        `display` is for the screen: bundled-example paths shortened, secrets masked.
        """
        env_items = sorted(self.env.items())
        cmd = self.command()
        if display:
            from sglaunch.secrets import MASK, is_secret_env_name, mask_argv

            env_items = [(k, MASK if is_secret_env_name(k) else v) for k, v in env_items]
            cmd = mask_argv(cmd, self.schema)
            if self.model_source and self.model_source.startswith("example:"):
                full = self.model_path()
                cmd = [f"<{self.model_source}>" if tok == full else tok for tok in cmd]
        env = [f"{k}={shlex.quote(v)}" for k, v in env_items]
        if not multiline:
            return shlex.join(cmd) if not env else " ".join(env) + " " + shlex.join(cmd)
        head = " ".join([*env, *map(shlex.quote, cmd[: 3 if self.entry != ENTRY_SERVE else 2])])
        rest = _pairs(cmd[3 if self.entry != ENTRY_SERVE else 2 :])
        return " \\\n    ".join([head, *rest])


def parse_value(spec: FlagSpec, text: str) -> Any:
    """Editor text to a typed value, exactly as sglang's parser would convert it."""
    if spec.is_bool:
        low = text.lower()
        if low in ("true", "1", "yes", "on"):
            return True
        if low in ("false", "0", "no", "off"):
            return False
        raise FlagValueError(f"argument {spec.argparse_name}: expected on or off, got {text!r}")
    raw_values = shlex.split(text) if spec.is_list else [text]
    values = []
    for raw in raw_values:
        try:
            value = convert(spec, raw)
        except FlagTypeError as e:
            raise FlagValueError(f"argument {spec.argparse_name}: {e.message}") from None
        problem = check_choice(spec, value)
        if problem:
            raise FlagValueError(f"argument {spec.argparse_name}: {problem}")
        values.append(value)
    return values if spec.is_list else values[0]


def display_value(value: Any) -> str:
    if isinstance(value, list):
        return " ".join(shlex.quote(format_value(v)) for v in value)
    return format_value(value)


def _pairs(tokens: list[str]) -> list[str]:
    """Group `--flag value` tokens for a readable multi-line command."""
    out: list[str] = []
    for tok in tokens:
        if tok.startswith("--") or not out:
            out.append(shlex.quote(tok))
        else:
            out[-1] += " " + shlex.quote(tok)
    return out
