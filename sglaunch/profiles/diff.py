"""What differs between two profiles, setting by setting (never secret values: there are none)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from sglaunch.flags.schema import FlagSchema, bundled_schema
from sglaunch.profiles.profile import Profile, check_flags, flag_spec


@dataclass(frozen=True)
class DiffLine:
    key: str  # "model", "flags.tp_size", "env.SGLANG_X", "secrets.api_key", "gpus.preset", ...
    label: str  # how to show it: "--tp-size", "env SGLANG_X", "model"
    old: Any  # None: not set in the first profile
    new: Any  # None: not set in the second

    @property
    def kind(self) -> Literal["added", "removed", "changed"]:
        if self.old is None:
            return "added"
        if self.new is None:
            return "removed"
        return "changed"


def _settings(profile: Profile, schema: FlagSchema) -> dict[str, tuple[str, Any]]:
    out: dict[str, tuple[str, Any]] = {
        "model": ("model", profile.model),
        "entry": ("entry", profile.entry),
        "sglang_python": ("sglang python", profile.sglang_python),
        "gpus.cuda_visible_devices": ("CUDA_VISIBLE_DEVICES", profile.gpus.cuda_visible_devices),
        "gpus.preset": ("GPU preset", profile.gpus.preset),
        "nodes": ("nodes", profile.nodes),
    }
    flags, _ = check_flags(profile.flags, schema)
    for dest, value in flags.items():
        spec = flag_spec(schema, dest)
        out[f"flags.{dest}"] = (spec.name if spec else dest, value)
    for k, v in profile.env.items():
        out[f"env.{k}"] = (f"env {k}", v)
    for dest, var in profile.secrets.items():
        out[f"secrets.{dest}"] = (f"{schema.cli_name(dest)} from env", var)
    out["notes"] = ("notes", profile.notes or None)
    return out


def diff(a: Profile, b: Profile, schema: FlagSchema | None = None) -> list[DiffLine]:
    """Settings of `a` and `b` that differ, in a's order then b's new ones."""
    schema = schema or bundled_schema()
    left, right = _settings(a, schema), _settings(b, schema)
    out: list[DiffLine] = []
    for key in [*left, *(k for k in right if k not in left)]:
        label = (left.get(key) or right[key])[0]
        old = left[key][1] if key in left else None
        new = right[key][1] if key in right else None
        # 1 == 1.0 == True in Python; a flag that changed type did change
        if old != new or type(old) is not type(new):
            out.append(DiffLine(key=key, label=label, old=old, new=new))
    return out
