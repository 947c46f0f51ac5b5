"""MiniCPM and MiniCPM SALA, exactly as sglang 0.5.19–0.5.23 resolve them.

Mirrors `srt/arg_groups/model_overrides/minicpm.py` (`_minicpm_sala_overrides`,
registered for MiniCPMForCausalLM and MiniCPMSALAForCausalLM). sglang's provider
stops at its first error; here every rule reports, so a user sees all problems
at once, and the first error in sglang's order is the one sglang would raise.

The provider first appears in 0.5.19; the releases differ in one rule. In
0.5.19–0.5.21 the DP rule tests `cfg.enable_dp_attention` itself (minicpm.py:20
there), so --enable-dp-attention is rejected even with --dp-size 1; from 0.5.22 it
tests `attn_dp_enabled_of(cfg)` after --enable-dp-attention --dp-size N became
--attn-dp-size N. The other rules are the same code in every release (only their
line numbers move: validators/sourcelines.py).
"""

from __future__ import annotations

from collections.abc import Iterator

from sglaunch.validators.cards import card
from sglaunch.validators.facts import CheckInput
from sglaunch.validators.findings import Finding, Fix, Severity
from sglaunch.validators.release_spans import OLDEST, has_attn_dp_size
from sglaunch.validators.resolving import (
    BACKEND_FIELDS,
    _int,
    attention_backend_not_set,
    attn_dp_enabled,
    attn_dp_size,
    ep_scale_joiner,
    pp_size,
    tp_size,
    translates_deprecated_dp,
)
from sglaunch.validators.rule import override_finding, rule

ARCHS = ("MiniCPMForCausalLM", "MiniCPMSALAForCausalLM")
SRC = "srt/arg_groups/model_overrides/minicpm.py"
FORCE_DENSE = "SGLANG_MINICPM_FORCE_DENSE"
SPARSE_BACKENDS = ("minicpm_flashattn", "minicpm_flashinfer")

MSG_DP = "MiniCPM does not support DP attention"
MSG_HICACHE = "MiniCPM SALA does not support hierarchical cache"
MSG_PD = "MiniCPM sparse attention does not support PD disaggregation"


def _has_sparse(inp: CheckInput) -> bool:
    return bool(inp.model and inp.model.has_minicpm_sparse_attention)


def _has_hybrid(inp: CheckInput) -> bool:
    m = inp.model
    return bool(m and (m.has_minicpm_sparse_attention or m.has_lightning_layers))


def _force_dense(inp: CheckInput) -> bool:
    return inp.env_bool(FORCE_DENSE)


def _dense_backend(inp: CheckInput) -> str:
    """The dense backend FORCE_DENSE would map this GPU's sparse default to."""
    if inp.gpu.is_blackwell:
        return "flashinfer"  # minicpm_flashinfer -> flashinfer
    if inp.gpu.is_hopper:
        return "fa3"  # minicpm_flashattn -> fa3
    return "flashinfer"


# --- rule 1: attention DP ----------------------------------------------------


