"""A profile validated with one sglang release, checked with another: what changed.

UI-free: `--apply` (and the TUI, loading a profile) call `version_changes` with the
release the profile records and the active one, and show the lines it returns.
Both sides run the built-in tier only (the bundled schema and rules of each
release, well under a millisecond each), so the answer never needs the old sglang.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sglaunch.checking import check_flags
from sglaunch.flags.schema import bundled_schema
from sglaunch.validators.facts import GpuFacts, ModelFacts
from sglaunch.validators.release_spans import is_supported, key, semantics


@dataclass(frozen=True)
class VersionChange:
    """The built-in verdict on one launch under two releases."""

    old: str  # the release the profile was validated with
    new: str  # the release it is checked for now
    gone: tuple[str, ...]  # findings the old release gives and the new one does not
    new_findings: tuple[str, ...]  # findings only the new release gives
    flags_gone: tuple[str, ...]  # flags of the launch the new release does not have

    @property
    def same(self) -> bool:
        return not (self.gone or self.new_findings or self.flags_gone)

    def lines(self) -> list[str]:
        head = f"validated with sglang {self.old}; now checked for sglang {self.new}"
        if self.same:
            return [f"{head}: the built-in rules give this launch the same verdict in both"]
        out = [f"{head}; what differs for this launch:"]
        out += [f"  {flag} does not exist in sglang {self.new}" for flag in self.flags_gone]
        out += [f"  only in {self.old}: {f}" for f in self.gone]
        out += [f"  new in {self.new}: {f}" for f in self.new_findings]
        return out


def _verdicts(
    argv: Sequence[str],
    version: str,
    *,
    gpu: GpuFacts,
    model: ModelFacts | None,
    env: Mapping[str, str],
) -> tuple[dict[str, str], set[str]]:
    """({code: 'code (severity): message'}, unknown options) under `version`'s schema and rules."""
    result = check_flags(
        list(argv),
        schema=bundled_schema(version),
        gpu=gpu,
        model=model,
        env=env,
        sglang_version=version,
    )
    shown = {
        f"{f.code}|{f.severity}": f"{f.code} ({f.severity}): {f.message}"
        for f in result.findings
        if f.code != "unknown-flag"
    }
    # argparse names the unrecognized tokens ("--attn-dp-size 2"): the flag is the first
    unknown = {
        i.option.split()[0] for i in result.parsed.issues if str(i.kind) == "unknown" and i.option
    }
    return shown, unknown


def version_changes(
    old: str | None,
    new: str,
    argv: Sequence[str],
    *,
    gpu: GpuFacts,
    model: ModelFacts | None,
    env: Mapping[str, str] | None = None,
) -> VersionChange | None:
    """What changes for `argv` between release `old` and `new`; None when there is nothing
    to compare (no recorded release, the same release, or one sglaunch has no rules for)."""
    if not old or not key(old) or key(old) == key(new):
        return None
    if not is_supported(old):
        return None
    environment = dict(env or {})
    before, unknown_before = _verdicts(argv, semantics(old), gpu=gpu, model=model, env=environment)
    after, unknown_after = _verdicts(argv, semantics(new), gpu=gpu, model=model, env=environment)
    return VersionChange(
        old=old,
        new=new,
        gone=tuple(before[k] for k in sorted(before.keys() - after.keys())),
        new_findings=tuple(after[k] for k in sorted(after.keys() - before.keys())),
        flags_gone=tuple(sorted(unknown_after - unknown_before)),
    )


def describe(change: VersionChange | None) -> list[str]:
    return [] if change is None else change.lines()


def profile_named_version(validated: Any) -> str | None:
    """The release a profile names: the one it was last validated with, when sglaunch has rules for it."""
    version = getattr(validated, "sglang_version", None) if validated is not None else None
    return version if version and is_supported(version) else None
