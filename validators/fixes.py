"""Vetting fixes: a fix is offered only if the rules, run again on the fixed flags, agree.

A rule proposes fixes from what it sees; only a second run sees what the fix leads to.
On MiniCPM, the deprecation warning's "write it as --attn-dp-size 4" walks straight into
"MiniCPM does not support DP attention". A fix is kept when, on the fixed flags:

1. the finding it was offered for is gone (no finding of that code on the same flags, or
   with the same message, at the same or a worse severity);
2. no error appears that was not there before (by code);
3. no error names a flag that the fix sets.

Pure and bounded: at most `MAX_FIXES` fixes per finding and `MAX_VETTED` findings are
re-checked, each by one run of the rules.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from sglaunch.validators.facts import CheckInput
from sglaunch.validators.findings import Finding, Fix, Severity

MAX_FIXES = 6
MAX_VETTED = 40

Run = Callable[[CheckInput], Sequence[Finding]]


def fixed_input(inp: CheckInput, fix: Fix) -> CheckInput:
    """The check's input with `fix` applied (the flags it touches lose their parse issues)."""
    touched = set(fix.set) | set(fix.unset)
    return replace(
        inp,
        flags=fix.apply(inp.flags),
        flag_issues=tuple(i for i in inp.flag_issues if i.dest not in touched),
    )


def _still_there(finding: Finding, after: Sequence[Finding]) -> bool:
    for f in after:
        if f.code != finding.code or f.severity.rank > finding.severity.rank:
            continue
        if f.message == finding.message or (finding.flags and f.flags == finding.flags):
            return True
    return False


def fix_holds(
    finding: Finding, fix: Fix, before: Sequence[Finding], after: Sequence[Finding]
) -> bool:
    """Whether `fix`, offered for `finding`, is worth offering given the findings after it."""
    if _still_there(finding, after):
        return False
    old_errors = {f.code for f in before if f.severity is Severity.ERROR}
    for f in after:
        if f.severity is not Severity.ERROR:
            continue
        if f.code not in old_errors or set(f.flags) & set(fix.set):
            return False
    return True


def vet_fixes(inp: CheckInput, findings: Sequence[Finding], run: Run) -> list[Finding]:
    """`findings` with every fix that does not hold removed (order kept)."""
    out: list[Finding] = []
    vetted = 0
    # findings often offer the same fix (the DP error and its deprecation both drop the
    # old spelling): one run of the rules per distinct fixed launch
    seen: dict[str, Sequence[Finding]] = {}

    def after(fix: Fix) -> Sequence[Finding]:
        fixed = fixed_input(inp, fix)
        issues = tuple(i.option for i in fixed.flag_issues)
        key = repr((sorted(fixed.flags.items(), key=lambda kv: kv[0]), issues))
        if key not in seen:
            seen[key] = run(fixed)
        return seen[key]

    for finding in findings:
        if not finding.fixes:
            out.append(finding)
            continue
        if vetted >= MAX_VETTED:
            out.append(replace(finding, fixes=()))  # unchecked fixes are not offered
            continue
        vetted += 1
        kept = tuple(
            fix
            for fix in finding.fixes[:MAX_FIXES]
            if fix_holds(finding, fix, findings, after(fix))
        )
        out.append(finding if kept == finding.fixes else replace(finding, fixes=kept))
    return out