@rule(
    "minicpm-dp-attention",
    summary="MiniCPM models reject attention data parallelism",
    mirrors="resolution",
    ref=f"{SRC}:18",
    architectures=ARCHS,
    since=OLDEST,
)
def dp_attention(inp: CheckInput) -> Iterator[Finding]:
    if not has_attn_dp_size(inp.release):
        yield from _dp_attention_flag(inp)
        return
    if not attn_dp_enabled(inp):
        return
    flags: list[str] = []
    details: list[str] = []
    off = Fix(
        label="Turn off attention DP (keep tensor parallelism)",
        unset=tuple(
            f
            for f in ("enable_dp_attention", "attn_dp_size", "ep_join_mode")
            if inp.is_set(f) and not (f == "ep_join_mode" and not ep_scale_joiner(inp))
        )
        + (("dp_size",) if translates_deprecated_dp(inp) and inp.is_set("dp_size") else ()),
    )
    fixes = [off]
    n = attn_dp_size(inp)
    if translates_deprecated_dp(inp) and n > 1:
        flags += ["enable_dp_attention", "dp_size"]
        details.append(
            f"sglang {inp.release} turns --enable-dp-attention --dp-size {n} into attention DP "
            f"(--attn-dp-size {n}) before the model check runs."
        )
        replicas_fit = n * tp_size(inp) * pp_size(inp) <= max(inp.gpu.count, 1)
        if replicas_fit or inp.gpu.count == 0:
            fixes.append(
                Fix(
                    label=f"Run {n} data-parallel replicas instead (needs {n * tp_size(inp) * pp_size(inp)} GPUs)",
                    unset=("enable_dp_attention",),
                )
            )
    elif n > 1:
        flags.append("attn_dp_size")
        if inp.is_set("enable_dp_attention"):
            flags.append("enable_dp_attention")
        details.append(f"--attn-dp-size {n} asks for attention DP.")
    if ep_scale_joiner(inp):
        flags.append("ep_join_mode")
        details.append(
            "--elastic-ep-join-mode scale joins an attention-DP deployment, "
            "so sglang treats it as attention DP."
        )
    yield Finding(
        code="minicpm-dp-attention",
        severity=Severity.ERROR,
        message=MSG_DP,
        flags=tuple(flags),
        fixes=tuple(fixes),
        ref=f"{SRC}:18",
        detail=" ".join(details),
    )


def _dp_attention_flag(inp: CheckInput) -> Iterator[Finding]:
    """0.5.19–0.5.21: `if cfg.enable_dp_attention: raise` — the flag itself, whatever --dp-size."""
    if not inp.value("enable_dp_attention"):
        return
    n = _int(inp.value("dp_size"))
    fixes = [
        Fix(
            label="Turn off attention DP (keep tensor parallelism)",
            unset=("enable_dp_attention", *(("dp_size",) if inp.is_set("dp_size") else ())),
        )
    ]
    need = n * tp_size(inp) * pp_size(inp)
    if n > 1 and (need <= max(inp.gpu.count, 1) or inp.gpu.count == 0):
        fixes.append(
            Fix(
                label=f"Run {n} data-parallel replicas instead (needs {need} GPUs)",
                unset=("enable_dp_attention",),
            )
        )
    alone = (
        " even with --dp-size 1, where later releases accept it"
        if n <= 1
        else f" (with --dp-size {n}, attention DP in this release)"
    )
    yield Finding(
        code="minicpm-dp-attention",
        severity=Severity.ERROR,
        message=MSG_DP,
        flags=("enable_dp_attention", "dp_size") if n > 1 else ("enable_dp_attention",),
        fixes=tuple(fixes),
        ref=f"{SRC}:18",
        detail=f"sglang {inp.release}'s MiniCPM provider rejects --enable-dp-attention itself{alone}.",
    )


# --- rules 2 and 3: hybrid (sparse or lightning) layers ---------------------------


@rule(
    "minicpm-sala-hierarchical-cache",
    summary="MiniCPM SALA's sparse/lightning layers reject the hierarchical cache",
    mirrors="resolution",
    ref=f"{SRC}:26",
    architectures=ARCHS,
    since=OLDEST,
)
def hierarchical_cache(inp: CheckInput) -> Iterator[Finding]:
    if _has_hybrid(inp) and inp.value("enable_hierarchical_cache"):
        yield Finding(
            code="minicpm-sala-hierarchical-cache",
            severity=Severity.ERROR,
            message=MSG_HICACHE,
            flags=("enable_hierarchical_cache",),
            fixes=(
                Fix(label="Turn off the hierarchical cache", unset=("enable_hierarchical_cache",)),
            ),
            ref=f"{SRC}:26",
        )


