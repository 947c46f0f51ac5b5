"""Advice from a running server's numbers: GPU memory headroom, metrics turned off."""

from __future__ import annotations

import math

from sglaunch.validators.cards import runtime as rc
from sglaunch.validators.findings import Finding, Fix, Severity

# The band for `available_gpu_mem`, the memory left once weights, KV pool and CUDA
# graphs are in place. Serving needs it for what is not in the static pool: the
# activations of one prefill chunk (they grow with --chunked-prefill-size; 8192 tokens of
# a 70B model take a few GB), sampling and logits buffers, NCCL buffers for tensor
# parallelism, and allocator fragmentation. sglang's tuning guide aims for 5–8 GB on
# 80 GB-class GPUs: below ~5 GB long prompts under load hit CUDA out of memory; above
# ~10 GB memory sits idle that the KV pool could use. Smaller GPUs serve smaller batches
# and chunks, so the band scales with GPU size below 80 GB, but never under 1.5 GB (the
# CUDA graphs' own workspace and a 2k-token chunk of a 7B model need about that).
REFERENCE_GPU_GB = 80.0
LOW_GB, HIGH_GB, TARGET_GB = 5.0, 10.0, 6.5
LOW_FLOOR_GB, HIGH_FLOOR_GB = 1.5, 3.0


def headroom_band(total_gb: float | None) -> tuple[float, float, float]:
    """(low, high, target) for available_gpu_mem on a GPU of `total_gb`."""
    scale = min(total_gb / REFERENCE_GPU_GB, 1.0) if total_gb else 1.0
    low = max(LOW_GB * scale, LOW_FLOOR_GB)
    high = max(HIGH_GB * scale, HIGH_FLOOR_GB)
    return low, high, (low + high) / 2 if total_gb else TARGET_GB


def headroom_hint(
    available_gb: float,
    total_gb: float | None,
    mem_fraction_static: float | None,
) -> Finding | None:
    """A warning (too little left) or an info (memory idle), with a new fraction when known."""
    low, high, target = headroom_band(total_gb)
    if low <= available_gb <= high:
        return None
    fixes: tuple[Fix, ...] = ()
    too_low = available_gb < low
    if mem_fraction_static is not None and total_gb:
        # the static pool is mem_fraction_static × P, the free memory at sglang's
        # baseline (after CUDA/NCCL start; kv_cache_configurator.py:3031), not × total.
        # P is not in the log's summary line, so total stands in for it: moving the
        # fraction by (available - target) / total moves available_gpu_mem by about
        # (available - target) × P / total, slightly less than the gap (P < total)
        new = mem_fraction_static + (available_gb - target) / total_gb
        new = math.floor(new * 100) / 100 if too_low else math.ceil(new * 100) / 100
        new = min(max(new, rc.MIN_FRACTION), rc.MAX_FRACTION)
        if (too_low and new < mem_fraction_static) or (not too_low and new > mem_fraction_static):
            verb = "Lower" if too_low else "Raise"
            fixes = (
                Fix(f"{verb} --mem-fraction-static to {new:.2f}", set={"mem_fraction_static": new}),
            )
    where = f"{total_gb:.0f} GB GPU" if total_gb else "GPU"
    if too_low:
        return Finding(
            code=rc.HEADROOM_LOW,
            severity=Severity.WARNING,
            message=(
                f"available_gpu_mem={available_gb:.2f} GB after start-up is below {low:.1f} GB for a {where}: "
                "long prompts under load may run out of memory"
            ),
            flags=("mem_fraction_static",),
            fixes=fixes,
            source="sglaunch:runtime",
        )
    return Finding(
        code=rc.HEADROOM_HIGH,
        severity=Severity.INFO,
        message=(
            f"available_gpu_mem={available_gb:.2f} GB after start-up is above {high:.1f} GB for a {where}: "
            "a larger KV cache could use it"
        ),
        flags=("mem_fraction_static",),
        fixes=fixes,
        source="sglaunch:runtime",
    )


def metrics_off_hint() -> Finding:
    return Finding(
        code=rc.METRICS_OFF,
        severity=Severity.INFO,
        message=(
            "metrics are off: showing /v1/loads only (no throughput, cache hit rate or latency "
            "percentiles); add --enable-metrics"
        ),
        flags=("enable_metrics",),
        fixes=(Fix("Turn on --enable-metrics", set={"enable_metrics": True}),),
        source="sglaunch:runtime",
    )
