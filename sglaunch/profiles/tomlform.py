"""A profile as a TOML file, and back.

    schema_version = 1
    name = "sala-tp2"
    model = "example:minicpm-sala"
    entry = "launch_server"          # or "serve"
    nodes = 2                        # machines this server spans (default 1)
    sglang_python = "/opt/sglang/bin/python"   # optional
    notes = "..."

    [gpus]
    cuda_visible_devices = "0,1"
    preset = "H100x8"

    [flags]                          # sglang dest names, typed
    tp_size = 2
    enable_metrics = true
    cuda_graph_bs_decode = [1, 2, 4]

    [flags.cuda_graph_config]        # JSON-valued flags are tables when TOML can hold them
    ...

    [env]
    SGLANG_MINICPM_FORCE_DENSE = "1"

    [secrets]                        # secret flag -> the environment variable holding it
    api_key = "SGLANG_API_KEY"

    [validated]
    sglang_version = "0.5.23"
    gpu_names = ["NVIDIA H100 80GB HBM3"]
    gpu_count = 8
    at = "2025-01-01T12:00:00Z"     # RFC 3339

The file name is the profile's identity: a `name` that differs (a copied file) is ignored.
"""

from __future__ import annotations

import difflib
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import tomli_w

from sglaunch.errors import UserError
from sglaunch.flags.schema import FlagSchema, bundled_schema
from sglaunch.profiles.profile import (
    JSON_TYPES,
    SCHEMA_VERSION,
    GpuSelection,
    Profile,
    Validated,
    check_env,
    check_flags,
    check_nodes,
    check_profile,
    check_secrets,
    check_text_fields,
    flag_spec,
)
from sglaunch.program import ENTRIES
from sglaunch.safeio import InputError, decode_text, parse_json, parse_toml, shown

HEADER = (
    "# sglaunch launch profile (see `sglaunch profiles show NAME`).\n"
    "# [flags] uses sglang's dest names: tp_size for --tp-size. [secrets] names the\n"
    "# environment variable that holds each secret; sglaunch never stores secret values.\n\n"
)
_TOP_KEYS = (
    "schema_version",
    "name",
    "model",
    "entry",
    "sglang_python",
    "notes",
    "nodes",
    "gpus",
    "flags",
    "env",
    "secrets",
    "validated",
)


def _contains_none(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, dict):
        return any(_contains_none(v) for v in value.values())
    if isinstance(value, list):
        return any(_contains_none(v) for v in value)
    return False


def _flag_to_toml(dest: str, value: Any, schema: FlagSchema) -> Any:
    spec = flag_spec(schema, dest)
    if (
        spec is not None
        and spec.type in JSON_TYPES
        and (isinstance(value, str) or _contains_none(value))
    ):
        # TOML has no null, and a bare string here means JSON text (see _flag_from_toml)
        return json.dumps(value, ensure_ascii=False)
    return value


def _flag_from_toml(dest: str, value: Any, schema: FlagSchema) -> Any:
    spec = flag_spec(schema, dest)
    if spec is not None and spec.type in JSON_TYPES and isinstance(value, str):
        try:
            return parse_json(value, label=spec.name, max_depth=32, what="flag value")
        except InputError as exc:
            raise ValueError(
                f"{spec.name} holds JSON text that sglaunch cannot use: {exc}"
            ) from None
    return value