@rule(
    "minicpm-sala-radix-cache",
    summary="sglang turns the radix cache off for MiniCPM SALA's hybrid layers",
    mirrors="resolution",
    ref=f"{SRC}:27",
    architectures=ARCHS,
    since=OLDEST,
)
def radix_cache(inp: CheckInput) -> Iterator[Finding]:
    if _has_hybrid(inp) and inp.value("disable_radix_cache") is not True:
        kinds = [
            name
            for name, present in (
                ("sparse attention", inp.model and inp.model.has_minicpm_sparse_attention),
                ("lightning attention", inp.model and inp.model.has_lightning_layers),
            )
            if present
        ]
        yield override_finding(
            "minicpm-sala-radix-cache",
            inp,
            "disable_radix_cache",
            True,
            f"the model has {' and '.join(kinds)} layers, whose KV state the radix cache cannot share",
            ref=f"{SRC}:27",
        )


# --- rule 4: SGLANG_MINICPM_FORCE_DENSE ------------------------------------------


@rule(
    "minicpm-force-dense-backend",
    summary="SGLANG_MINICPM_FORCE_DENSE maps MiniCPM sparse backends to dense ones",
    mirrors="resolution",
    ref=f"{SRC}:28",
    architectures=ARCHS,
    since=OLDEST,
)
def force_dense(inp: CheckInput) -> Iterator[Finding]:
    if not _force_dense(inp):
        return
    dense = {
        "minicpm_flashattn": "fa4" if inp.gpu.is_blackwell else "fa3",
        "minicpm_flashinfer": "flashinfer",
    }
    gpu_word = "a Blackwell GPU" if inp.gpu.is_blackwell else "a pre-Blackwell GPU"
    for field in BACKEND_FIELDS:
        asked = inp.value(field)
        target = dense.get(asked) if isinstance(asked, str) else None
        if target is None:
            continue
        why = f"{FORCE_DENSE} is on, so the sparse backend {asked} becomes its dense twin"
        if asked == "minicpm_flashattn":
            why += f" on {gpu_word}"
        yield override_finding(
            "minicpm-force-dense-backend", inp, field, target, why, ref=f"{SRC}:28"
        )


# --- rules 5 and 6: sparse attention without FORCE_DENSE -------------------------


def _uses_sparse_backend(inp: CheckInput) -> bool:
    return attention_backend_not_set(inp) or any(
        inp.value(f) in SPARSE_BACKENDS for f in BACKEND_FIELDS
    )


@rule(
    "minicpm-sparse-pd-disaggregation",
    summary="MiniCPM sparse attention cannot run with PD disaggregation",
    mirrors="resolution",
    ref=f"{SRC}:54",
    architectures=ARCHS,
    since=OLDEST,
)
def sparse_pd(inp: CheckInput) -> Iterator[Finding]:
    if _force_dense(inp) or not _has_sparse(inp) or not _uses_sparse_backend(inp):
        return
    mode = inp.value("disaggregation_mode")
    if mode == "null" or mode is None:
        return
    dense = _dense_backend(inp)
    sparse_fields = tuple(f for f in BACKEND_FIELDS if inp.value(f) in SPARSE_BACKENDS)
    yield Finding(
        code="minicpm-sparse-pd-disaggregation",
        severity=Severity.ERROR,
        message=MSG_PD,
        flags=("disaggregation_mode", *sparse_fields),
        fixes=(
            Fix(
                label=f"Use the dense attention backend {dense} (keeps PD disaggregation)",
                set={"attention_backend": dense},
                unset=tuple(f for f in sparse_fields if f != "attention_backend"),
            ),
            Fix(label="Turn off PD disaggregation", unset=("disaggregation_mode",)),
        ),
        ref=f"{SRC}:54",
        detail=f"--disaggregation-mode {mode} with the sparse backend in use"
        + (
            " (no attention backend given, so sglang would pick a sparse one)."
            if attention_backend_not_set(inp)
            else "."
        ),
    )


@rule(
    "minicpm-sparse-backend",
    summary="sglang picks a MiniCPM sparse attention backend when none is given",
    mirrors="resolution",
    ref=f"{SRC}:57",
    architectures=ARCHS,
    since=OLDEST,
)
def sparse_backend(inp: CheckInput) -> Iterator[Finding]:
    if _force_dense(inp) or not _has_sparse(inp) or not attention_backend_not_set(inp):
        return
    if inp.gpu.is_blackwell:
        value, why = "minicpm_flashinfer", "the model has sparse attention and the GPU is Blackwell"
    else:
        value, why = (
            "minicpm_flashattn",
            "the model has sparse attention and the GPU is not Blackwell",
        )
    yield override_finding(
        "minicpm-sparse-backend", inp, "attention_backend", value, why, ref=f"{SRC}:57"
    )


