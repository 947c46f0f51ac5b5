"""Verdicts of the memory plan: the start-up failures sglang 0.5.23 would hit, before launch.

Each rule reads one `plan_memory` result (computed once per input) and yields
sglang's exact error text where sglang raises one. Every fix is checked on the
plan of the fixed flags before it is offered: it must clear the finding and
must not make the plan fail in another way.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from sglaunch.validators.cards import card
from sglaunch.validators.facts import CheckInput
from sglaunch.validators.findings import Finding, Fix, Severity
from sglaunch.validators.memory.baseline import GIB
from sglaunch.validators.memory.plan import MemoryPlan, plan_memory
from sglaunch.validators.rule import rule

BUDGET_REF = "srt/mem_cache/kv_cache_configurator.py:3044-3058"
EMPTY_REF = "srt/model_executor/pool_configurator.py:94-99"
CONTEXT_REF = "srt/managers/tp_worker.py:552-566"
RESERVE_REF = "srt/arg_groups/memory_hook.py:281-328"
SWA_REF = "srt/model_executor/pool_configurator.py:208-216"
STATE_REF = "srt/mem_cache/kv_cache_configurator.py:3392-3402"
MAX_FRACTION = 0.97

_LAST: list[tuple[CheckInput, MemoryPlan]] = []


def plan_for(inp: CheckInput) -> MemoryPlan:
    """The plan of `inp`, computed once for all the rules below (identity cache of one)."""
    if _LAST and _LAST[0][0] is inp:
        return _LAST[0][1]
    plan = plan_memory(inp)
    _LAST[:] = [(inp, plan)]
    return plan


Check = Callable[[MemoryPlan], bool]


def _vetted(inp: CheckInput, candidates: list[Fix], still_bad: Check) -> tuple[Fix, ...]:
    """The candidates whose fixed flags clear `still_bad` without another plan error."""
    out: list[Fix] = []
    seen: set[str] = set()
    for fix in candidates:
        key = repr(sorted(fix.set.items())) + repr(fix.unset)
        if key in seen:
            continue
        seen.add(key)
        fixed = replace(inp, flags=fix.apply(inp.flags))
        plan = plan_memory(fixed)
        if plan.error is None and not still_bad(plan):
            out.append(fix)
    return tuple(out)


def _fraction_fixes(plan: MemoryPlan, start: float) -> list[Fix]:
    """--mem-fraction-static values from `start` upward, in steps sglang's users take."""
    current = plan.knobs.mem_fraction_static
    out = []
    for step in (0.0, 0.02, 0.05, 0.1):
        value = math.ceil((start + step) * 100) / 100
        if current < value <= MAX_FRACTION:
            out.append(
                Fix(
                    f"Raise --mem-fraction-static to {value:.2f}",
                    set={"mem_fraction_static": value},
                )
            )
    return out


def _topology_fixes(inp: CheckInput, plan: MemoryPlan) -> list[Fix]:
    """More TP within the GPUs there are, or fewer replicas folded into TP."""
    k = plan.knobs
    gpus = inp.gpu.count
    out = []
    for tp in (k.tp * 2, k.tp * 4):
        if tp * k.pp * k.dp <= gpus:
            out.append(
                Fix(f"Split the weights over more GPUs: --tp-size {tp}", set={"tp_size": tp})
            )
    if k.dp > 1 and k.tp * k.dp * k.pp <= gpus:
        out.append(
            Fix(
                f"Use the {k.dp} replicas' GPUs for one: --tp-size {k.tp * k.dp} --dp-size 1",
                set={"tp_size": k.tp * k.dp, "dp_size": 1},
            )
        )
    return out


def topology_and_quant_fixes(inp: CheckInput, plan: MemoryPlan) -> tuple[Fix, ...]:
    """For weights that do not load: more GPUs, or 8-bit weights, checked on the plan."""
    candidates = _topology_fixes(inp, plan)
    model = inp.model
    if model is not None and not model.quantization and inp.value("quantization") is None:
        candidates.append(
            Fix("Quantize the weights on load: --quantization fp8", set={"quantization": "fp8"})
        )
    return _vetted(inp, candidates, lambda p: p.error is not None)


