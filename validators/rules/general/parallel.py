"""Parallel sizes: the DP-attention spelling, attention DP vs TP and DP, GPUs needed, heads vs TP.

Before 0.5.22 attention DP is spelled --enable-dp-attention --dp-size N and there is
no --attn-dp-size: the spelling rules exist from 0.5.22 on, and the checks that
hold in both speak each release's words. Where sglang 0.5.23 decides (each rule says which):
- argument resolution, step 1 (parallel_hook.py:39) and step 59 (parallel_hook.py:286-326);
- `check_server_args` (validation_hook.py:172), run right after resolution, before any process;
- at launch: a rank binding a GPU that is not there (distributed/bootstrap.py:133, "CUDA error:
  invalid device ordinal"), or the model's attention layer asserting head counts
  (e.g. models/llama.py:183-193), minutes in, after the weights start loading.
"""

from __future__ import annotations

from collections.abc import Iterator

from sglaunch.validators.cards import card
from sglaunch.validators.facts import CheckInput
from sglaunch.validators.findings import Finding, Fix, Severity
from sglaunch.validators.release_spans import ATTN_DP_SIZE, has_attn_dp_size
from sglaunch.validators.resolving import (
    _int,
    attn_dp_size,
    dp_size,
    pp_size,
    tp_size,
    translates_deprecated_dp,
)
from sglaunch.validators.rule import rule

HOOK = "srt/arg_groups/parallel_hook.py"
# The most TP sizes a fix ever tries: more ranks than any one TP group has. A fix
# enumerates candidates, so its work must not follow the user's number (--tp-size 10**18).
MAX_TP_CANDIDATES = 1024
VALIDATION = "srt/arg_groups/validation_hook.py"


@rule(
    "deprecated-dp-attention",
    summary="--enable-dp-attention is the old spelling of --attn-dp-size",
    mirrors="parse",
    ref=f"{HOOK}:39",
    since=ATTN_DP_SIZE,
)
def deprecated_dp_attention(inp: CheckInput) -> Iterator[Finding]:
    if not inp.value("enable_dp_attention"):
        return
    n = _int(inp.value("dp_size"))
    translated = translates_deprecated_dp(inp) and n > 1
    if translated:
        detail = (
            f"sglang {inp.release} turns --enable-dp-attention --dp-size {n} into --attn-dp-size {n} "
            "(and dp_size 1) before anything else runs."
        )
        fix = Fix(
            label=f"Write it as --attn-dp-size {n}",
            set={"attn_dp_size": n},
            unset=("enable_dp_attention", "dp_size"),
        )
    elif _int(inp.value("attn_dp_size")) > 1:
        detail = "With --attn-dp-size given, --enable-dp-attention adds nothing."
        fix = Fix(label="Remove --enable-dp-attention", unset=("enable_dp_attention",))
    else:
        detail = "With --dp-size 1 it does nothing: attention DP stays off."
        fix = Fix(label="Remove --enable-dp-attention", unset=("enable_dp_attention",))
    yield Finding(
        code="deprecated-dp-attention",
        severity=Severity.WARNING,
        message="'--enable-dp-attention' is deprecated and will be removed in a future release. "
        "Use '--attn-dp-size <dp-size>' instead.",
        flags=("enable_dp_attention", "dp_size") if translated else ("enable_dp_attention",),
        fixes=(fix,),
        ref=f"{HOOK}:39",
        detail=detail,
    )


@rule(
    "attn-dp-size-positive",
    summary="--attn-dp-size must be at least 1",
    mirrors="resolution",
    ref=f"{HOOK}:286",
    since=ATTN_DP_SIZE,
)
def attn_dp_positive(inp: CheckInput) -> Iterator[Finding]:
    n = attn_dp_size(inp)
    if n < 1:
        yield Finding(
            code="attn-dp-size-positive",
            severity=Severity.ERROR,
            message=f"--attn-dp-size must be positive (got {n}).",
            flags=("attn_dp_size",),
            fixes=(Fix(label="Remove --attn-dp-size", unset=("attn_dp_size",)),),
            ref=f"{HOOK}:286",
        )


