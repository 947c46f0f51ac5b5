"""The rule registry and the engine that runs it.

A rule is a pure function over a `CheckInput` that yields findings. Rules
register with `@rule(...)` in their module; modules are imported by the
explicit list in `registry.py`, never discovered. Like sglang's own
`@_register_for`, a rule may be keyed to model architectures
(`config.architectures[0]`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from sglaunch.validators.facts import CheckInput
from sglaunch.validators.findings import Finding, Fix, Override, Severity, sort_findings
from sglaunch.validators.fixes import vet_fixes
from sglaunch.validators.release_spans import in_span, span_text
from sglaunch.validators.sourcelines import ref_at

RuleFunc = Callable[[CheckInput], Iterable[Finding]]

# What a rule mirrors in sglang 0.5.23:
#   "parse"      argparse in prepare_server_args (exit 2)
#   "config"     loading the HF config (get_config / sglang's config classes)
#   "resolution" a check in ServerArgs.resolve_once()
#   "launch"     a failure after resolution, while the server starts
MIRRORS = ("parse", "config", "resolution", "launch")


@dataclass(frozen=True)
class Rule:
    code: str
    func: RuleFunc
    summary: str
    mirrors: str
    ref: str
    architectures: frozenset[str] | None = None
    # the sglang releases that have this rule (None: open on that side)
    since: str | None = None
    until: str | None = None

    def exists_in(self, version: str | None) -> bool:
        return in_span(version, self.since, self.until)

    @property
    def span(self) -> str:
        return span_text(self.since, self.until)

    def ref_for(self, version: str | None) -> str:
        """`ref` with the line numbers of that release's source."""
        return ref_at(self.ref, version)

    def applies_to(self, inp: CheckInput) -> bool:
        if not self.exists_in(inp.sglang_version):
            return False
        if self.architectures is None:
            return True
        return inp.model is not None and inp.model.architecture in self.architectures


_RULES: dict[str, Rule] = {}


def rule(
    code: str,
    *,
    summary: str,
    mirrors: str,
    ref: str,
    architectures: Iterable[str] | None = None,
    since: str | None = None,
    until: str | None = None,
) -> Callable[[RuleFunc], RuleFunc]:
    if mirrors not in MIRRORS:
        raise ValueError(f"rule {code}: mirrors must be one of {MIRRORS}")

    def register(func: RuleFunc) -> RuleFunc:
        if code in _RULES:
            raise ValueError(f"duplicate rule code {code!r}")
        _RULES[code] = Rule(
            code=code,
            func=func,
            summary=summary,
            mirrors=mirrors,
            ref=ref,
            architectures=frozenset(architectures) if architectures is not None else None,
            since=since,
            until=until,
        )
        return func

    return register


_ORDERED: list[Rule] = []


def all_rules() -> list[Rule]:
    """Every rule, in the registry's module order (a later rule's override wins)."""
    from sglaunch.validators import registry  # registers every rule

    if len(_ORDERED) != len(_RULES):
        rank = {m.__name__: i for i, m in enumerate(registry.MODULES)}
        _ORDERED[:] = sorted(_RULES.values(), key=lambda r: rank.get(r.func.__module__, len(rank)))
    return list(_ORDERED)


def get_rule(code: str) -> Rule | None:
    from sglaunch.validators import registry  # noqa: F401

    return _RULES.get(code)


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


def override_finding(
    code: str,
    inp: CheckInput,
    dest: str,
    value: Any,
    why: str,
    *,
    ref: str,
    fixes: tuple[Fix, ...] = (),
) -> Finding:
    """The standard wording for a silent change: 'sglang will set X=V (you left it unset)'."""
    asked = inp.flags.get(dest)
    asked_text = f"you asked for {_fmt(asked)}" if dest in inp.flags else "you left it unset"
    return Finding(
        code=code,
        severity=Severity.OVERRIDE,
        message=f"sglang will set {dest}={_fmt(value)} ({asked_text}): {why}",
        flags=(dest,),
        ref=ref,
        override=Override(field=dest, asked=asked, value=value),
        fixes=fixes,
    )


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
