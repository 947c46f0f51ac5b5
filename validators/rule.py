"""What a rule module needs: the `Rule` type, the `@rule` decorator and the store it writes to.

A rule is a pure function over a `CheckInput` that yields findings. Rules register
with `@rule(...)` in their module; modules are imported by the explicit list in
`registry.py`, never discovered, and `registry` is where every rule is looked up.
Like sglang's own `@_register_for`, a rule may be keyed to model architectures
(`config.architectures[0]`). This module imports no rule, so any rule can import it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sglaunch.validators.facts import CheckInput
from sglaunch.validators.findings import Finding, Fix, Override, Severity
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


# Every rule registered so far, by code. Read it through `registry`, which imports
# every rule module first.
RULES: dict[str, Rule] = {}


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
        if code in RULES:
            raise ValueError(f"duplicate rule code {code!r}")
        RULES[code] = Rule(
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
