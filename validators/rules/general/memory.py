"""GPU memory: --mem-fraction-static, and whether the weights can fit at all.

sglang 0.5.23 accepts any float for --mem-fraction-static (no range check in
argparse, resolution or check_server_args); a bad value fails at launch, while
the KV cache is sized (srt/mem_cache/kv_cache_configurator.py:3050,
srt/model_executor/pool_configurator.py:99) or during CUDA-graph capture.
"""

from __future__ import annotations

from collections.abc import Iterator

from sglaunch.validators.cards import card
from sglaunch.validators.facts import CheckInput
from sglaunch.validators.findings import Finding, Fix, Severity
from sglaunch.validators.rule import rule

KV_SIZING = "srt/mem_cache/kv_cache_configurator.py:3050"
LOAD_REF = "srt/model_executor/model_runner.py:1270-1380"
GIB = 1 << 30

# Above this, too little is left for activations and CUDA graphs (sglang's own
# heuristic tops out near 0.88 on the largest GPUs); below this the KV cache is
# so small that long prompts cannot run.
HIGH = 0.95
LOW = 0.3


@rule(
    "mem-fraction-range",
    summary="--mem-fraction-static outside (0, 1), or so high or low it will fail",
    mirrors="launch",
    ref=KV_SIZING,
)
def mem_fraction(inp: CheckInput) -> Iterator[Finding]:
    if not inp.is_set("mem_fraction_static"):
        return
    v = inp.value("mem_fraction_static")
    if not isinstance(v, int | float):
        return
    unset = Fix(
        label="Remove --mem-fraction-static (sglang sizes it from the GPU)",
        unset=("mem_fraction_static",),
    )
    if v <= 0 or v >= 1:
        where = (
            "at or below 0 the weights leave no memory for the KV cache (ValueError at kv_cache_configurator.py:3050)"
            if v <= 0
            else "at 1 or above the KV pool is sized past the free memory (CUDA out of memory)"
        )
        yield Finding(
            code="mem-fraction-range",
            severity=Severity.ERROR,
            message=f"--mem-fraction-static {v} is outside (0, 1): sglang accepts it, then fails at launch — {where}",
            flags=("mem_fraction_static",),
            fixes=(unset, Fix(label="Use 0.85", set={"mem_fraction_static": 0.85})),
            ref=KV_SIZING,
        )
    elif v > HIGH:
        yield Finding(
            code="mem-fraction-range",
            severity=Severity.WARNING,
            message=f"--mem-fraction-static {v} leaves under {1 - v:.0%} of GPU memory for activations and "
            "CUDA graphs: expect 'Capture cuda graph failed' (out of memory) at start-up",
            flags=("mem_fraction_static",),
            fixes=(Fix(label="Use 0.88", set={"mem_fraction_static": 0.88}), unset),
            ref="srt/model_executor/runner/decode_cuda_graph_runner.py:598",
        )
    elif v < LOW:
        yield Finding(
            code="mem-fraction-range",
            severity=Severity.WARNING,
            message=f"--mem-fraction-static {v} leaves little for the weights and KV cache: expect 'Not enough "
            "memory' or 'Loaded weights leave no GPU memory for the KV cache' at start-up",
            flags=("mem_fraction_static",),
            fixes=(unset,),
            ref=KV_SIZING,
        )


@rule(
    "weights-exceed-gpu-memory",
    summary="the model's weights per GPU exceed the memory free at sglang's baseline",
    mirrors="launch",
    ref=LOAD_REF,
)
def weights_fit(inp: CheckInput) -> Iterator[Finding]:
    # deferred: at the top it would register memory_plan's cards before this module's
    from sglaunch.validators.rules.general.memory_plan import plan_for, topology_and_quant_fixes

    plan = plan_for(inp)
    e = plan.error
    if e is None or e.kind != "weights-exceed" or plan.baseline is None:
        return
    k = plan.knobs
    ranks = k.tp * k.pp
    gpu = inp.gpu.primary.name if inp.gpu.primary is not None else "GPU"
    weights = plan.weights_bytes or 0
    yield Finding(
        code="weights-exceed-gpu-memory",
        severity=Severity.ERROR,
        message=f"{weights / GIB:.1f} GiB of weights on each of {ranks} GPU{'s' if ranks != 1 else ''} is "
        f"more than the {plan.baseline.free_bytes / GIB:.1f} GiB free on a {gpu} once CUDA and NCCL "
        "are up: loading runs out of memory",
        flags=("tp_size",),
        fixes=topology_and_quant_fixes(inp, plan),
        ref=LOAD_REF,
        detail=e.message,
    )


card(
    "mem-fraction-range",
    "--mem-fraction-static out of the range that works",
    what=(
        "--mem-fraction-static is the share of GPU memory sglang takes for the weights and the KV "
        "cache; the rest is for activations and CUDA graphs. sglang accepts any number here and "
        "only fails at launch: at or below 0 nothing is left for the KV cache, at 1 or above the "
        "KV pool is sized past the free memory, and above about 0.95 CUDA-graph capture runs out "
        "of memory."
    ),
    when="Copying a value from another GPU, or pushing it up to fit a longer context.",
    solutions=(
        "Remove the flag: sglang picks a value from the GPU memory (0.83 on an 80 GB H100).",
        "Keep it between about 0.7 and 0.9.",
        "If the KV cache is too small, add GPUs (--tp-size) rather than raising it past 0.9.",
    ),
    before="sglang serve --model-path X --mem-fraction-static 1.2",
    after="sglang serve --model-path X --mem-fraction-static 0.85",
    related=("weights-exceed-gpu-memory",),
    ref="sglang/" + KV_SIZING,
    stage="launch",
)

card(
    "weights-exceed-gpu-memory",
    "The weights do not fit on these GPUs",
    what=(
        "Each tensor- and pipeline-parallel rank holds its share of the weights in GPU memory; if "
        "that share is larger than the memory sglang may use, loading fails with CUDA out of memory."
    ),
    when="Large models on too few GPUs, or a planned machine with smaller GPUs.",
    solutions=(
        "Raise --tp-size (more GPUs per replica).",
        "Use a quantized checkpoint (FP8, AWQ).",
    ),
    before="sglang serve --model-path X-70B --tp 1",
    after="sglang serve --model-path X-70B --tp 4",
    related=("mem-fraction-range", "parallel-gpus"),
    ref="sglang/" + KV_SIZING,
    stage="launch",
)
