"""After launch: what sglang's start-up log says about memory, against the plan's prediction.

Pure functions over the events `sglaunch.runtime.logparse` produces (or raw log
lines): `startup_memory` collects the rank-0 figures, `compare` lines them up
with a `MemoryPlan` and derives the start-up cost this launch really had, which
`record_calibration` stores for the next plan on the same GPU, driver and TP.

sglang's lines (reference/sglang-0.5.23-runtime.md §1):
`Load weight begin. avail mem=P GB` (P, the baseline, right after it is taken),
`Load weight end. …, avail mem=F GB, mem usage=W GB`,
`KV Cache is allocated. dtype: …, #tokens: T, K size: … GB, V size: … GB`,
`Memory pool end. avail mem=… GB`, and the summary
`max_total_num_tokens=T, …, max_running_requests=R, context_len=L, available_gpu_mem=X GB`.
Every "GB" there is GiB (free bytes / 2**30, srt/utils/common.py:576).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sglaunch.memory import calibration
from sglaunch.runtime.logparse import (
    KvCacheAllocated,
    LoadBegin,
    LoadEnd,
    LogEvent,
    PoolEnd,
    Summary,
    parse_line,
)
from sglaunch.validators.memory.baseline import GIB
from sglaunch.validators.memory.plan import MemoryPlan


@dataclass
class StartupMemory:
    """The memory figures of one start-up, from the first rank that logs them (TP0)."""

    baseline_gib: float | None = None
    after_weights_gib: float | None = None
    weights_gib: float | None = None
    kv_tokens: int | None = None
    kv_gib: float | None = None
    kv_dtype: str | None = None
    pool_end_gib: float | None = None
    max_total_num_tokens: int | None = None
    max_running_requests: int | None = None
    context_len: int | None = None
    available_gpu_mem_gib: float | None = None
    kv_lines: list[tuple[str | None, int]] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.baseline_gib is not None and self.max_total_num_tokens is not None


def _rank0(tags: str) -> bool:
    return not tags or all(t.endswith("0") for t in tags.split() if t[:2] in ("TP", "PP", "DP"))


def feed(state: StartupMemory, event: LogEvent) -> None:
    """Fold one event into `state` (the monitor calls this per line)."""
    if not _rank0(event.tags):
        return
    if isinstance(event, LoadBegin) and state.baseline_gib is None:
        state.baseline_gib = event.avail_mem_gb
    elif (
        isinstance(event, LoadEnd) and state.weights_gib is None and event.mem_usage_gb is not None
    ):
        state.weights_gib = event.mem_usage_gb
        state.after_weights_gib = event.avail_mem_gb
    elif isinstance(event, KvCacheAllocated):
        state.kv_lines.append((event.label, event.tokens))
        if state.kv_tokens is None:  # the target's pool comes first; a draft's follows
            state.kv_tokens = event.tokens
            state.kv_gib = event.size_gb
            state.kv_dtype = event.dtype
    elif isinstance(event, PoolEnd) and state.pool_end_gib is None:
        state.pool_end_gib = event.avail_mem_gb
    elif isinstance(event, Summary):
        state.max_total_num_tokens = event.max_total_num_tokens
        state.max_running_requests = event.max_running_requests
        state.context_len = event.context_len
        state.available_gpu_mem_gib = event.available_mem_gb


def startup_memory(events: Iterable[LogEvent]) -> StartupMemory:
    state = StartupMemory()
    for event in events:
        feed(state, event)
    return state


def startup_memory_from_lines(lines: Iterable[str]) -> StartupMemory:
    return startup_memory(
        e for e in (parse_line(line.rstrip("\n")) for line in lines) if e is not None
    )


@dataclass(frozen=True)
class Row:
    what: str
    predicted: float | None
    actual: float | None
    unit: str  # "GiB" | "tokens" | "requests"

    @property
    def error_pct(self) -> float | None:
        if self.predicted is None or self.actual is None or self.actual == 0:
            return None
        return (self.predicted - self.actual) / self.actual * 100


@dataclass(frozen=True)
class Comparison:
    rows: tuple[Row, ...]
    measured_startup_cost_bytes: int | None
    predicted_startup_cost_bytes: int | None

    def row(self, what: str) -> Row | None:
        return next((r for r in self.rows if r.what == what), None)

    def to_json(self) -> dict[str, object]:
        return {
            "rows": [
                {
                    "what": r.what,
                    "predicted": r.predicted,
                    "actual": r.actual,
                    "unit": r.unit,
                    "error_pct": r.error_pct,
                }
                for r in self.rows
            ],
            "measured_startup_cost_bytes": self.measured_startup_cost_bytes,
            "predicted_startup_cost_bytes": self.predicted_startup_cost_bytes,
        }


def _gib(value: int | None) -> float | None:
    return None if value is None else value / GIB


def compare(plan: MemoryPlan, actual: StartupMemory) -> Comparison:
    """Predicted against actual: baseline, weights, KV budget, tokens, requests, what is left."""
    b = plan.baseline
    measured = None
    if actual.baseline_gib is not None and plan.gpu_total_bytes:
        measured = plan.gpu_total_bytes - int(actual.baseline_gib * GIB)
    kv_budget = plan.kv_budget_bytes
    rows = (
        Row("baseline free (P)", _gib(b.free_bytes) if b else None, actual.baseline_gib, "GiB"),
        Row("weights per GPU", _gib(plan.weights_bytes), actual.weights_gib, "GiB"),
        Row(
            "free after weights",
            _gib(plan.available_after_weights_bytes),
            actual.after_weights_gib,
            "GiB",
        ),
        Row("KV cache", _gib(kv_budget), actual.kv_gib, "GiB"),
        Row(
            "max_total_num_tokens",
            float(plan.max_total_num_tokens) if plan.max_total_num_tokens is not None else None,
            float(actual.max_total_num_tokens or actual.kv_tokens or 0) or None,
            "tokens",
        ),
        Row(
            "max_running_requests",
            float(plan.max_running_requests) if plan.max_running_requests is not None else None,
            float(actual.max_running_requests) if actual.max_running_requests is not None else None,
            "requests",
        ),
        Row("free after the KV pool (slack)", _gib(plan.slack_bytes), actual.pool_end_gib, "GiB"),
        Row("free after CUDA graphs", None, actual.available_gpu_mem_gib, "GiB"),
    )
    return Comparison(rows, measured, b.startup_cost_bytes if b else None)


@dataclass(frozen=True)
class Prediction:
    """What a launch expects of its start-up memory, and where a measurement may be kept.

    `gpu_name` is None for a planning preset: a measurement there says nothing of the
    machine the plan was for, so it is never stored.
    """

    plan: MemoryPlan
    gpu_name: str | None = None
    driver: str = ""
    tp_size: int = 1

    def compare(self, log_lines: Iterable[str]) -> Comparison:
        return compare(self.plan, startup_memory_from_lines(log_lines))

    def calibrate(self, comparison: Comparison, *, store: Path | None = None) -> bool:
        """Keep the measured start-up cost for the next plan on these GPUs; False if not."""
        if self.gpu_name is None:
            return False
        return record_calibration(
            comparison,
            gpu_name=self.gpu_name,
            driver=self.driver,
            tp_size=self.tp_size,
            source="measured at launch",
            store=store,
        )


def summary_text(comparison: Comparison) -> str:
    """One line: the tokens sglang got against the prediction, and the start-up cost."""
    parts = []
    tokens = comparison.row("max_total_num_tokens")
    if tokens is not None and tokens.actual is not None and tokens.predicted is not None:
        err = f" ({tokens.error_pct:+.1f}%)" if tokens.error_pct is not None else ""
        parts.append(f"KV tokens {tokens.actual:,.0f}, predicted {tokens.predicted:,.0f}{err}")
    weights = comparison.row("weights per GPU")
    if weights is not None and weights.actual is not None and weights.predicted is not None:
        parts.append(f"weights {weights.actual:.2f} GiB, predicted {weights.predicted:.2f}")
    cost = comparison.measured_startup_cost_bytes
    if cost is not None:
        parts.append(f"start-up cost measured {cost / GIB:.2f} GiB")
    return "memory: " + ("; ".join(parts) or "the log gave no figures to compare")


def record_calibration(
    comparison: Comparison,
    *,
    gpu_name: str,
    driver: str,
    tp_size: int,
    source: str = "",
    store: Path | None = None,
) -> bool:
    """Store the measured start-up cost for the next plan; False when the log did not give one."""
    cost = comparison.measured_startup_cost_bytes
    if cost is None or cost <= 0:
        return False
    calibration.record(gpu_name, driver, tp_size, cost, source=source, path=store)
    return True
