"""The built-in tier's input from a launch's flags, and its findings as JSON.

`sglaunch.verdict` merges both tiers; this module builds what the rules read.
`sglaunch.check_json` prints a whole check (`check --json`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sglaunch.flags.argv import ParsedFlags, parse_argv
from sglaunch.flags.schema import FlagSchema
from sglaunch.memory.assumptions import with_memory_facts
from sglaunch.validators.facts import CheckInput, FlagIssue, GpuFacts, ModelFacts
from sglaunch.validators.findings import Finding

if TYPE_CHECKING:
    from sglaunch.validators.engine import Report
    from sglaunch.validators.memory.baseline import MemoryFacts


def build_input(
    flags: Mapping[str, Any],
    *,
    gpu: GpuFacts,
    model: ModelFacts | None,
    env: Mapping[str, str],
    schema: FlagSchema,
    issues: Sequence[FlagIssue] = (),
    sglang_version: str | None = None,
    memory: MemoryFacts | None = None,
) -> CheckInput:
    """`sglang_version`: the release the verdict is for (default: the schema's); `memory`:
    what is known of the GPUs' start-up cost (sglaunch.memory.assumptions)."""
    return CheckInput(
        flags=dict(flags),
        gpu=gpu,
        model=model,
        env=env,
        defaults=schema.defaults(),
        flag_issues=tuple(issues),
        cli_names=schema.cli_names(),
        sglang_version=sglang_version or schema.sglang_version,
        memory=memory,
    )


@dataclass(frozen=True)
class BuiltinCheck:
    """The built-in tier on one launch's flags (argv as sglang would get them)."""

    flags: dict[str, Any]
    parsed: ParsedFlags
    builtin: Report

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.builtin.findings


def check_flags(
    argv: Sequence[str],
    *,
    schema: FlagSchema,
    gpu: GpuFacts,
    model: ModelFacts | None,
    env: Mapping[str, str],
    sglang_version: str | None = None,
) -> BuiltinCheck:
    parsed = parse_argv(list(argv), schema)
    inp = build_input(
        parsed.values,
        gpu=gpu,
        model=model,
        env=env,
        schema=schema,
        issues=parsed.issues,
        sglang_version=sglang_version,
    )

    inp = with_memory_facts(inp)  # the calibrated start-up cost, for the memory rules
    # kept out of check's start-up (the session builds inputs before sglang's question
    # leaves): the engine imports every rule module
    from sglaunch.validators.engine import validate

    return BuiltinCheck(flags=dict(parsed.values), parsed=parsed, builtin=validate(inp))


def findings_json(
    findings: Sequence[Finding], schema: FlagSchema | None = None
) -> list[dict[str, Any]]:
    out = []
    for f in findings:
        d = f.to_json()
        if schema is not None:
            d["flags"] = [schema.cli_name(x) for x in f.flags]
        out.append(d)
    return out
