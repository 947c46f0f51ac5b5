"""Fact gathering for the memory plan: the calibration store and `--assume-free-gib`.

`memory_facts(gpu, assume_free_gib=...)` is what a caller attaches to a
`CheckInput` (field `memory`) before the rules run; without it the plan uses
the documented start-up cost estimate (validators/memory/baseline.py).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from sglaunch.errors import UserError
from sglaunch.memory import calibration
from sglaunch.validators.facts import CheckInput, GpuFacts, GpuMode
from sglaunch.validators.memory.baseline import GIB, MemoryFacts


def check_assume_free(value: float, gpu: GpuFacts) -> int:
    """--assume-free-gib in bytes, or a one-line UserError naming the problem."""
    if not math.isfinite(value) or value <= 0:
        raise UserError(f"--assume-free-gib {value}: give a positive number of GiB, e.g. 70")
    total = min((d.memory_total for d in gpu.devices), default=0)
    if total and value * GIB > total:
        raise UserError(
            f"--assume-free-gib {value:g} is more than the {total / GIB:.1f} GiB a "
            f"{gpu.devices[0].name} has; give the free memory after CUDA starts, e.g. {total / GIB - 1.5:.0f}"
        )
    return int(value * GIB)


def memory_facts(
    gpu: GpuFacts, *, assume_free_gib: float | None = None, store: Path | None = None
) -> MemoryFacts:
    """Calibration for these GPUs (real ones only: a planning preset has no history) and the override."""
    assumed = check_assume_free(assume_free_gib, gpu) if assume_free_gib is not None else None
    costs: dict[int, int] = {}
    source = ""
    if gpu.mode is GpuMode.NVML and gpu.primary is not None:
        costs, source = calibration.costs_for(gpu.primary.name, gpu.driver_version, store)
    return MemoryFacts(
        startup_cost_by_tp=costs, calibration_source=source, assumed_free_bytes=assumed
    )


def with_memory_facts(inp: CheckInput, *, assume_free_gib: float | None = None) -> CheckInput:
    """`inp` with its memory facts filled in (the one call checking.py makes)."""
    return replace(inp, memory=memory_facts(inp.gpu, assume_free_gib=assume_free_gib))