def profile_to_toml(profile: Profile, schema: FlagSchema | None = None) -> bytes:
    schema = schema or bundled_schema()
    check_profile(profile, schema)
    flags, _ = check_flags(profile.flags, schema)
    doc: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "name": profile.name}
    if profile.model is not None:
        doc["model"] = profile.model
    doc["entry"] = profile.entry
    if profile.sglang_python:
        doc["sglang_python"] = profile.sglang_python
    if profile.notes:
        doc["notes"] = profile.notes
    if profile.nodes != 1:
        doc["nodes"] = profile.nodes
    gpus = {
        k: v
        for k, v in (
            ("cuda_visible_devices", profile.gpus.cuda_visible_devices),
            ("preset", profile.gpus.preset),
        )
        if v is not None
    }
    if gpus:
        doc["gpus"] = gpus
    doc["flags"] = {dest: _flag_to_toml(dest, v, schema) for dest, v in flags.items()}
    if profile.env:
        doc["env"] = dict(profile.env)
    if profile.secrets:
        doc["secrets"] = dict(profile.secrets)
    if profile.validated is not None:
        v = profile.validated
        at = v.at if v.at.tzinfo is not None else v.at.replace(tzinfo=UTC)
        doc["validated"] = {
            "sglang_version": v.sglang_version,
            "gpu_names": list(v.gpu_names),
            "gpu_count": v.gpu_count,
            # a string: tomli_w writes datetimes with a space, not RFC 3339's "T"
            "at": rfc3339(at),
        }
    return (HEADER + tomli_w.dumps(doc, multiline_strings=True)).encode("utf-8")


def rfc3339(at: datetime) -> str:
    """2025-06-01T12:30:00Z (UTC, whole seconds unless there are fractions)."""
    text = at.astimezone(UTC).isoformat()
    return text.removesuffix("+00:00") + "Z"


