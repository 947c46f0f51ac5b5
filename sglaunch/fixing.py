"""Apply each error's first fix, in rounds, until no fixable error is left: what
`sglaunch check --fix` and `sglaunch --apply --fix` share. UI-free."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sglaunch.flags.schema import FlagSchema
    from sglaunch.session import LaunchSession
    from sglaunch.verdict import Verdict

# A fix can make another rule fire (and its fix the first again): a bound, not a hope.
MAX_FIX_ROUNDS = 5


@dataclass(frozen=True)
class AppliedFix:
    code: str  # the finding's code
    label: str  # the fix's own words
    changes: str  # what changed in the flags: "--tp-size 2, removed --enable-dp-attention"

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "fix": self.label, "changes": self.changes}


def fix_rounds(
    session: LaunchSession,
    verdict: Verdict,
    check: Callable[[LaunchSession], Verdict],
    *,
    on_fix: Callable[[AppliedFix], None] | None = None,
    rounds: int = MAX_FIX_ROUNDS,
) -> tuple[Verdict, list[AppliedFix]]:
    """Apply each fixable error's first fix to `session`, re-`check` after each round, until
    none is left or `rounds` ran. Returns the last verdict and what was applied, in order."""
    applied: list[AppliedFix] = []
    for _ in range(rounds):
        errors = [f for f in verdict.findings if f.is_error and f.fixes]
        if not errors:
            break
        for finding in errors:
            fix = finding.fixes[0]
            before = dict(session.flags)
            session.apply_fix(fix)
            done = AppliedFix(
                finding.code, fix.label, describe_change(before, session.flags, session.schema)
            )
            applied.append(done)
            if on_fix is not None:
                on_fix(done)
        verdict = check(session)
    return verdict, applied


def describe_change(before: Mapping[str, Any], after: Mapping[str, Any], schema: FlagSchema) -> str:
    parts = []
    for dest in sorted(set(before) | set(after)):
        if dest not in after:
            parts.append(f"removed {schema.cli_name(dest)}")
        elif before.get(dest) != after[dest]:
            parts.append(f"{schema.cli_name(dest)} {after[dest]}")
    return ", ".join(parts) or "no change"