@rule(
    "dp-with-attn-dp",
    summary="data-parallel replicas and attention DP cannot be combined",
    mirrors="resolution",
    ref=f"{HOOK}:288",
    since=ATTN_DP_SIZE,
)
def dp_with_attn_dp(inp: CheckInput) -> Iterator[Finding]:
    a, d = attn_dp_size(inp), dp_size(inp)
    if a > 1 and d > 1:
        yield Finding(
            code="dp-with-attn-dp",
            severity=Severity.ERROR,
            message=f"--dp-size {d} with --attn-dp-size {a}: data-parallel replicas combined with "
            "attention data parallelism are not supported.",
            flags=("dp_size", "attn_dp_size"),
            fixes=(
                Fix(label="Keep attention DP, drop the replicas", unset=("dp_size",)),
                Fix(
                    label="Keep the replicas, drop attention DP",
                    unset=("attn_dp_size", "enable_dp_attention"),
                ),
            ),
            ref=f"{HOOK}:288",
        )


@rule(
    "attn-dp-divides-tp",
    summary="the attention-DP size must divide the tensor-parallel size",
    mirrors="resolution",
    ref=f"{HOOK}:326",
)
def attn_dp_divides_tp(inp: CheckInput) -> Iterator[Finding]:
    a, t = attn_dp_size(inp), tp_size(inp)
    if a > 1 and t > 0 and dp_size(inp) <= 1 and t % a != 0:
        via = " (from --enable-dp-attention --dp-size)" if translates_deprecated_dp(inp) else ""
        fixes = (
            Fix(
                label=f"Set --tp-size {a} (attention DP runs inside the TP group)",
                set={"tp_size": a},
            ),
        )
        if not has_attn_dp_size(inp.release):
            # before 0.5.22: handle_data_parallelism asserts on dp_size itself
            yield Finding(
                code="attn-dp-divides-tp",
                severity=Severity.ERROR,
                message=f"--dp-size {a} with --enable-dp-attention does not divide --tp-size {t}: "
                "sglang stops with a bare AssertionError (assert tp_size % dp_size == 0)",
                flags=("enable_dp_attention", "dp_size", "tp_size"),
                fixes=fixes,
                ref=f"{HOOK}:326",
                detail="Attention DP splits the tensor-parallel group into --dp-size attention "
                "replicas, so --tp-size must be a whole multiple of it.",
            )
            return
        yield Finding(
            code="attn-dp-divides-tp",
            severity=Severity.ERROR,
            message=f"--attn-dp-size {a}{via} does not divide --tp-size {t}: sglang stops with a bare "
            f"AssertionError (assert tp_size % attn_dp_size == 0)",
            flags=("attn_dp_size", "tp_size")
            if not via
            else ("enable_dp_attention", "dp_size", "tp_size"),
            fixes=fixes,
            ref=f"{HOOK}:326",
            detail="Attention DP splits the tensor-parallel group into attention replicas, so it needs "
            "at least as many TP ranks as DP groups, in whole multiples.",
        )


@rule(
    "nnodes-divides-tp",
    summary="tp × pp must divide evenly over the nodes",
    mirrors="resolution",
    ref=f"{VALIDATION}:179",
)
def nnodes_divides(inp: CheckInput) -> Iterator[Finding]:
    nnodes = _int(inp.value("nnodes"))
    if inp.value("ep_join_mode") == "scale" or nnodes == 0:
        return
    if (tp_size(inp) * pp_size(inp)) % nnodes != 0:
        yield Finding(
            code="nnodes-divides-tp",
            severity=Severity.ERROR,
            message="tp_size must be divisible by number of nodes",
            flags=("tp_size", "pp_size", "nnodes"),
            ref=f"{VALIDATION}:179 (check_server_args)",
            detail=f"--tp-size {tp_size(inp)} × --pp-size {pp_size(inp)} over --nnodes {nnodes}.",
        )


@rule(
    "multinode-dp-replicas",
    summary="data-parallel replicas work on one node only",
    mirrors="resolution",
    ref=f"{VALIDATION}:199",
)
def multinode_dp(inp: CheckInput) -> Iterator[Finding]:
    if dp_size(inp) > 1 and _int(inp.value("nnodes")) != 1:
        yield Finding(
            code="multinode-dp-replicas",
            severity=Severity.ERROR,
            message="multi-node data-parallel replicas are not supported; use attention DP "
            "(--attn-dp-size) across nodes"
            if has_attn_dp_size(inp.release)
            # before 0.5.22 the same check (without DP attention) in its own words
            else "multi-node data parallel is not supported unless dp attention!",
            flags=("dp_size", "nnodes"),
            ref=f"{VALIDATION}:199 (check_server_args)",
        )