class _Reader:
    """Typed access to a parsed profile; every problem is one line naming the file (and line)."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()

    def line_of(self, key: str, table: str | None = None) -> int | None:
        """The line of `key = ...` (inside [table] when given) or of a `[key]` header."""
        assign = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
        header = re.compile(r"^\s*\[+\s*([^\]]+?)\s*\]+")
        current: str | None = None
        for i, line in enumerate(self.lines, 1):
            m = header.match(line)
            if m:
                current = m.group(1)
                if table is None and current == key:
                    return i
                continue
            in_table = current is None if table is None else current == table
            if in_table and assign.match(line):
                return i
        return None

    def fail(self, message: str, key: str | None = None, table: str | None = None) -> UserError:
        line = self.line_of(key, table) if key else None
        where = f"{shown(self.path)} (line {line})" if line else shown(self.path)
        return UserError(f"profile {where}: {message}")

    def get(
        self,
        doc: dict[str, Any],
        key: str,
        kind: type | tuple[type, ...],
        what: str,
        table: str | None = None,
    ) -> Any:
        value = doc.get(key)
        if value is None:
            return None
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
            name = f"{table}.{key}" if table else key
            raise self.fail(f"{name} must be {what}, got {shown(repr(value), 60)}", key, table)
        return value

    def table(self, doc: dict[str, Any], key: str) -> dict[str, Any]:
        value = doc.get(key, {})
        if not isinstance(value, dict):
            raise self.fail(f"{key} must be a table ([{key}]), got {shown(repr(value), 60)}", key)
        return value


def profile_from_toml(
    data: bytes, *, name: str, path: Path, schema: FlagSchema | None = None
) -> Profile:
    """Parse a profile file; UserError (one line, with the TOML error's line) when it is broken."""
    schema = schema or bundled_schema()
    label = f"profile {shown(path)}"
    hint = "fix it or move it aside"
    try:
        text = decode_text(data, label)
    except InputError as exc:
        raise UserError(f"{exc.message}; {hint}") from None
    if not text.strip():
        backup = path.with_name(path.name + ".bak")
        where = f"; its previous version is {shown(backup)}" if backup.exists() else ""
        raise UserError(f"{label} is empty: delete it or import the launch again{where}")
    try:
        doc = parse_toml(text, label=label, hint=hint)
    except InputError as exc:
        raise UserError(exc.message if hint in exc.message else f"{exc.message}; {hint}") from None
    if doc and not any(difflib.get_close_matches(key, _TOP_KEYS, n=1) for key in doc):
        raise UserError(
            f"{label} is not an sglaunch profile (none of its keys is one a profile has: "
            f"{', '.join(_TOP_KEYS[:4])}, ...)"
        )
    r = _Reader(path, text)
    for key in doc:
        if key not in _TOP_KEYS:
            close = difflib.get_close_matches(key, _TOP_KEYS, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise r.fail(f"unknown key {key!r}{hint}", key)
    version = r.get(doc, "schema_version", int, "an integer")
    if version is not None and version > SCHEMA_VERSION:
        raise r.fail(
            f"schema_version {version} is newer than this sglaunch understands ({SCHEMA_VERSION}); "
            "upgrade sglaunch",
            "schema_version",
        )
    entry = r.get(doc, "entry", str, "launch_server or serve") or "launch_server"
    if entry not in ENTRIES:
        raise r.fail(f"entry must be launch_server or serve, got {entry!r}", "entry")

    nodes = doc.get("nodes", 1)
    problems = check_nodes(nodes)
    if problems:
        raise r.fail(problems[0][1], "nodes")

    gpus_doc = r.table(doc, "gpus")
    gpus = GpuSelection(
        cuda_visible_devices=r.get(
            gpus_doc, "cuda_visible_devices", str, 'a string like "0,1"', "gpus"
        ),
        preset=r.get(gpus_doc, "preset", str, 'a string like "H100x8"', "gpus"),
    )

    raw_flags: dict[str, Any] = {}
    for dest, value in r.table(doc, "flags").items():
        try:
            raw_flags[dest] = _flag_from_toml(dest, value, schema)
        except ValueError as exc:
            raise r.fail(str(exc), dest, "flags") from None
    model = r.get(doc, "model", str, "a string: a folder, a repo id or example:NAME")
    if "model_path" in raw_flags and model is None:
        model = raw_flags.pop("model_path")
    flags, problems = check_flags(raw_flags, schema)
    if problems:
        raise r.fail(problems[0][1], problems[0][0], "flags")

    env_doc = dict(r.table(doc, "env"))
    # CUDA_VISIBLE_DEVICES is the GPU selection; a hand-written [env] one moves there
    if "CUDA_VISIBLE_DEVICES" in env_doc and gpus.cuda_visible_devices is None:
        gpus.cuda_visible_devices = str(env_doc.pop("CUDA_VISIBLE_DEVICES"))
    env, problems = check_env(env_doc)
    if problems:
        raise r.fail(problems[0][1], problems[0][0], "env")
    secrets, problems = check_secrets(r.table(doc, "secrets"), schema)
    if problems:
        raise r.fail(problems[0][1], problems[0][0], "secrets")

    validated = None
    vdoc = r.table(doc, "validated")
    if vdoc:
        at = vdoc.get("at")
        if isinstance(at, str):
            try:
                at = datetime.fromisoformat(at)
            except ValueError:
                raise r.fail(
                    f"validated.at is not an RFC 3339 time: {at!r}", "at", "validated"
                ) from None
        if not isinstance(at, datetime):
            raise r.fail("validated.at must be a time like 2025-01-01T12:00:00Z", "at", "validated")
        if at.tzinfo is None:
            at = at.replace(tzinfo=UTC)
        names = vdoc.get("gpu_names", [])
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise r.fail("validated.gpu_names must be a list of strings", "gpu_names", "validated")
        validated = Validated(
            sglang_version=r.get(vdoc, "sglang_version", str, "a string", "validated") or "",
            gpu_names=names,
            gpu_count=r.get(vdoc, "gpu_count", int, "an integer", "validated") or 0,
            at=at,
        )
    profile = Profile(
        name=name,
        model=model,
        flags=flags,
        env=env,
        secrets=secrets,
        gpus=gpus,
        sglang_python=r.get(doc, "sglang_python", str, "a path to a Python interpreter"),
        entry=entry,
        notes=r.get(doc, "notes", str, "a string") or "",
        validated=validated,
        nodes=nodes,
    )
    problems = check_text_fields(profile)
    if problems:
        key = problems[0][0]
        raise r.fail(
            problems[0][1], key, "gpus" if key in ("cuda_visible_devices", "preset") else None
        )
    return profile
