"""The launch profile: a model, sglang's flags by dest name, environment, GPUs, and notes.

Values are typed the way sglang's parser would type them (`tp_size = 2`, not
"2"); None means "not set" and is never stored. Secrets are never values here:
`secrets` maps a secret flag's dest to the environment variable that holds it.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sglaunch.errors import UserError
from sglaunch.flags.schema import FlagSchema, FlagSpec, bundled_schema
from sglaunch.program import ENTRIES, Entry
from sglaunch.safeio import has_control, number_problem, shown
from sglaunch.secrets import ENV_NAME, is_secret_env_name, is_secret_flag

SCHEMA_VERSION = 1

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # fullmatch: `$` lets "name\n" through
MAX_NAME = 100
JSON_TYPES = ("json", "json_object", "json_list")
# GPU indices, UUIDs (GPU-…) and MIG names (MIG-GPU-…/1/0), comma-separated
_CUDA_DEVICES = re.compile(r"[A-Za-z0-9,:/._ -]*")
_INT_TYPES = ("int", "human_int")
# No sglang deployment spans more machines; a larger number is a typo (nodes = 10000).
MAX_NODES = 1024
# dests a profile holds elsewhere or cannot hold at all
_NOT_FLAGS = {
    "model_path": "the model is the profile's `model`, not a flag",
    "config": "a profile is the config; import the YAML file instead (sglaunch profiles import FILE.yaml)",
}


@dataclass
class GpuSelection:
    """Which GPUs: the CUDA_VISIBLE_DEVICES string for the server, and/or a planning preset."""

    cuda_visible_devices: str | None = None
    preset: str | None = None  # e.g. "H100x8", for checks on a machine without those GPUs


@dataclass
class Validated:
    """What the profile was last validated with."""

    sglang_version: str
    gpu_names: list[str]
    gpu_count: int
    at: datetime  # timezone-aware; written as an RFC 3339 timestamp


@dataclass
class Profile:
    name: str
    model: str | None = None  # a folder, a Hugging Face repo id, or example:NAME
    flags: dict[str, Any] = field(default_factory=dict)  # sglang dest -> typed value
    env: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)  # secret flag dest -> env var name
    gpus: GpuSelection = field(default_factory=GpuSelection)
    sglang_python: str | None = None  # None: the interpreter sglaunch is told about, or `python`
    entry: Entry = "launch_server"
    notes: str = ""
    validated: Validated | None = None
    # machines this one server spans (sglang's --nnodes); each runs the same line but
    # its --node-rank. The truth for every per-node line and export.
    nodes: int = 1
    # sha256 of the file bytes this was loaded from (None: never saved); `save`
    # refuses when the file no longer has it. Not part of equality.
    revision: str | None = field(default=None, compare=False, repr=False)


class FlagValueError(ValueError):
    """A flag value of the wrong type for its flag; the message names the flag."""


def validate_name(name: str) -> str:
    if not isinstance(name, str) or not name:
        raise UserError("a profile needs a name: letters, digits, '-', '_' and '.'")
    if len(name) > MAX_NAME or not _NAME.fullmatch(name):
        raise UserError(
            f"invalid profile name {name!r}: use letters, digits, '-', '_' and '.', "
            f"starting with a letter or digit (at most {MAX_NAME} characters, no '/' or spaces)"
        )
    return name


def name_from_model(model: str) -> str:
    """A profile name suggested by a model: /models/MiniCPM4-8B -> MiniCPM4-8B."""
    base = model.rstrip("/").rsplit("/", 1)[-1].split(":", 1)[-1]
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-._")[:MAX_NAME]
    return name or "profile"


def flag_spec(schema: FlagSchema, dest: str) -> FlagSpec | None:
    """The spec for a dest, preferring the current flag over a deprecated alias with the same dest.

    (`--monokernel-backend` and `--enable-amd-monokernel` share a dest; the schema's
    `get` returns whichever came last.)
    """
    spec = schema.get(dest)
    if spec is None or not spec.deprecated:
        return spec
    return next((f for f in schema.flags if f.dest == dest and not f.deprecated), spec)


def _type_word(spec: FlagSpec) -> str:
    if spec.type in _INT_TYPES:
        return "an integer"
    if spec.type == "float":
        return "a number"
    if spec.type in JSON_TYPES:
        return "a JSON value"
    return "a string"


def _scalar(spec: FlagSpec, value: Any) -> Any:
    t = spec.type
    if t in _INT_TYPES:
        if isinstance(value, bool) or not isinstance(value, int):
            raise FlagValueError(f"{spec.name} expects an integer, got {value!r}")
    elif t == "float":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise FlagValueError(f"{spec.name} expects a number, got {value!r}")
        value = float(value)
    elif t in JSON_TYPES:
        if t == "json_object" and not isinstance(value, dict):
            raise FlagValueError(f"{spec.name} expects a JSON object, got {value!r}")
    elif not isinstance(value, str):
        raise FlagValueError(f"{spec.name} expects a string, got {value!r}")
    problem = number_problem(value)
    if problem:
        raise FlagValueError(f"{spec.name}: {problem}")
    if spec.choices is not None and value not in spec.choices:
        choices = ", ".join(str(c) for c in spec.choices)
        raise FlagValueError(f"{spec.name}: {value!r} is not one of {choices}")
    return value


def coerce_flag_value(spec: FlagSpec, value: Any) -> Any:
    """`value` checked against the flag's type (int for --tp-size, a list for nargs flags)."""
    if spec.is_bool or (spec.action == "store_const" and spec.type == "const"):
        if not isinstance(value, bool):
            raise FlagValueError(f"{spec.name} is a switch: write true or false, got {value!r}")
        return value
    if spec.is_list:
        if not isinstance(value, list):
            raise FlagValueError(f"{spec.name} takes a list of values, e.g. [1, 2], got {value!r}")
        return [_scalar(spec, v) for v in value]
    if spec.action == "store_const":
        # a retired valued flag (--monokernel-backend amd) stores its constant
        return value
    return _scalar(spec, value)