def _cap_fixes(inp: CheckInput) -> list[Fix]:
    """A --max-total-tokens that caps the pool below what the memory holds."""
    if inp.is_set("max_total_tokens"):
        return [
            Fix("Remove --max-total-tokens (let sglang size the pool)", unset=("max_total_tokens",))
        ]
    return []


def _kv_fixes(inp: CheckInput, plan: MemoryPlan) -> list[Fix]:
    out = []
    if (
        plan.kv_dtype is not None
        and plan.kv_dtype.size > 1
        and inp.gpu.capability
        and inp.gpu.capability >= (8, 9)
    ):
        out.append(
            Fix(
                "Store the KV cache in FP8: --kv-cache-dtype fp8_e4m3",
                set={"kv_cache_dtype": "fp8_e4m3"},
            )
        )
    return out


Candidates = Callable[[MemoryPlan], list[Fix]]


def _error_finding(
    inp: CheckInput, kind: str, code: str, flags: tuple[str, ...], candidates: Candidates
) -> Iterator[Finding]:
    """The plan's start-up error of `kind` as a finding, with sglang's text and checked fixes."""
    plan = plan_for(inp)
    e = plan.error
    if e is None or e.kind != kind:
        return
    yield Finding(
        code=code,
        severity=Severity.ERROR,
        message=e.message,
        flags=flags,
        fixes=_vetted(inp, candidates(plan), lambda p: p.error is not None),
        ref=e.ref,
        detail=_detail(plan),
    )


@rule(
    "memory-no-kv-room",
    summary="the weights leave no GPU memory for the KV cache under --mem-fraction-static",
    mirrors="launch",
    ref=BUDGET_REF,
)
def no_kv_room(inp: CheckInput) -> Iterator[Finding]:
    def candidates(plan: MemoryPlan) -> list[Fix]:
        e = plan.error
        suggested = e.suggested_fraction if e is not None else None
        start = suggested if suggested is not None else plan.knobs.mem_fraction_static
        return [*_fraction_fixes(plan, start + 0.01), *_topology_fixes(inp, plan)]

    yield from _error_finding(
        inp, "no-room", "memory-no-kv-room", ("mem_fraction_static",), candidates
    )


@rule(
    "memory-pool-empty",
    summary="the KV budget holds not one page of tokens",
    mirrors="launch",
    ref=EMPTY_REF,
)
def pool_empty(inp: CheckInput) -> Iterator[Finding]:
    def candidates(plan: MemoryPlan) -> list[Fix]:
        return [
            *_cap_fixes(inp),
            *_fraction_fixes(plan, plan.knobs.mem_fraction_static + 0.01),
            *_kv_fixes(inp, plan),
            *_topology_fixes(inp, plan),
        ]

    yield from _error_finding(
        inp, "empty", "memory-pool-empty", ("mem_fraction_static",), candidates
    )


def _context_fixes(inp: CheckInput, plan: MemoryPlan) -> list[Fix]:
    out: list[Fix] = []
    tokens = plan.max_total_num_tokens or 0
    shorter = tokens // 1024 * 1024
    if shorter >= 1024:
        out.append(
            Fix(
                f"Serve a shorter context: --context-length {shorter}",
                set={"context_length": shorter},
            )
        )
    return out


@rule(
    "memory-pool-below-context",
    summary="the KV pool holds fewer tokens than one full-length request",
    mirrors="launch",
    ref=CONTEXT_REF,
)
def pool_below_context(inp: CheckInput) -> Iterator[Finding]:
    plan = plan_for(inp)
    if not plan.pool_below_context:
        return
    k = plan.knobs
    tokens = plan.max_total_num_tokens or 0
    candidates = [
        *_cap_fixes(inp),
        *_kv_fixes(inp, plan),
        *_topology_fixes(inp, plan),
        *_fraction_fixes(plan, k.mem_fraction_static + 0.02),
        *_context_fixes(inp, plan),
    ]
    yield Finding(
        code="memory-pool-below-context",
        severity=Severity.WARNING,
        message=(
            f"KV pool holds {tokens} tokens, fewer than --context-length {k.context_len}. One "
            "full-length request cannot fit, so long requests will be "
            "refused or truncated at serving time. Lower --context-length, "
            "raise --mem-fraction-static, or free memory taken before the "
            "pool is sized."
        ),
        flags=("context_length", "mem_fraction_static"),
        fixes=_vetted(inp, candidates, lambda p: p.pool_below_context or p.slack_short),
        ref=CONTEXT_REF,
        detail=_detail(plan),
    )


