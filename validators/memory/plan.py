"""The memory plan of one launch, per GPU: sglang's start-up arithmetic, end to end (0.5.23's
lines; where an older release differs, its own values, keyed by `Knobs.release`).

`plan_memory(inp)` reads a `CheckInput` (flags, model facts with shapes and
weight groups, GPU facts, memory facts) and, optionally, sglang's own resolved
configuration; it never raises and never does I/O. The steps follow
`reference/sglang-0.5.23-memory.md`: knobs (memory_hook.py) → baseline P →
weights per GPU → KV budget (kv_cache_configurator.py:2990-3060) → cell size
(pool_configurator.py:340-536) → tokens, caps, PP minimum → max_running_requests
(kv_cache_configurator.py:3119-3172) → slack.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from sglaunch.validators.facts import CheckInput
from sglaunch.validators.memory.baseline import GIB, Baseline, baseline
from sglaunch.validators.memory.cells import (
    Cell,
    CellError,
    KvDtype,
    cell_size,
    is_linear,
    model_dtype_bytes,
    resolve_kv_dtype,
    sala_reserve,
    state_bytes_per_request,
    state_dtype_bytes,
)
from sglaunch.validators.memory.pool import (
    MambaInputs,
    PoolError,
    finalize_tokens,
    kv_budget,
    mamba_ratio,
    max_running_requests,
    tokens_from_budget,
)
from sglaunch.validators.memory.resolve import Knobs, resolve_knobs, uses_minicpm_sparse_backend
from sglaunch.validators.memory.shapes import (
    SWA,
    ModelShapes,
    WeightBreakdown,
    max_rank_weight_bytes,
    pp_layer_range,
)
from sglaunch.validators.release_spans import SWA_POOL_PER_STAGE, memory_since

MIB = 1 << 20
INT64_MAX = (1 << 63) - 1
# --quantization values that store linear weights in one byte when the checkpoint is not quantized
ONLINE_8BIT = ("fp8", "w8a8_fp8", "w8a8_int8", "mxfp8", "modelopt_fp8")
FRACTION_ROUNDING = (
    0.0005  # sglang rounds the default fraction to 3 places (memory_hook.py:324-328)
)


@dataclass(frozen=True)
class PlanError:
    """A start-up failure the plan predicts; `message` is sglang's exact text where sglang raises it."""

    kind: str  # "no-room" | "empty" | "swa" | "state" | "shape" | "weights-exceed" | "sala-page"
    message: str
    ref: str
    minimum_fraction: float | None = None
    suggested_fraction: float | None = None
    # what sglang's budget check itself would say were the weights to load (with
    # emulated memory they do): the differential test compares this one
    sglang_message: str | None = None


@dataclass(frozen=True)
class MemoryPlan:
    knobs: Knobs
    gpu_total_bytes: int
    baseline: Baseline | None
    weights_bytes: int | None
    weights_source: str | None
    kv_dtype: KvDtype | None
    cell_bytes: float | None
    kv_budget_bytes: int | None
    available_after_weights_bytes: int | None
    max_total_num_tokens: int | None
    swa_tokens: int | None
    usable_tokens: int | None
    compressed_reserve: int | None
    max_running_requests: int | None
    state_slots: int | None
    state_bytes_per_request: int | None
    slack_bytes: int | None
    reserve_need_bytes: int | None
    tokens_per_gib: float | None
    error: PlanError | None
    problems: tuple[str, ...]
    assumptions: tuple[str, ...]

    @property
    def slack_short(self) -> bool:
        """The slack is below what sglang's own reserve heuristic assumes for graphs and activations."""
        return (
            self.slack_bytes is not None
            and self.reserve_need_bytes is not None
            and self.slack_bytes < self.reserve_need_bytes
        )

    @property
    def pool_below_context(self) -> bool:
        t = self.max_total_num_tokens
        return t is not None and self.error is None and t < self.knobs.context_len

    @property
    def verdict(self) -> str:
        if self.error is not None:
            return "does-not-fit"
        if self.max_total_num_tokens is None or self.slack_short or self.pool_below_context:
            return "tight"
        return "fits"

    def to_json(self) -> dict[str, Any]:
        """The `memory` object of `check --json` and `fit --json` (issue 9's field names)."""
        k = self.knobs
        b = self.baseline
        return {
            "verdict": self.verdict,
            "gpu_total_bytes": self.gpu_total_bytes,
            "baseline_free_bytes": b.free_bytes if b is not None else None,
            "baseline_source": b.source if b is not None else None,
            "weights_bytes": self.weights_bytes,
            "weights_source": self.weights_source,
            "mem_fraction_static": k.mem_fraction_static,
            "mem_fraction_static_source": k.mfs_source,
            "reserved_mib": k.reserve.rounded_parts(),
            "chunked_prefill_size": k.chunked_prefill_size,
            "cuda_graph_max_bs": k.decode_max_bs,
            "kv_budget_bytes": self.kv_budget_bytes,
            "kv_cell_bytes": self.cell_bytes,
            "kv_dtype": self.kv_dtype.name if self.kv_dtype is not None else None,
            "page_size": k.page_size,
            "max_total_num_tokens": self.max_total_num_tokens,
            "usable_tokens": self.usable_tokens,
            "max_running_requests": self.max_running_requests,
            "slack_bytes": self.slack_bytes,
            "tokens_per_gib": self.tokens_per_gib,
            "assumptions": list(self.assumptions),
        }

    def waterfall(self) -> list[tuple[str, int]]:
        """(label, bytes) from the GPU's total down to the slack: the TUI's memory panel."""
        out: list[tuple[str, int]] = [("GPU total", self.gpu_total_bytes)]
        b = self.baseline
        if b is None:
            return out
        out.append(("start-up (CUDA/NCCL)", self.gpu_total_bytes - b.free_bytes))
        out.append(("baseline free", b.free_bytes))
        if self.weights_bytes is not None:
            out.append(("weights", self.weights_bytes))
        if self.kv_budget_bytes is not None:
            out.append(("KV cache", self.kv_budget_bytes))
        if self.slack_bytes is not None:
            out.append(("slack (graphs, activations)", self.slack_bytes))
        return out