def unknown_flag_message(dest: str, schema: FlagSchema) -> str:
    close = difflib.get_close_matches(dest, list(schema.by_dest), n=1, cutoff=0.7)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown sglang flag {dest!r}{hint}"


def check_flags(
    flags: Mapping[str, Any], schema: FlagSchema | None = None
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """(the flags typed and without unset values, problems as (dest, one-line message))."""
    schema = schema or bundled_schema()
    out: dict[str, Any] = {}
    problems: list[tuple[str, str]] = []
    for dest, value in flags.items():
        if dest in _NOT_FLAGS:
            problems.append((dest, f"flag {dest!r}: {_NOT_FLAGS[dest]}"))
            continue
        spec = flag_spec(schema, dest)
        if spec is None:
            problems.append((dest, unknown_flag_message(dest, schema)))
            continue
        if value is None:
            continue
        if is_secret_flag(spec):
            problems.append(
                (
                    dest,
                    f"{spec.name} holds a secret and is never stored as text: "
                    f'write [secrets] {dest} = "ENV_VAR_NAME" and export that variable',
                )
            )
            continue
        try:
            typed = coerce_flag_value(spec, value)
        except FlagValueError as exc:
            problems.append((dest, str(exc)))
            continue
        if spec.action == "store_true" and typed is False:
            continue  # the same as absent: sglang's default is off
        if _holds_control(typed):
            problems.append((dest, f"{spec.name}: {_CONTROL_MESSAGE}, got {shown(repr(typed))}"))
            continue
        out[dest] = typed
    return out, problems


_CONTROL_MESSAGE = "a control character (newline, escape, ...) cannot be part of a launch"


def _holds_control(value: Any) -> bool:
    """Whether a flag value (JSON values included) holds a control character anywhere."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if has_control(v):
                return True
        elif isinstance(v, dict):
            stack += [*v.keys(), *v.values()]
        elif isinstance(v, list | tuple):
            stack += list(v)
    return False


def check_env(env: Mapping[str, Any]) -> tuple[dict[str, str], list[tuple[str, str]]]:
    out: dict[str, str] = {}
    problems: list[tuple[str, str]] = []
    for name, value in env.items():
        if not ENV_NAME.fullmatch(name):
            problems.append((name, f"environment variable name {name!r} is not valid"))
        elif is_secret_env_name(name):
            problems.append(
                (
                    name,
                    f"{name} looks like a secret and sglaunch never stores secrets: remove it "
                    f"and export {name} in the shell that starts sglaunch (the server inherits it)",
                )
            )
        elif isinstance(value, bool) or not isinstance(value, str | int | float):
            problems.append(
                (name, f'environment variable {name} must be a string, e.g. {name} = "1"')
            )
        elif has_control(str(value)) or number_problem(value):
            problems.append((name, f"environment variable {name}: {_CONTROL_MESSAGE}"))
        else:
            out[name] = str(value)
    return out, problems


def check_secrets(
    refs: Mapping[str, Any], schema: FlagSchema | None = None
) -> tuple[dict[str, str], list[tuple[str, str]]]:
    schema = schema or bundled_schema()
    out: dict[str, str] = {}
    problems: list[tuple[str, str]] = []
    for dest, var in refs.items():
        spec = flag_spec(schema, dest)
        if spec is None or not is_secret_flag(spec):
            problems.append(
                (
                    dest,
                    f"[secrets] {dest}: not a secret flag (secret flags: api_key, admin_api_key, ...)",
                )
            )
        elif not isinstance(var, str) or not ENV_NAME.fullmatch(var):
            problems.append(
                (
                    dest,
                    f"[secrets] {dest} names the environment variable that holds it, "
                    f'e.g. {dest} = "SGLANG_API_KEY", got {var!r}',
                )
            )
        else:
            out[dest] = var
    return out, problems


def check_profile(profile: Profile, schema: FlagSchema | None = None) -> None:
    """Raise UserError (first problem, one line) unless the profile can be stored as it is."""
    schema = schema or bundled_schema()
    validate_name(profile.name)
    problems: list[tuple[str, str]] = []
    if profile.entry not in ENTRIES:
        problems.append(("entry", f"entry must be launch_server or serve, got {profile.entry!r}"))
    problems += check_flags(profile.flags, schema)[1]
    problems += check_env(profile.env)[1]
    problems += check_secrets(profile.secrets, schema)[1]
    problems += check_text_fields(profile)
    problems += check_nodes(profile.nodes)
    if problems:
        raise UserError(f"profile '{profile.name}': {problems[0][1]}")


def check_nodes(nodes: Any) -> list[tuple[str, str]]:
    """Problems with a node count: a whole number from 1 to MAX_NODES."""
    if isinstance(nodes, bool) or not isinstance(nodes, int):
        return [("nodes", f"nodes must be a whole number of machines, got {shown(repr(nodes))}")]
    if not 1 <= nodes <= MAX_NODES:
        return [
            (
                "nodes",
                f"nodes must be from 1 to {MAX_NODES} (the machines one server spans), got {nodes}",
            )
        ]
    return []


def check_text_fields(profile: Profile) -> list[tuple[str, str]]:
    """Problems with the profile's free-text fields: each reaches a command line, a
    script or a YAML comment, where a newline would end the line and start another."""
    problems: list[tuple[str, str]] = []
    devices = profile.gpus.cuda_visible_devices
    if devices is not None and not _CUDA_DEVICES.fullmatch(devices):
        problems.append(
            (
                "cuda_visible_devices",
                f'gpus.cuda_visible_devices must list GPU indices or UUIDs like "0,1", '
                f"got {shown(repr(devices))}",
            )
        )
    fields = (
        ("model", profile.model, ""),
        ("sglang_python", profile.sglang_python, ""),
        ("preset", profile.gpus.preset, ""),
        ("notes", profile.notes, "\n\t\r"),
    )
    for key, value, allow in fields:
        if value and has_control(value, allow):
            problems.append((key, f"{key}: {_CONTROL_MESSAGE}, got {shown(repr(value))}"))
    return problems


def json_text(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