@rule(
    "elastic-ep-join",
    summary="--elastic-ep-join-mode needs an elastic EP backend (and, to scale, a joining rank)",
    mirrors="resolution",
    ref=f"{HOOK}:547",
)
def elastic_ep_join(inp: CheckInput) -> Iterator[Finding]:
    mode = inp.value("ep_join_mode")
    if mode is None:
        return
    backend = inp.value("elastic_ep_backend")
    if backend in (None, "none"):
        yield Finding(
            code="elastic-ep-join",
            severity=Severity.ERROR,
            message="--elastic-ep-join-mode requires --elastic-ep-backend to be set.",
            flags=("ep_join_mode", "elastic_ep_backend"),
            fixes=(
                Fix(label="Remove --elastic-ep-join-mode", unset=("ep_join_mode",)),
                Fix(
                    label="Use the mooncake elastic EP backend",
                    set={"elastic_ep_backend": "mooncake"},
                ),
            ),
            ref=f"{HOOK}:547",
        )
    elif mode == "scale" and _int(inp.value("node_rank"), 0) != 1:
        yield Finding(
            code="elastic-ep-join",
            severity=Severity.ERROR,
            message="Elastic EP scale-up requires one joining TP group at "
            f"--node-rank 1 (got {_int(inp.value('node_rank'), 0)}).",
            flags=("ep_join_mode", "node_rank"),
            fixes=(Fix(label="Join as --node-rank 1", set={"node_rank": 1}),),
            ref=f"{HOOK}:551",
        )
    elif mode == "scale" and _int(inp.value("ep_join_rank_offset"), 0) <= 0:
        yield Finding(
            code="elastic-ep-join",
            severity=Severity.ERROR,
            message="Elastic EP scale joiners require --elastic-ep-join-rank-offset set to the current "
            "effective EP size.",
            flags=("ep_join_mode", "ep_join_rank_offset"),
            ref=f"{HOOK}:555",
        )


@rule(
    "parallel-size-positive",
    summary="parallel sizes must be at least 1",
    mirrors="launch",
    ref="srt/entrypoints/engine.py:2064 (rank ranges at launch)",
)
def sizes_positive(inp: CheckInput) -> Iterator[Finding]:
    for dest in ("tp_size", "pp_size", "dp_size"):
        if not inp.is_set(dest):
            continue
        v = _int(inp.value(dest))
        if v < 1:
            yield Finding(
                code="parallel-size-positive",
                severity=Severity.ERROR,
                message=f"{inp.cli(dest)} {v}: sizes below 1 pass sglang's argument checks but the "
                "launch starts no scheduler (or divides by zero) and fails",
                flags=(dest,),
                fixes=(Fix(label=f"Remove {inp.cli(dest)} (default 1)", unset=(dest,)),),
                ref="srt/entrypoints/engine.py:2064 (at launch)",
            )