def _weights(inp: CheckInput, k: Knobs) -> tuple[int | None, str | None, list[str]]:
    m = inp.model
    notes: list[str] = []
    if m is None:
        return None, None, ["no model: the weights per GPU are unknown"]
    w = m.weights
    if w is not None and w.layers:
        per_gpu = max_rank_weight_bytes(w, tp=k.tp, attn_tp=k.attn_tp, pp=k.pp)
        if w.source == "config" and m.weight_bytes and w.total_bytes:
            # the index's total_size is the checkpoint's real size: keep the config's split
            per_gpu = int(per_gpu * m.weight_bytes / w.total_bytes)
            notes.append(
                f"weights: {m.weight_source}'s total, split over the GPUs as the config's shapes split"
            )
            return per_gpu, "safetensors", notes
        quant = inp.value("quantization")
        if quant in ONLINE_8BIT and not m.quantization:
            per_gpu = _online_8bit(w, k, m.shapes.dtype if m.shapes is not None else "bfloat16")
            notes.append(
                f"--quantization {quant} on an unquantized checkpoint: linear weights counted at 1 byte (estimate)"
            )
        notes.extend(w.notes)
        return per_gpu, w.source, notes
    if m.weight_bytes:
        notes.append(
            f"weights per GPU = {m.weight_source or 'index'} total ÷ (TP × PP) (no per-tensor headers read)"
        )
        return m.weight_bytes // (k.tp * k.pp), "safetensors", notes
    return None, None, ["no weight files and no config shapes to estimate the weights from"]