DP_BEFORE = (
    "sglang serve --model-path openbmb/MiniCPM4-8B --tp-size 4 --enable-dp-attention --dp-size 4"
)
DP_AFTER = "sglang serve --model-path openbmb/MiniCPM4-8B --tp-size 4"

card(
    "minicpm-dp-attention",
    "MiniCPM does not support DP attention",
    what=(
        "sglang's MiniCPM provider rejects attention data parallelism (attention DP) for every "
        "MiniCPM and MiniCPM SALA model. From sglang 0.5.22 attention DP is on when the "
        "attention-DP size is above 1 — including when sglang translates the older spelling "
        "--enable-dp-attention --dp-size N into --attn-dp-size N — or when "
        "--elastic-ep-join-mode scale joins an attention-DP deployment. In 0.5.19–0.5.21 the "
        "provider rejects --enable-dp-attention itself, even with --dp-size 1."
    ),
    when=(
        "Usually a launch line copied from a DeepSeek or Qwen MoE recipe, where "
        "--enable-dp-attention --dp-size N raises throughput. MiniCPM's attention kernels "
        "(and SALA's sparse/lightning layers) have no DP-attention path, so sglang stops "
        "while resolving arguments, before any weights load."
    ),
    solutions=(
        "Remove --enable-dp-attention and --attn-dp-size; keep --tp-size for the GPUs you have.",
        "For more throughput on several GPUs, run data-parallel replicas: --dp-size N without "
        "--enable-dp-attention (needs N × tp-size GPUs).",
        "Remove --elastic-ep-join-mode scale: a MiniCPM server cannot join an attention-DP deployment.",
    ),
    before=DP_BEFORE,
    after=DP_AFTER,
    related=("deprecated-dp-attention", "parallel-gpus", "minicpm-sala-hierarchical-cache"),
    patterns=(r"MiniCPM does not support DP attention",),
    ref=f"sglang/{SRC}:18",
)

card(
    "minicpm-sala-hierarchical-cache",
    "MiniCPM SALA does not support hierarchical cache",
    what=(
        "MiniCPM SALA mixes sparse-attention and/or lightning (linear) attention layers. Their "
        "state cannot be paged out to host memory, so sglang rejects --enable-hierarchical-cache "
        "(HiCache) for any config with sparse or lightning layers."
    ),
    when=(
        "When a long-context launch line that enables HiCache (--enable-hierarchical-cache or "
        "--enable-hicache) is reused for a MiniCPM SALA checkpoint."
    ),
    solutions=(
        "Remove --enable-hierarchical-cache (and any --hicache-* settings).",
        "Give the KV cache more GPU memory instead: raise --mem-fraction-static a little.",
    ),
    before="sglang serve --model-path openbmb/MiniCPM-SALA --enable-hierarchical-cache",
    after="sglang serve --model-path openbmb/MiniCPM-SALA",
    related=("minicpm-sala-radix-cache", "minicpm-dp-attention"),
    patterns=(r"MiniCPM SALA does not support hierarchical cache",),
    ref=f"sglang/{SRC}:26",
)

card(
    "minicpm-sala-radix-cache",
    "sglang turns off the radix cache for MiniCPM SALA",
    what=(
        "For a config with sparse or lightning layers sglang sets disable_radix_cache=True, "
        "silently: prefix caching is off, so requests that share a prompt prefix are not reused."
    ),
    when="Always, for MiniCPM SALA checkpoints with sparse or lightning layers.",
    solutions=(
        "Nothing to fix: it is informational. Expect no prefix-cache hits (cache hit rate 0).",
        "Pass --disable-radix-cache yourself to make the launch line say what runs.",
    ),
    before="sglang serve --model-path openbmb/MiniCPM-SALA",
    after="sglang serve --model-path openbmb/MiniCPM-SALA --disable-radix-cache",
    related=("minicpm-sala-hierarchical-cache",),
    ref=f"sglang/{SRC}:27",
)

