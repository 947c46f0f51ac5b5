"""The memory plan's numbers from sglang's own code: the request the oracle worker answers.

`oracle_memory_request(plan, model)` is the `memory=` argument of
`Oracle.resolve`; the worker's `memory_probe.py` runs sglang's
`_resolve_memory_pool_config` with the free memory emulated as the plan's
baseline less its weights, so the two can be compared number for number
(tests/memory/test_memory_differential.py).
"""

from __future__ import annotations

from typing import Any

from sglaunch.validators.facts import ModelFacts
from sglaunch.validators.memory.baseline import GIB
from sglaunch.validators.memory.plan import MemoryPlan


def oracle_memory_request(plan: MemoryPlan, model: ModelFacts | None) -> dict[str, Any] | None:
    """{"pre_gib", "weights_bytes", "kv_cache_quant_algo"}, or None when the plan has no baseline."""
    if plan.baseline is None or plan.weights_bytes is None:
        return None
    shapes = model.shapes if model is not None else None
    return {
        "pre_gib": plan.baseline.free_bytes / GIB,
        "weights_bytes": int(plan.weights_bytes),
        "kv_cache_quant_algo": shapes.kv_cache_quant_algo if shapes is not None else None,
    }


def plan_numbers(plan: MemoryPlan) -> dict[str, Any]:
    """The plan's numbers in the oracle answer's terms, for comparison."""
    error = plan.error
    return {
        "max_total_num_tokens": plan.max_total_num_tokens,
        "max_running_requests": plan.max_running_requests,
        "swa_tokens": plan.swa_tokens,
        "max_mamba_cache_size": plan.state_slots,
        "error": (error.sglang_message or error.message) if error is not None else None,
    }