def _online_8bit(w: WeightBreakdown, k: Knobs, dtype: str) -> int:
    """Linear weights quantized on load to one byte per element (estimate)."""
    size = model_dtype_bytes(dtype)
    layers = tuple(
        replace(lw, attn=lw.attn // size, kv=lw.kv // size, mlp=lw.mlp // size) for lw in w.layers
    )
    return max_rank_weight_bytes(replace(w, layers=layers), tp=k.tp, attn_tp=k.attn_tp, pp=k.pp)


def _baseline(inp: CheckInput, k: Knobs) -> Baseline | None:
    devices = inp.gpu.devices
    if not devices:
        return None
    used = devices[: max(k.world_size * k.dp, 1)]
    return baseline(
        totals=[d.memory_total for d in used],
        frees=[d.memory_free for d in used],
        nvml=str(inp.gpu.mode) == "nvml",
        tp_size=k.tp,
        world_size=k.world_size,
        facts=inp.memory,
    )


@dataclass(frozen=True)
class _Tokens:
    total: int
    swa: int | None
    budget: int
    available_gib: float
    cells: list[Cell]
    state_slots: int | None
    state_per_req: int | None


def _mamba_inputs(k: Knobs, shapes: ModelShapes) -> tuple[MambaInputs | None, int | None]:
    if not is_linear(shapes):
        return None, None
    linear = shapes.linear
    assert linear is not None
    ssm = state_dtype_bytes(linear.kind, linear.config_ssm_dtype, k.mamba_ssm_dtype)
    per_req, stage = state_bytes_per_request(shapes, k.attn_tp, ssm, k.pp)
    return (
        MambaInputs(
            per_req_stage=stage,
            mamba_full_memory_ratio=k.mamba_full_memory_ratio,
            max_mamba_cache_size=k.max_mamba_cache_size,
            max_running_requests=k.max_running_requests,
            disable_radix_cache=k.disable_radix_cache,
            attn_dp_size=k.attn_dp,
        ),
        per_req,
    )


def _cells(k: Knobs, shapes: ModelShapes, kv: KvDtype) -> list[Cell]:
    """The KV cell of each PP stage's layers. Raises CellError."""
    whole = shapes.family == SWA and not memory_since(k.release, SWA_POOL_PER_STAGE)
    return [
        cell_size(
            shapes,
            kv,
            kv_flag=k.kv_cache_dtype,
            attn_tp=k.attn_tp,
            layer_range=(0, shapes.num_layers)
            if whole
            else pp_layer_range(shapes.num_layers, rank, k.pp),
            swa_full_tokens_ratio=k.swa_full_tokens_ratio,
        )
        for rank in range(k.pp)
    ]


def _cell_alone(k: Knobs, shapes: ModelShapes | None) -> tuple[KvDtype | None, float | None]:
    """The KV dtype and the largest stage's cell: the model's and the flags', so known even
    when the budget is not (the weights do not fit, the pool is empty)."""
    if shapes is None or shapes.problems or k.pp > max(shapes.num_layers, 1):
        return None, None
    try:
        kv = resolve_kv_dtype(k.kv_cache_dtype, shapes)
    except CellError:
        return None, None
    try:
        return kv, max(c.bytes_per_token for c in _cells(k, shapes, kv))
    except CellError:
        return kv, None


def _tokens(k: Knobs, shapes: ModelShapes, kv: KvDtype, pre_gib: float, weights: int) -> _Tokens:
    """Budget → per-stage tokens → the user cap and PP minimum. Raises PoolError/CellError."""
    mamba, per_req = _mamba_inputs(k, shapes)
    budget, available, split = kv_budget(
        pre_gib=pre_gib,
        weights_bytes=weights,
        mfs=k.mem_fraction_static,
        mm_reservation_gib=k.mm_reservation_gib,
        mamba=mamba,
    )
    cells = _cells(k, shapes, kv)
    per_stage: list[int] = []
    full_ids = shapes.full_layer_ids
    for cell in cells:
        kv_elsewhere = cell.bytes_per_token == 0 and bool(full_ids) and k.pp > 1
        zero = INT64_MAX if kv_elsewhere else (k.max_total_tokens or k.context_len)
        per_stage.append(
            tokens_from_budget(budget, cell, page_size=k.page_size, zero_cell_tokens=zero)
        )
    swa = shapes.family == SWA
    tokens = finalize_tokens(
        per_stage,
        page_size=k.page_size,
        max_total_tokens=k.max_total_tokens,
        swa_ratio=k.swa_full_tokens_ratio if swa else None,
        sliding_window=shapes.sliding_window,
        swa_full_layers=bool(shapes.full_layer_ids),
    )
    return _Tokens(
        tokens.total,
        tokens.swa,
        budget,
        available,
        cells,
        split.max_mamba_cache_size if split is not None else None,
        per_req,
    )


def _error_from(exc: PoolError) -> PlanError:
    return PlanError(
        exc.kind,
        exc.message,
        exc.ref,
        minimum_fraction=exc.data.get("minimum"),
        suggested_fraction=exc.data.get("suggested"),
    )


def _reserve_need(k: Knobs, b: Baseline | None) -> int | None:
    """The slack sglang's heuristic means for these settings, on this baseline (no 10 GiB floor)."""
    if b is None or not k.gpu_mem_mib:
        return None
    parts = {n: v for n, v in k.reserve.parts.items() if n != "floor_top_up"}
    fraction = sum(parts.values()) / k.gpu_mem_mib - FRACTION_ROUNDING
    return int(b.free_bytes * max(fraction, 0.0))


def plan_memory(inp: CheckInput, resolved: Mapping[str, Any] | None = None) -> MemoryPlan:
    """The whole plan; never raises (a bug becomes a problem line, not a traceback)."""
    try:
        return _plan(inp, resolved)
    except Exception as exc:  # the TUI recomputes on every keystroke: never take it down
        try:
            k = resolve_knobs(inp, None)
        except Exception:
            k = resolve_knobs(replace(inp, flags={}), None)
        return _empty(
            inp,
            k,
            (f"sglaunch's memory plan failed ({type(exc).__name__}: {exc}); please report this",),
        )


def _empty(inp: CheckInput, k: Knobs, problems: tuple[str, ...]) -> MemoryPlan:
    total = min((d.memory_total for d in inp.gpu.devices), default=0)
    return MemoryPlan(
        k, total, None, None, None, None, None, None, None, None, None, None, None, None, None, None,
        None, None, None, None, problems, problems,
    )  # fmt: skip


def _plan(inp: CheckInput, resolved: Mapping[str, Any] | None) -> MemoryPlan:
    k = resolve_knobs(inp, resolved)
    problems: list[str] = []
    assumptions: list[str] = []
    b = _baseline(inp, k)
    if b is None:
        return _empty(inp, k, ("no GPU facts: pick a planning preset (--gpu NAMExCOUNT)",))
    assumptions.append(f"baseline P = {b.free_bytes / GIB:.2f} GiB ({b.source}; {b.cost_note})")
    assumptions.extend(_nodes_notes(inp, k, b))
    weights, wsource, wnotes = _weights(inp, k)
    assumptions.extend(wnotes)
    shapes = inp.model.shapes if inp.model is not None else None
    if shapes is not None:
        problems.extend(shapes.problems)
    if shapes is not None and k.pp > max(shapes.num_layers, 1):
        problems.append(f"--pp-size {k.pp} is more than the model's {shapes.num_layers} layers")
        shapes = replace(shapes, problems=(*shapes.problems, problems[-1]))
    pre_gib = b.free_bytes / GIB
    slack = int(pre_gib * (1 - k.mem_fraction_static) * GIB)
    need = _reserve_need(k, b)
    assumptions.extend(_knob_notes(k))
    kv: KvDtype | None = None
    result: _Tokens | None = None
    error: PlanError | None = None
    if weights is not None and weights > b.free_bytes:
        error = PlanError(
            "weights-exceed",
            f"the weights need {weights / GIB:.2f} GiB per GPU, more than the {pre_gib:.2f} GiB free "
            "at the baseline: loading runs out of CUDA memory before the KV cache is sized",
            "srt/model_executor/model_runner.py:1270-1380 (load_model)",
            sglang_message=_budget_message(k, shapes, pre_gib, weights),
        )
    elif (
        shapes is None or weights is None or shapes.problems or len(problems) > len(shapes.problems)
    ):
        if shapes is None:
            problems.append("the model's attention shapes are unknown: no KV cell size")
    else:
        try:
            kv = resolve_kv_dtype(k.kv_cache_dtype, shapes)
            result = _tokens(k, shapes, kv, pre_gib, weights)
        except PoolError as exc:
            error = _error_from(exc)
        except CellError as exc:
            error = PlanError("shape", str(exc), "srt/model_executor/pool_configurator.py:340-536")
    return _finish(
        inp, k, b, weights, wsource, kv, result, error, slack, need, problems, assumptions
    )


def _budget_message(
    k: Knobs, shapes: ModelShapes | None, pre_gib: float, weights: int
) -> str | None:
    """The error sglang's budget check raises for weights that exceed the baseline."""
    if shapes is None or shapes.problems:
        return None
    try:
        _tokens(k, shapes, resolve_kv_dtype(k.kv_cache_dtype, shapes), pre_gib, weights)
    except PoolError as exc:
        return exc.message
    except CellError:
        return None
    return None


def _nodes_notes(inp: CheckInput, k: Knobs, b: Baseline) -> list[str]:
    """One server over several nodes: the plan is per GPU of the whole world, every node alike."""
    try:
        nodes = int(inp.value("nnodes"))
    except (TypeError, ValueError):
        return []
    if nodes <= 1:
        return []
    return [
        f"{nodes} nodes: per GPU of the whole world (tp {k.tp} × pp {k.pp} = {k.world_size} GPUs, "
        f"{k.world_size // nodes} on each node); NCCL's start-up cost across nodes taken as "
        f"within one node's ({b.startup_cost_bytes / GIB:.2f} GiB; no multi-node start-up log measured)"
    ]


def _knob_notes(k: Knobs) -> list[str]:
    src = k.sources
    out = [
        f"GPU memory tier: {k.tier.label} (memory_hook.py:89-180)",
        f"chunked_prefill_size {k.chunked_prefill_size} ({src.get('chunked_prefill_size', 'default')})",
        f"decode CUDA-graph max bs {k.decode_max_bs} ({src.get('cuda_graph_max_bs', 'default')})",
        f"mem_fraction_static {k.mem_fraction_static:g} ({src.get('mem_fraction_static', k.mfs_source)}; "
        f"sglang's default reserve {k.reserve.total_mib:.0f} MiB"
        + (", floored at 10 GiB" if k.reserve.floor_applied else "")
        + (f", × {k.reserve.vlm_factor:.3f} for the vision tower" if k.reserve.vlm_factor else "")
        + ")",
        f"attention backend {', '.join(k.attention_backends)}; page size {k.page_size}",
    ]
    if k.attn_dp_enabled:
        out.append(f"DP attention: {k.attn_dp} attention-DP ranks, attention TP {k.attn_tp}")
    if k.speculative:
        out.append("speculative decoding: the draft model's weights and KV are not in this plan")
    return out


def _finish(
    inp: CheckInput,
    k: Knobs,
    b: Baseline,
    weights: int | None,
    wsource: str | None,
    kv: KvDtype | None,
    r: _Tokens | None,
    error: PlanError | None,
    slack: int,
    need: int | None,
    problems: list[str],
    assumptions: list[str],
) -> MemoryPlan:
    shapes = inp.model.shapes if inp.model is not None else None
    total = r.total if r is not None else None
    usable = total
    reserve = None
    mrr = None
    per_gib = None
    if r is not None and shapes is not None and kv is not None and weights is not None:
        if shapes.sparse_kernel_stride and uses_minicpm_sparse_backend(k):
            if k.page_size != 1:
                error = PlanError(
                    "sala-page",
                    "MiniCPM sparse attention requires page_size=1",
                    "srt/layers/attention/minicpm/cache.py:51-52",
                )
            reserve = sala_reserve(r.total, shapes.sparse_kernel_stride)
            usable = r.total - reserve
            assumptions.append(
                f"MiniCPM sparse attention reserves {reserve} of the {r.total} tokens for compressed K "
                "(layers/attention/minicpm/cache.py:59-62)"
            )
        try:
            ratio = mamba_ratio(
                k.disable_radix_cache, k.mamba_extra_buffer, k.mamba_overlap, k.mamba_lazy
            )
            mrr = max_running_requests(
                r.total,
                context_len=k.context_len,
                user=k.max_running_requests,
                attn_dp_size=k.attn_dp,
                mamba_cache_size=r.state_slots,
                ratio=ratio,
            )
        except PoolError as exc:
            error = _error_from(exc)
        per_gib = _sensitivity(k, shapes, kv, b.free_bytes / GIB, weights, r.total)
        if r.state_slots is not None:
            assumptions.append(
                f"mamba/lightning state: {r.state_slots} slots of {(r.state_per_req or 0) / MIB:.2f} MiB per request"
            )
        if r.swa is not None:
            assumptions.append(
                f"sliding-window pool: {r.swa} tokens (ratio {k.swa_full_tokens_ratio:g})"
            )
    cell = None
    if r is not None and r.cells:
        cell = max(c.bytes_per_token for c in r.cells)
    else:
        kv, cell = _cell_alone(k, shapes)
    return MemoryPlan(
        knobs=k,
        gpu_total_bytes=b.total_bytes,
        baseline=b,
        weights_bytes=weights,
        weights_source=wsource,
        kv_dtype=kv,
        cell_bytes=cell,
        kv_budget_bytes=r.budget if r is not None else None,
        available_after_weights_bytes=int(r.available_gib * GIB) if r is not None else None,
        max_total_num_tokens=total
        if error is None
        else (total if error.kind == "sala-page" else None),
        swa_tokens=r.swa if r is not None else None,
        usable_tokens=usable if error is None else None,
        compressed_reserve=reserve,
        max_running_requests=mrr if error is None else None,
        state_slots=r.state_slots if r is not None else None,
        state_bytes_per_request=r.state_per_req if r is not None else None,
        slack_bytes=slack,
        reserve_need_bytes=need,
        tokens_per_gib=per_gib,
        error=error,
        problems=tuple(problems),
        assumptions=tuple([*assumptions, *problems]),
    )


def _sensitivity(
    k: Knobs, shapes: ModelShapes, kv: KvDtype, pre_gib: float, weights: int, tokens: int
) -> float | None:
    """Tokens that one GiB more baseline memory buys: the band around the prediction."""
    try:
        more = _tokens(k, shapes, kv, pre_gib + 1.0, weights).total
    except (PoolError, CellError):
        return None
    return float(more - tokens)