card(
    "minicpm-force-dense-backend",
    "SGLANG_MINICPM_FORCE_DENSE swaps sparse backends for dense ones",
    what=(
        "With SGLANG_MINICPM_FORCE_DENSE=1 (true/1/yes/y), each of --attention-backend, "
        "--prefill-attention-backend and --decode-attention-backend that names a MiniCPM sparse "
        "backend is replaced: minicpm_flashattn becomes fa4 on Blackwell (compute capability "
        "10/11/12 with CUDA ≥ 12.8) and fa3 elsewhere; minicpm_flashinfer becomes flashinfer. "
        "Other values and unset fields stay."
    ),
    when=(
        "When you debug accuracy or speed against dense attention, or need PD disaggregation "
        "with a sparse MiniCPM model."
    ),
    solutions=(
        "Nothing to fix. To keep sparse attention, unset SGLANG_MINICPM_FORCE_DENSE.",
        "Name the dense backend yourself (--attention-backend fa3) so the launch line says what runs.",
    ),
    before="SGLANG_MINICPM_FORCE_DENSE=1 sglang serve --model-path openbmb/MiniCPM-SALA --attention-backend minicpm_flashattn",
    after="sglang serve --model-path openbmb/MiniCPM-SALA --attention-backend fa3",
    related=("minicpm-sparse-backend", "minicpm-sparse-pd-disaggregation"),
    ref=f"sglang/{SRC}:28",
)

card(
    "minicpm-sparse-pd-disaggregation",
    "MiniCPM sparse attention does not support PD disaggregation",
    what=(
        "The MiniCPM sparse-attention backends (minicpm_flashattn, minicpm_flashinfer) cannot "
        "transfer their KV state between prefill and decode servers, so sglang rejects "
        "--disaggregation-mode prefill/decode while the sparse backend is in use — including when "
        "no backend is given and sglang would pick the sparse one."
    ),
    when="When a PD-disaggregated deployment recipe is applied to a MiniCPM SALA model with sparse layers.",
    solutions=(
        "Choose a dense attention backend explicitly (--attention-backend fa3 on Hopper, "
        "flashinfer elsewhere) and clear any minicpm_* prefill/decode backend.",
        "Or set SGLANG_MINICPM_FORCE_DENSE=1, which maps the sparse backends to dense ones.",
        "Or run without --disaggregation-mode.",
    ),
    before="sglang serve --model-path openbmb/MiniCPM-SALA --disaggregation-mode prefill",
    after="sglang serve --model-path openbmb/MiniCPM-SALA --disaggregation-mode prefill --attention-backend fa3",
    related=("minicpm-force-dense-backend", "minicpm-sparse-backend"),
    patterns=(r"MiniCPM sparse attention does not support PD disaggregation",),
    ref=f"sglang/{SRC}:54",
)

card(
    "minicpm-sparse-backend",
    "sglang picks a MiniCPM sparse attention backend",
    what=(
        "For a config with sparse attention, when none of the three attention-backend flags is "
        "given and SGLANG_MINICPM_FORCE_DENSE is off, sglang sets attention_backend to "
        "minicpm_flashinfer on Blackwell GPUs and minicpm_flashattn on everything else."
    ),
    when="Every MiniCPM SALA launch with sparse layers that leaves the backend to sglang.",
    solutions=(
        "Nothing to fix: this is sglang's default. Name a backend yourself to pin it "
        "(the choice changes when you move between Hopper and Blackwell).",
    ),
    before="sglang serve --model-path openbmb/MiniCPM-SALA",
    after="sglang serve --model-path openbmb/MiniCPM-SALA --attention-backend minicpm_flashattn",
    related=("minicpm-force-dense-backend", "minicpm-sparse-pd-disaggregation"),
    ref=f"sglang/{SRC}:57",
)
