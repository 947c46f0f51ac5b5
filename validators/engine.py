"""The engine: run the registry's rules over one input, and vet the fixes they offer.

Rules are declared in `rule.py` and looked up in `registry.py` (the explicit list of
rule modules); `Rule`, `all_rules` and `get_rule` are re-exported here for callers.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from sglaunch.validators.facts import CheckInput
from sglaunch.validators.findings import Finding, Severity, sort_findings
from sglaunch.validators.fixes import vet_fixes
from sglaunch.validators.registry import all_rules, get_rule
from sglaunch.validators.rule import Rule
from sglaunch.validators.sourcelines import ref_at

__all__ = ["Report", "Rule", "all_rules", "get_rule", "run_rules", "validate"]


@dataclass(frozen=True)
class Report:
    findings: tuple[Finding, ...]
    # field -> (asked, value): what sglang will set, last writer wins
    changes: dict[str, tuple[Any, Any]] = field(default_factory=dict)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]

    @property
    def ok(self) -> bool:
        return not self.errors

    def codes(self) -> list[str]:
        return [f.code for f in self.findings]


def run_rules(inp: CheckInput, rules: Iterable[Rule] | None = None) -> list[Finding]:
    """Every applicable rule's findings, errors first. Never raises for any input."""
    selected = all_rules() if rules is None else list(rules)
    findings: list[Finding] = []
    for r in selected:
        if not r.applies_to(inp):
            continue
        try:
            findings.extend(r.func(inp))
        except Exception as exc:  # a bug in a rule must not hide the others
            findings.append(
                Finding(
                    code="internal-rule-error",
                    severity=Severity.WARNING,
                    message=f"sglaunch's rule {r.code} failed ({type(exc).__name__}: {exc}); "
                    "its verdict is missing — please report this",
                )
            )
    version = inp.sglang_version
    if version:
        # the rules write 0.5.23's line numbers; the finding names its own release's
        findings = [
            f if (ref := ref_at(f.ref, version)) == f.ref else replace(f, ref=ref) for f in findings
        ]
    return sort_findings(findings)


def validate(inp: CheckInput, rules: Iterable[Rule] | None = None, *, vet: bool = True) -> Report:
    """Run every applicable rule; errors first; fixes that do not hold are dropped."""
    selected = all_rules() if rules is None else list(rules)
    findings = run_rules(inp, selected)
    if vet:
        findings = vet_fixes(inp, findings, lambda fixed: run_rules(fixed, selected))
    changes: dict[str, tuple[Any, Any]] = {}
    for f in findings:
        if f.override is not None:
            changes[f.override.field] = (f.override.asked, f.override.value)
    return Report(findings=tuple(findings), changes=changes)
