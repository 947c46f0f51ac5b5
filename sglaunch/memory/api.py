"""What the CLI, the TUI and the monitor call: one plan, its JSON, the layouts table.

Timings (bench/fit.py, MiniCPM SALA example on H100x8): a plan well under a
millisecond, the layouts table a few milliseconds; both pure once the facts
are loaded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sglaunch.memory.assumptions import with_memory_facts
from sglaunch.validators.findings import Finding, Severity

if TYPE_CHECKING:
    from sglaunch.validators.facts import CheckInput
    from sglaunch.validators.memory.layouts import Layout
    from sglaunch.validators.memory.plan import MemoryPlan


def plan_for(
    inp: CheckInput,
    *,
    resolved: Mapping[str, Any] | None = None,
    assume_free_gib: float | None = None,
) -> MemoryPlan:
    """The plan for one check input; calibration and --assume-free-gib are attached if missing."""
    if inp.memory is None or assume_free_gib is not None:
        inp = with_memory_facts(inp, assume_free_gib=assume_free_gib)
    # kept out of the TUI's first frame, which draws no plan yet
    from sglaunch.validators.memory.plan import plan_memory

    return plan_memory(inp, resolved)


# the findings the memory plan itself stands behind (validators/rules/general/memory*.py)
MEMORY_CODE_PREFIXES = ("memory-", "weights-exceed", "mem-fraction")
REJECTED = "rejected"


def is_memory_code(code: str) -> bool:
    return code.startswith(MEMORY_CODE_PREFIXES)


def line_verdict(plan: MemoryPlan, findings: Sequence[Finding]) -> str:
    """The plan's verdict on the launch line as a whole: "rejected" when an error stands that
    the memory arithmetic does not show (the line never reaches the KV cache, however much
    memory there is), else the memory verdict."""
    errors = [f for f in findings if f.severity is Severity.ERROR]
    if not errors:
        return plan.verdict
    if plan.verdict == "does-not-fit" and all(is_memory_code(f.code) for f in errors):
        return plan.verdict
    return REJECTED


def rejection(findings: Sequence[Finding]) -> Finding | None:
    """The error a rejected line is named by: the first one that is not the plan's own."""
    errors = [f for f in findings if f.severity is Severity.ERROR]
    return next((f for f in errors if not is_memory_code(f.code)), errors[0] if errors else None)


def verdict_text(plan: MemoryPlan, findings: Sequence[Finding]) -> str:
    """One line for the verdict: "fits", "tight", "does-not-fit" or "rejected: <the error>"."""
    verdict = line_verdict(plan, findings)
    first = rejection(findings)
    if verdict == REJECTED and first is not None:
        return f"{REJECTED}: {first.message}"
    return verdict


def memory_json(
    inp: CheckInput,
    resolved: Mapping[str, Any] | None = None,
    findings: Sequence[Finding] = (),
) -> dict[str, Any]:
    """`check --json`'s "memory" object: the plan, with sglang's resolved knobs when the oracle
    ran; `findings`: the line's, so that a rejected line's plan does not read "fits"."""
    plan = plan_for(inp, resolved=resolved)
    return plan_json(plan, findings)


def plan_json(plan: MemoryPlan, findings: Sequence[Finding] = ()) -> dict[str, Any]:
    data = plan.to_json()
    data["verdict"] = line_verdict(plan, findings)
    return data


def count_text(n: int | None) -> str:
    """One format for every count in a layouts table, the TUI's and `fit`'s: digits with
    thousands separators ("16.41M" beside "8,075,642" reads as the smaller)."""
    return "-" if n is None else f"{n:,}"


def layouts(inp: CheckInput) -> list[Layout]:
    if inp.memory is None:
        inp = with_memory_facts(inp)
    # kept out of the TUI's first frame: the layouts run the rule engine, which imports every rule
    from sglaunch.validators.memory.layouts import plan_layouts

    return plan_layouts(inp)


def layouts_json(inp: CheckInput) -> list[dict[str, Any]]:
    return [layout.to_json() for layout in layouts(inp)]