@rule(
    "memory-slack-below-reserve",
    summary="--mem-fraction-static leaves less than sglang's own reserve for CUDA graphs and activations",
    mirrors="launch",
    ref=RESERVE_REF,
)
def slack_below_reserve(inp: CheckInput) -> Iterator[Finding]:
    plan = plan_for(inp)
    if plan.error is not None or not plan.slack_short or plan.baseline is None:
        return
    k = plan.knobs
    need = plan.reserve_need_bytes or 0
    heuristic = math.floor((1 - need / plan.baseline.free_bytes) * 1000) / 1000
    candidates: list[Fix] = []
    if heuristic < k.mem_fraction_static:
        candidates.append(
            Fix(
                f"Lower --mem-fraction-static to {heuristic:.3f}",
                set={"mem_fraction_static": heuristic},
            )
        )
    if k.decode_max_bs > 16:
        for bs in (k.decode_max_bs // 2, 16):
            candidates.append(
                Fix(
                    f"Capture smaller decode graphs: --cuda-graph-max-bs-decode {bs}",
                    set={"cuda_graph_max_bs_decode": bs},
                )
            )
    yield Finding(
        code="memory-slack-below-reserve",
        severity=Severity.WARNING,
        message=(
            f"--mem-fraction-static {k.mem_fraction_static:g} leaves {(plan.slack_bytes or 0) / GIB:.2f} GiB "
            f"outside the static pool, but sglang's own reserve heuristic assumes {need / GIB:.2f} GiB for "
            f"CUDA graphs and activations with these settings ({RESERVE_REF}): CUDA-graph capture or "
            'the first long prefill is likely to run out of memory ("Capture cuda graph failed"). '
            "Lower --mem-fraction-static or the decode graph batch size."
        ),
        flags=("mem_fraction_static", "cuda_graph_max_bs_decode"),
        fixes=_vetted(inp, candidates, lambda p: p.slack_short),
        ref=RESERVE_REF,
        detail=_detail(plan),
    )


@rule(
    "memory-swa-pool-too-small",
    summary="the sliding-window pool cannot hold one request",
    mirrors="launch",
    ref=SWA_REF,
)
def swa_too_small(inp: CheckInput) -> Iterator[Finding]:
    def candidates(plan: MemoryPlan) -> list[Fix]:
        ratio = plan.knobs.swa_full_tokens_ratio
        raised = [
            Fix(
                f"Give the sliding-window layers more of the pool: --swa-full-tokens-ratio {r:g}",
                set={"swa_full_tokens_ratio": r},
            )
            for r in sorted({min(1.0, round(ratio * 2, 2)), 1.0})
            if r > ratio
        ]
        return [*raised, *_fraction_fixes(plan, plan.knobs.mem_fraction_static + 0.02)]

    yield from _error_finding(
        inp, "swa", "memory-swa-pool-too-small", ("swa_full_tokens_ratio",), candidates
    )


@rule(
    "memory-state-cache-too-small",
    summary="the mamba / linear-attention state cache cannot hold one request",
    mirrors="launch",
    ref=STATE_REF,
)
def state_too_small(inp: CheckInput) -> Iterator[Finding]:
    def candidates(plan: MemoryPlan) -> list[Fix]:
        out: list[Fix] = []
        if inp.is_set("max_mamba_cache_size"):
            out.append(
                Fix(
                    "Remove --max-mamba-cache-size (sglang sizes the state from the budget)",
                    unset=("max_mamba_cache_size",),
                )
            )
        mrr = inp.value("max_running_requests")
        if isinstance(mrr, int) and mrr > 1:
            out.append(
                Fix(
                    f"Run fewer requests at once: --max-running-requests {mrr // 2}",
                    set={"max_running_requests": mrr // 2},
                )
            )
        if inp.value("mamba_ssm_dtype") != "bfloat16":
            out.append(
                Fix(
                    "Halve the state: --mamba-ssm-dtype bfloat16",
                    set={"mamba_ssm_dtype": "bfloat16"},
                )
            )
        return [
            *out,
            *_fraction_fixes(plan, plan.knobs.mem_fraction_static + 0.02),
            *_topology_fixes(inp, plan),
        ]

    flags = ("mem_fraction_static", "max_running_requests")
    yield from _error_finding(inp, "state", "memory-state-cache-too-small", flags, candidates)


@rule(
    "memory-plan-shape",
    summary="the model's shapes are not what sglang's pool sizing accepts",
    mirrors="launch",
    ref="srt/model_executor/pool_configurator.py:340-536",
)
def plan_shape(inp: CheckInput) -> Iterator[Finding]:
    plan = plan_for(inp)
    e = plan.error
    if e is None or e.kind not in ("shape", "sala-page"):
        return
    fixes: tuple[Fix, ...] = ()
    if e.kind == "sala-page":
        fixes = _vetted(
            inp, [Fix("Use --page-size 1", set={"page_size": 1})], lambda p: p.error is not None
        )
    yield Finding(
        code="memory-plan-shape",
        severity=Severity.ERROR,
        message=e.message,
        flags=("page_size",) if e.kind == "sala-page" else ("tp_size",),
        fixes=fixes,
        ref=e.ref,
    )


BALANCE_REF = "srt/distributed/bootstrap.py:441-452"


@rule(
    "memory-tp-unbalanced",
    summary="the GPUs of one TP group have unequal free memory (other processes on some)",
    mirrors="launch",
    ref=BALANCE_REF,
)
def tp_unbalanced(inp: CheckInput) -> Iterator[Finding]:
    """_check_tp_memory_balance: the MIN baseline over ranks against each rank's own, × 0.9."""
    plan = plan_for(inp)
    k = plan.knobs
    if str(inp.gpu.mode) != "nvml" or k.tp < 2 or plan.baseline is None:
        return
    frees = [d.memory_free for d in inp.gpu.devices[: k.tp * k.pp] if d.memory_free is not None]
    if len(frees) < 2:
        return
    cost = plan.baseline.startup_cost_bytes
    pre = (min(frees) - cost) / GIB
    local = (max(frees) - cost) / GIB
    if pre >= local * 0.9:
        return
    raises = inp.env_bool("SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK", True)  # environ.py:500
    yield Finding(
        code="memory-tp-unbalanced",
        severity=Severity.ERROR if raises else Severity.WARNING,
        message=(
            "The memory capacity is unbalanced. Some GPUs may be occupied by other processes. "
            f"pre_model_load_memory={pre!r}, local_gpu_memory={local!r}, local_gpu_memory * 0.9={local * 0.9!r}"
        ),
        flags=("tp_size",),
        ref=BALANCE_REF,
        detail="sglaunch's estimate from NVML's free memory on each GPU; sglang measures it after CUDA/NCCL start",
    )


def _detail(plan: MemoryPlan) -> str:
    b = plan.baseline
    parts: list[Any] = []
    if b is not None:
        parts.append(f"baseline {b.free_bytes / GIB:.2f} GiB ({b.source})")
    if plan.weights_bytes is not None:
        parts.append(f"weights {plan.weights_bytes / GIB:.2f} GiB per GPU ({plan.weights_source})")
    parts.append(
        f"mem_fraction_static {plan.knobs.mem_fraction_static:g} ({plan.knobs.mfs_source})"
    )
    if plan.tokens_per_gib is not None:
        parts.append(f"±{plan.tokens_per_gib:.0f} tokens per GiB of baseline error")
    return "sglaunch's memory plan: " + ", ".join(parts)


_COMMON_WHEN = (
    "A model that nearly fills its GPUs, a fraction copied from another machine, other processes "
    "on the GPU, or a layout copied for throughput (more replicas, fewer TP ranks)."
)

card(
    "memory-no-kv-room",
    "The weights leave no room for the KV cache",
    what=(
        "sglang sizes the KV cache from the memory free after the weights load, less the slack it keeps "
        "for CUDA graphs and activations (baseline × (1 − --mem-fraction-static)). Here the weights take "
        "all of it, so sglang stops with this ValueError and names the smallest fraction that would leave "
        "any room. The fraction must go UP, or the weights per GPU must shrink."
    ),
    when=_COMMON_WHEN,
    solutions=(
        "Raise --mem-fraction-static above the value the message names (sglaunch offers one it checked).",
        "Split the weights over more GPUs (--tp-size), or fold replicas into TP.",
        "Use a quantized checkpoint or --quantization fp8.",
    ),
    before="sglang serve --model-path X-70B --tp 2 --mem-fraction-static 0.5",
    after="sglang serve --model-path X-70B --tp 4",
    related=("memory-pool-empty", "memory-slack-below-reserve", "weights-exceed-gpu-memory"),
    ref="sglang/" + BUDGET_REF,
    stage="launch",
)
card(
    "memory-pool-empty",
    "The KV budget holds no tokens",
    what=(
        "After the weights and the slack there is memory left, but less than one page of KV cells, so "
        "max_total_num_tokens rounds to 0 and sglang raises 'Not enough memory'. A HIGHER "
        "--mem-fraction-static, a smaller KV cell (FP8 KV cache) or more GPUs fix it."
    ),
    when=_COMMON_WHEN,
    solutions=(
        "Raise --mem-fraction-static a little.",
        "Store the KV cache in FP8 (--kv-cache-dtype fp8_e4m3) to halve each token's cell.",
        "Split the model over more GPUs (--tp-size).",
    ),
    before="sglang serve --model-path X --mem-fraction-static 0.6",
    after="sglang serve --model-path X --mem-fraction-static 0.8",
    related=("memory-no-kv-room", "memory-pool-below-context"),
    ref="sglang/" + EMPTY_REF,
    stage="launch",
)
card(
    "memory-pool-below-context",
    "The KV pool is smaller than one full-length request",
    what=(
        "sglang starts, but its KV pool holds fewer tokens than --context-length, so a request of full "
        "length can never run: it is refused or truncated at serving time. sglang only logs a warning."
    ),
    when="A long-context model (128K) on few GPUs, or a low --mem-fraction-static.",
    solutions=(
        "Store the KV cache in FP8 (--kv-cache-dtype fp8_e4m3).",
        "Add GPUs (--tp-size) so each holds fewer weights and more KV.",
        "Serve a shorter --context-length, if long requests are not needed.",
    ),
    before="sglang serve --model-path X --context-length 131072",
    after="sglang serve --model-path X --context-length 65536",
    related=("memory-pool-empty",),
    patterns=(r"KV pool holds \d+ tokens, fewer than --context-length",),
    ref="sglang/" + CONTEXT_REF,
    stage="launch",
)
card(
    "memory-slack-below-reserve",
    "Too little memory left for CUDA graphs and activations",
    what=(
        "The KV pool is sized BEFORE CUDA graphs are captured, so graphs and the activations of the first "
        "long prefill must fit in what the fraction leaves outside the static pool. sglang's own default "
        "fraction reserves memory for them from the chunked-prefill size and the graph batch sizes; this "
        "fraction leaves less. Unlike 'Not enough memory', the fix is a LOWER fraction or smaller graphs "
        "(sglang#4330: stuck between the two)."
    ),
    when="--mem-fraction-static raised by hand for a bigger KV cache, or a large --cuda-graph-max-bs-decode.",
    solutions=(
        "Lower --mem-fraction-static to the value sglaunch offers (its heuristic's own).",
        "Capture smaller decode graphs: --cuda-graph-max-bs-decode.",
        "Remove --mem-fraction-static and let sglang choose.",
    ),
    before="sglang serve --model-path X --mem-fraction-static 0.93",
    after="sglang serve --model-path X --mem-fraction-static 0.82",
    related=("memory-no-kv-room", "mem-fraction-range"),
    ref="sglang/" + RESERVE_REF,
    stage="launch",
)
card(
    "memory-swa-pool-too-small",
    "The sliding-window pool cannot hold one request",
    what=(
        "Sliding-window hybrids keep two pools: full-attention tokens and sliding-window tokens "
        "(--swa-full-tokens-ratio of them). If the sliding-window pool is not larger than one window plus "
        "a page, no request can ever be admitted, and sglang refuses to start."
    ),
    when="A small KV budget, or a low --swa-full-tokens-ratio.",
    solutions=("Raise --swa-full-tokens-ratio.", "Raise --mem-fraction-static or add GPUs."),
    before="sglang serve --model-path gpt-oss --swa-full-tokens-ratio 0.01",
    after="sglang serve --model-path gpt-oss --swa-full-tokens-ratio 0.8",
    related=("memory-pool-empty",),
    patterns=(r"SWA pool \(\d+ tokens\) cannot hold even one request",),
    ref="sglang/" + SWA_REF,
    stage="launch",
)
card(
    "memory-state-cache-too-small",
    "The mamba / linear-attention state cache cannot hold one request",
    what=(
        "Hybrid models (mamba, gated delta net, MiniCPM SALA's lightning layers) keep a fixed-size state "
        "per running request next to the KV cache. sglang gives that state a share of the KV budget "
        "(--mamba-full-memory-ratio); here it fits no request, so sglang stops."
    ),
    when="A hybrid model on a small GPU, or a low --mem-fraction-static.",
    solutions=(
        "Halve the state with --mamba-ssm-dtype bfloat16.",
        "Raise --mem-fraction-static or add GPUs (--tp-size).",
        "Lower --max-running-requests.",
    ),
    before="sglang serve --model-path Qwen3-Next --mem-fraction-static 0.3",
    after="sglang serve --model-path Qwen3-Next",
    related=("memory-no-kv-room",),
    patterns=(
        r"Not enough GPU memory for hybrid \(mamba/linear-attention\) state cache",
        r"Hybrid \(mamba/linear-attention\) state cache is too small",
    ),
    ref="sglang/" + STATE_REF,
    stage="launch",
)
card(
    "memory-tp-unbalanced",
    "Some GPUs of the TP group are already in use",
    what=(
        "With TP > 1 sglang compares the free memory of every rank once CUDA is up: when the smallest "
        "is under 90 % of a rank's own, some GPUs are occupied by other processes, and sglang stops "
        "(the check raises because SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK defaults to true)."
    ),
    when="A previous server still running, a notebook holding a GPU, or another user's job.",
    solutions=(
        "Stop the processes on the busy GPUs (nvidia-smi lists them).",
        "Pick idle GPUs with CUDA_VISIBLE_DEVICES.",
        "Set SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK=0 to only warn (the pool is sized by the busiest GPU).",
    ),
    before="sglang serve --model-path X --tp 2   # GPU 1 has a 20 GB job on it",
    after="CUDA_VISIBLE_DEVICES=2,3 sglang serve --model-path X --tp 2",
    related=("memory-no-kv-room",),
    patterns=(r"The memory capacity is unbalanced",),
    ref="sglang/" + BALANCE_REF,
    stage="launch",
)
card(
    "memory-plan-shape",
    "The model's shapes do not fit sglang's pool sizing",
    what=(
        "sglang sizes the state and KV pools from the model's head counts split over the attention TP "
        "ranks; a head count that does not divide, or a page size the attention backend refuses, stops "
        "it while the pools are built."
    ),
    when="An unusual TP size for a hybrid model, or --page-size with MiniCPM sparse attention.",
    solutions=(
        "Pick a TP size that divides the model's heads.",
        "Use --page-size 1 with MiniCPM sparse attention.",
    ),
    before="sglang serve --model-path MiniCPM-SALA --page-size 16",
    after="sglang serve --model-path MiniCPM-SALA",
    related=("heads-divide-tp",),
    patterns=(r"MiniCPM sparse attention requires page_size=1",),
    ref="sglang/srt/model_executor/pool_configurator.py:340-536",
    stage="launch",
)
