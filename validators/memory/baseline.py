"""The baseline free memory P: what sglang measures after CUDA and NCCL start, before weights.

sglang takes `pre_model_load_memory` from `torch.cuda.mem_get_info` after the
CUDA context and NCCL are up (distributed/bootstrap.py:193-223), the MIN over
ranks (utils/common.py:569-575). It cannot be known before launch; sglaunch
estimates it as the free memory (NVML, or a preset's total) less a start-up
cost. The cost is an estimate, from two public sglang start-up logs:

- one GPU, a 48 GB card (sglang PR #15426's log): `Load weight begin. avail
  mem=46.81 GB` against 47.99 GiB total, so 1.18 GiB;
- eight H200s, TP 8 (sglang PR #11716's log): `Load weight begin. avail
  mem=137.29 GB` against 140.40 GiB (143,771 MiB), so 3.11 GiB, of which
  `Init torch distributed ends. mem usage=2.01 GB` is NCCL and the custom
  all-reduce buffers.

A measured cost for the same GPU, driver and TP size (the calibration store,
`sglaunch.memory.calibration`) replaces the estimate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

GIB = 1 << 30

# GiB, see the module docstring
SINGLE_GPU_COST_GIB = 1.2
MULTI_GPU_COST_GIB = 3.1
COST_SOURCE = (
    "estimated start-up cost (CUDA context {single} GiB on one GPU, {multi} GiB with NCCL across "
    "GPUs; from sglang's own start-up logs in PR #15426 and PR #11716)"
)


def estimated_startup_cost(world_size: int) -> int:
    gib = SINGLE_GPU_COST_GIB if world_size <= 1 else MULTI_GPU_COST_GIB
    return int(gib * GIB)


@dataclass(frozen=True)
class MemoryFacts:
    """What the core knows about start-up memory beyond the GPU facts."""

    # measured start-up cost per TP size on this GPU + driver (the calibration store)
    startup_cost_by_tp: Mapping[int, int] = field(default_factory=dict)
    calibration_source: str = ""
    # `--assume-free-gib X`: P for every GPU, in bytes
    assumed_free_bytes: int | None = None


@dataclass(frozen=True)
class Baseline:
    free_bytes: int  # P, per GPU (the minimum over the GPUs used)
    source: str  # "nvml" | "preset" | "assumed"
    startup_cost_bytes: int
    cost_note: str
    total_bytes: int  # the smallest GPU's total


def baseline(
    *,
    totals: list[int],
    frees: list[int | None],
    nvml: bool,
    tp_size: int,
    world_size: int,
    facts: MemoryFacts | None,
) -> Baseline:
    """P for the GPUs one launch uses (`totals`/`frees` are those GPUs, in order)."""
    total = min(totals) if totals else 0
    if facts is not None and facts.assumed_free_bytes is not None:
        return Baseline(
            facts.assumed_free_bytes,
            "assumed",
            0,
            f"--assume-free-gib {facts.assumed_free_bytes / GIB:g} sets P on every GPU",
            total,
        )
    measured = facts.startup_cost_by_tp.get(tp_size) if facts is not None else None
    if measured is not None:
        cost = int(measured)
        note = (
            f"start-up cost {cost / GIB:.2f} GiB measured at TP {tp_size} on this GPU and driver "
            f"({facts.calibration_source if facts is not None else 'calibration'})"
        )
    else:
        cost = estimated_startup_cost(world_size)
        note = COST_SOURCE.format(single=SINGLE_GPU_COST_GIB, multi=MULTI_GPU_COST_GIB)
    if nvml:
        known = [f for f in frees if f is not None]
        free = min(known) if known else total
        return Baseline(max(free - cost, 0), "nvml", cost, note, total)
    return Baseline(max(total - cost, 0), "preset", cost, note, total)
