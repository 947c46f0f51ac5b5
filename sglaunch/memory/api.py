"""What the CLI, the TUI and the monitor call: one plan, its JSON, the layouts table.

Timings (bench/fit.py, MiniCPM SALA example on H100x8): a plan well under a
millisecond, the layouts table a few milliseconds; both pure once the facts
are loaded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sglaunch.memory.facts import with_memory_facts
from sglaunch.validators.facts import CheckInput
from sglaunch.validators.memory.layouts import Layout, plan_layouts
from sglaunch.validators.memory.plan import MemoryPlan, plan_memory


def plan_for(
    inp: CheckInput,
    *,
    resolved: Mapping[str, Any] | None = None,
    assume_free_gib: float | None = None,
) -> MemoryPlan:
    """The plan for one check input; calibration and --assume-free-gib are attached if missing."""
    if inp.memory is None or assume_free_gib is not None:
        inp = with_memory_facts(inp, assume_free_gib=assume_free_gib)
    return plan_memory(inp, resolved)


def memory_json(inp: CheckInput, resolved: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`check --json`'s "memory" object: the plan, with sglang's resolved knobs when the oracle ran."""
    return plan_for(inp, resolved=resolved).to_json()


def layouts(inp: CheckInput) -> list[Layout]:
    if inp.memory is None:
        inp = with_memory_facts(inp)
    return plan_layouts(inp)


def layouts_json(inp: CheckInput) -> list[dict[str, Any]]:
    return [layout.to_json() for layout in layouts(inp)]