def highest_gpu_index(inp: CheckInput) -> int:
    """The highest GPU index sglang's ranks bind on one node (engine.py:934, data_parallel_controller.py)."""
    tp, pp, dp = tp_size(inp), pp_size(inp), max(dp_size(inp), 1)
    nnodes = max(_int(inp.value("nnodes")), 1)
    step = max(_int(inp.value("gpu_id_step")), 1)
    base = max(_int(inp.value("base_gpu_id"), 0), 0)
    if nnodes > 1:
        # the ranks spread evenly over the nodes (replicas are single-node only)
        per_node = -(-(tp * pp) // nnodes)
        return base + (per_node - 1) * step
    return base + (dp - 1) * tp * pp * step + (pp - 1) * tp + (tp - 1) * step


@rule(
    "parallel-gpus",
    summary="the parallel layout needs more GPUs than are visible",
    mirrors="launch",
    ref="srt/distributed/bootstrap.py:133 (set_device at launch)",
)
def parallel_gpus(inp: CheckInput) -> Iterator[Finding]:
    tp, pp, dp = tp_size(inp), pp_size(inp), max(dp_size(inp), 1)
    if tp < 1 or pp < 1 or inp.gpu.count == 0 or _int(inp.value("nnodes")) > 1:
        return  # across nodes: multinode.py's gpus-per-node, per node
    need = highest_gpu_index(inp) + 1
    have = inp.gpu.count
    if need <= have:
        return
    layout = [f"--tp-size {tp}"]
    if pp > 1:
        layout.append(f"--pp-size {pp}")
    if dp > 1:
        layout.append(f"--dp-size {dp}")
    fixes: list[Fix] = []
    if dp > 1 and tp * pp <= have:
        fits = have // (tp * pp)
        fixes.append(
            Fix(
                label=f"Run {fits} replica{'s' if fits != 1 else ''} (--dp-size {fits})",
                set={"dp_size": fits},
            )
            if fits > 1
            else Fix(label="Run one replica (remove --dp-size)", unset=("dp_size",))
        )
    if tp > have and pp == 1 and dp == 1:
        fitting = _largest_dividing_tp(inp, have)
        if fitting:
            fixes.append(
                Fix(
                    label=f"Use --tp-size {fitting} (fits {have} GPU{'s' if have != 1 else ''})",
                    set={"tp_size": fitting},
                )
            )
    gpu_word = "visible" if inp.gpu.mode == "nvml" else "in the planned machine"
    yield Finding(
        code="parallel-gpus",
        severity=Severity.ERROR,
        message=f"{' × '.join(layout)} needs {need} GPUs but {have} {'is' if have == 1 else 'are'} {gpu_word}; "
        "sglang would fail at launch with 'CUDA error: invalid device ordinal'",
        flags=tuple(
            d
            for d, v in (("tp_size", tp), ("pp_size", pp), ("dp_size", dp))
            if v > 1 or d == "tp_size"
        ),
        fixes=tuple(fixes),
        ref="srt/distributed/bootstrap.py:133 (at launch, after resolution)",
        detail="sglang does not compare parallel sizes with the GPU count while resolving arguments; "
        "each rank binds GPU base_gpu_id + offset, and the first one past the last GPU fails.",
    )


def _largest_dividing_tp(inp: CheckInput, limit: int) -> int | None:
    m = inp.model
    heads = m.num_attention_heads if m else None
    for t in range(min(limit, MAX_TP_CANDIDATES), 0, -1):
        if heads is None or heads % t == 0:
            return t
    return None


@rule(
    "heads-divide-tp",
    summary="attention heads and KV heads must split evenly over the tensor-parallel ranks",
    mirrors="launch",
    ref="srt/models/llama.py:183 (model construction at launch)",
)
def heads_divide_tp(inp: CheckInput) -> Iterator[Finding]:
    m = inp.model
    t = tp_size(inp)
    if m is None or t <= 1 or m.is_mla or not m.num_attention_heads:
        return
    heads = m.num_attention_heads
    kv = m.num_key_value_heads or heads
    problems = []
    if heads % t != 0:
        problems.append(f"{heads} attention heads do not divide by --tp-size {t}")
    elif kv >= t and kv % t != 0:
        problems.append(f"{kv} KV heads do not divide by --tp-size {t}")
    elif kv < t and t % kv != 0:
        problems.append(
            f"--tp-size {t} is not a multiple of the {kv} KV heads (needed to replicate them)"
        )
    if not problems:
        return
    # a size that splits the heads is at most the head count: no need to count past it
    top = min(max(inp.gpu.count, t), heads, MAX_TP_CANDIDATES)
    good = [
        x for x in range(1, top + 1) if heads % x == 0 and (kv % x == 0 if kv >= x else x % kv == 0)
    ]
    fixes = tuple(
        Fix(label=f"Use --tp-size {x}", set={"tp_size": x})
        for x in sorted(good, reverse=True)[:2]
        if x != t
    )
    yield Finding(
        code="heads-divide-tp",
        severity=Severity.ERROR,
        message=f"{problems[0]}: sglang accepts the flags, then fails building the model "
        "(AssertionError in the attention layer, after weights start loading)",
        flags=("tp_size",),
        fixes=fixes,
        ref="srt/models/llama.py:183/189/193; other models: srt/distributed/utils.py:70 'X is not divisible by Y'",
        detail=f"{m.architecture}: {heads} attention heads, {kv} KV heads. Each TP rank needs whole "
        "query heads; KV heads are split when there are at least as many as ranks, else replicated.",
    )


card(
    "deprecated-dp-attention",
    "--enable-dp-attention is the old spelling of --attn-dp-size",
    what=(
        "From sglang 0.5.22 attention data parallelism has its own flag, --attn-dp-size N. The old "
        "--enable-dp-attention --dp-size N still works: the first resolution step rewrites it to "
        "--attn-dp-size N with --dp-size 1 and prints this deprecation warning. Alone (dp-size 1) "
        "it does nothing."
    ),
    when="Launch lines from DeepSeek/Qwen MoE recipes written for sglang before 0.5.22 (where this spelling was the only one).",
    solutions=(
        "Write --attn-dp-size N instead of --enable-dp-attention --dp-size N.",
        "Check that the model supports attention DP at all (MiniCPM does not).",
    ),
    before="sglang serve --model-path deepseek-ai/DeepSeek-V3 --tp 8 --enable-dp-attention --dp-size 8",
    after="sglang serve --model-path deepseek-ai/DeepSeek-V3 --tp 8 --attn-dp-size 8",
    related=("minicpm-dp-attention", "attn-dp-divides-tp", "dp-with-attn-dp"),
    patterns=(r"'--enable-dp-attention' is deprecated",),
    ref=f"sglang/{HOOK}:39",
    stage="parse",
)

card(
    "attn-dp-size-positive",
    "--attn-dp-size must be positive",
    what="The attention-DP size counts attention replicas inside the TP group; 0 or less means nothing.",
    when="A typo, or a script that computes the size and gets 0.",
    solutions=(
        "Remove --attn-dp-size (default 1), or give a positive size that divides --tp-size.",
    ),
    before="sglang serve --model-path X --tp 4 --attn-dp-size 0",
    after="sglang serve --model-path X --tp 4",
    related=("attn-dp-divides-tp",),
    patterns=(r"--attn-dp-size must be positive",),
    ref=f"sglang/{HOOK}:286",
)

card(
    "dp-with-attn-dp",
    "Data-parallel replicas and attention DP cannot be combined",
    what=(
        "--dp-size N runs N independent copies of the model; --attn-dp-size N splits attention "
        "inside one tensor-parallel group. sglang 0.5.22 and later support one or the other, not both."
    ),
    when="Mixing the new --attn-dp-size with a --dp-size kept from an older line.",
    solutions=(
        "For MoE models with attention DP, keep --attn-dp-size and drop --dp-size.",
        "For dense models, keep --dp-size replicas and drop --attn-dp-size.",
    ),
    before="sglang serve --model-path X --tp 8 --attn-dp-size 8 --dp-size 2",
    after="sglang serve --model-path X --tp 8 --attn-dp-size 8",
    related=("deprecated-dp-attention", "attn-dp-divides-tp"),
    patterns=(
        r"data-parallel replicas combined with attention data parallelism are not supported",
    ),
    ref=f"sglang/{HOOK}:288",
)

card(
    "attn-dp-divides-tp",
    "The attention-DP size must divide the tensor-parallel size",
    what=(
        "Attention DP runs inside the TP group: with --tp-size 8 --attn-dp-size 4 each attention "
        "replica has 2 TP ranks. A size that does not divide --tp-size stops sglang's resolution "
        "with a bare AssertionError (no message) in handle_data_parallelism."
    ),
    when=(
        "Most often --enable-dp-attention --dp-size N with the default --tp-size 1: the old "
        "spelling becomes --attn-dp-size N, which cannot fit in one TP rank."
    ),
    solutions=(
        "Set --tp-size to a multiple of the attention-DP size (usually equal to it).",
        "Or lower --attn-dp-size to a divisor of --tp-size.",
    ),
    before="sglang serve --model-path X --enable-dp-attention --dp-size 2",
    after="sglang serve --model-path X --tp 2 --attn-dp-size 2",
    related=("deprecated-dp-attention", "parallel-gpus"),
    ref=f"sglang/{HOOK}:326",
)

card(
    "nnodes-divides-tp",
    "tp × pp must split evenly over the nodes",
    what="sglang places the same number of TP×PP ranks on every node, checked before any process starts.",
    when="Multi-node launches where --nnodes does not divide the total rank count.",
    solutions=("Choose --tp-size × --pp-size as a multiple of --nnodes.",),
    before="sglang serve --model-path X --tp 4 --nnodes 3 --node-rank 0",
    after="sglang serve --model-path X --tp 4 --nnodes 2 --node-rank 0",
    related=("multinode-dp-replicas",),
    patterns=(r"tp_size must be divisible by number of nodes",),
    ref=f"sglang/{VALIDATION}:179",
)

card(
    "multinode-dp-replicas",
    "Data-parallel replicas work on one node only",
    what="sglang refuses --dp-size > 1 (replicas) with --nnodes > 1; across nodes, use attention "
    "DP (--attn-dp-size from 0.5.22, --enable-dp-attention --dp-size before).",
    when="Scaling a single-node replica setup to several nodes.",
    solutions=(
        "Run one sglang server per node (with a router in front), or use --attn-dp-size across nodes.",
    ),
    before="sglang serve --model-path X --tp 8 --dp-size 2 --nnodes 2",
    after="sglang serve --model-path X --tp 16 --attn-dp-size 2 --nnodes 2",
    related=("nnodes-divides-tp", "dp-with-attn-dp"),
    patterns=(
        r"multi-node data-parallel replicas are not supported",
        r"multi-node data parallel is not supported unless dp attention",
    ),
    ref=f"sglang/{VALIDATION}:199",
)

card(
    "elastic-ep-join",
    "Joining an elastic EP deployment needs its backend",
    what=(
        "--elastic-ep-join-mode makes this server join (recover into, or scale up) an elastic "
        "expert-parallel deployment. That needs the collective backend the deployment uses "
        "(--elastic-ep-backend mooncake or nixl); scaling up also joins as TP group 1 "
        "(--node-rank 1) at a rank offset equal to the current EP size."
    ),
    when="Elastic-EP flags copied from a MoE recipe without the rest of its setup.",
    solutions=(
        "Remove --elastic-ep-join-mode unless this server joins an elastic EP deployment.",
        "Otherwise set --elastic-ep-backend (and --node-rank 1 and --elastic-ep-join-rank-offset to scale).",
    ),
    before="sglang serve --model-path X --elastic-ep-join-mode scale",
    after="sglang serve --model-path X --elastic-ep-join-mode scale --elastic-ep-backend mooncake --node-rank 1 --elastic-ep-join-rank-offset 8",
    related=("minicpm-dp-attention",),
    patterns=(r"--elastic-ep-join-mode requires --elastic-ep-backend", r"Elastic EP scale"),
    ref=f"sglang/{HOOK}:547",
)

card(
    "parallel-size-positive",
    "Parallel sizes must be at least 1",
    what=(
        "sglang's argument checks accept --tp-size 0 or negative sizes, but the launch then starts "
        "no scheduler (tp ≤ 0) or divides by zero computing rank ranges (pp = 0)."
    ),
    when="A script computing sizes from a GPU count that came out 0.",
    solutions=("Remove the flag (the default is 1) or give a positive size.",),
    before="sglang serve --model-path X --tp-size 0",
    after="sglang serve --model-path X",
    related=("parallel-gpus",),
    ref="sglang/srt/entrypoints/engine.py:2064",
    stage="launch",
)

card(
    "parallel-gpus",
    "The parallel layout needs more GPUs than there are",
    what=(
        "Every tensor-, pipeline- and data-parallel rank needs its own GPU: tp × pp × dp GPUs on one "
        "node (attention DP and expert parallelism subdivide the TP group and add none). sglang does "
        "not check this while resolving arguments; the first rank past the last GPU fails at launch "
        "with 'CUDA error: invalid device ordinal', after the other ranks have started."
    ),
    when=(
        "A launch line written for an 8-GPU box run on fewer GPUs, or CUDA_VISIBLE_DEVICES hiding "
        "some of them, or --dp-size replicas stacked on top of --tp-size."
    ),
    solutions=(
        "Lower --dp-size (replicas) first: each replica needs tp × pp GPUs.",
        "Lower --tp-size to the GPUs you have, keeping it a divisor of the attention heads.",
        "Check CUDA_VISIBLE_DEVICES and --base-gpu-id.",
    ),
    before="sglang serve --model-path X --tp 4 --dp-size 4      # on 8 GPUs",
    after="sglang serve --model-path X --tp 4 --dp-size 2",
    related=("heads-divide-tp", "deprecated-dp-attention"),
    patterns=(r"invalid device ordinal",),
    ref="sglang/srt/distributed/bootstrap.py:133",
    stage="launch",
)

card(
    "heads-divide-tp",
    "Attention heads must split evenly over the tensor-parallel ranks",
    what=(
        "Tensor parallelism gives each rank whole attention heads: the query heads must divide by "
        "--tp-size, and the KV heads must either divide by it or (when there are fewer KV heads than "
        "ranks) be replicated a whole number of times. sglang accepts the flags and fails only when "
        "the model is built at launch, with an AssertionError in the attention layer."
    ),
    when="Choosing --tp-size from the GPU count (3, 6, 12 GPUs) rather than from the model's heads.",
    solutions=(
        "Pick a --tp-size that divides the attention heads (1, 2, 4, 8 for most models).",
        "Use the spare GPUs for --dp-size replicas instead.",
    ),
    before="sglang serve --model-path meta-llama/Llama-3.1-8B --tp 3",
    after="sglang serve --model-path meta-llama/Llama-3.1-8B --tp 2",
    related=("parallel-gpus",),
    patterns=(r"is not divisible by \d+",),
    ref="sglang/srt/models/llama.py:183",
    stage="launch",
)
