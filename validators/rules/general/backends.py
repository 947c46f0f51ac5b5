"""Attention backends and KV-cache dtypes against the GPU architecture; cache flags that clash.

Resolution checks (sglang 0.5.23): trtllm_mha needs SM90/SM100/SM120
(attention_hook.py:203/225), trtllm_mla needs Blackwell (overrides.py:1211),
cutedsl_mla needs SM100 (overrides.py:1245), mxfp8 KV needs Blackwell
(kv_cache_hook.py:106), nvfp4 KV needs SM100/SM120 (kv_cache_hook.py:128),
HiCache excludes --disable-radix-cache (kv_cache_hook.py:394). fa3 outside
SM80/SM90 passes resolution and fails at launch (attention_registry.py:243).
"""

from __future__ import annotations

from collections.abc import Iterator

from sglaunch.validators.cards import card
from sglaunch.validators.facts import CheckInput
from sglaunch.validators.findings import Finding, Fix, Severity
from sglaunch.validators.rule import rule

ATT = "srt/arg_groups/attention_hook.py"
OVR = "srt/arg_groups/overrides.py"
KV = "srt/arg_groups/kv_cache_hook.py"


def _prefill_decode(inp: CheckInput) -> tuple[object, object]:
    """sglang's attention_backends_of: a phase's own flag, else --attention-backend."""
    base = inp.value("attention_backend")
    return inp.value("prefill_attention_backend") or base, inp.value(
        "decode_attention_backend"
    ) or base


# kv_cache_hook.py:25-31: the prefill backend each NVFP4 prefill dequant dtype runs on
_NVFP4_PREFILL_BACKEND = {"fp8_e4m3": "flashinfer", "nvfp4": "trtllm_mha"}
_NVFP4_PREFILL_DEQUANT_DTYPE = {b: d for d, b in _NVFP4_PREFILL_BACKEND.items()}


def _resolved_prefill_decode(inp: CheckInput) -> tuple[object, object]:
    """The two backends step 45 checks, after step 44 (kv_cache_hook.py:34,
    handle_nvfp4_prefill_kv_dequant_dtype) has run.

    With --kv-cache-dtype nvfp4, step 44 sets prefill_attention_backend to
    flashinfer (fp8_e4m3 workspace) or trtllm_mha (native nvfp4, SM100 only) and
    decode_attention_backend to trtllm_mha (kv_cache_hook.py:92), so on a GPU that
    is not SM90/SM100/SM120 sglang's first error is the trtllm_mha decode one
    (attention_hook.py:225), raised before the nvfp4 check (kv_cache_hook.py:128).
    Where step 44 itself raises, the flags are left as given.
    """
    prefill, decode = _prefill_decode(inp)
    if inp.value("kv_cache_dtype") != "nvfp4":
        return prefill, decode
    requested = inp.value("prefill_kv_cache_dequant_dtype") or "auto"
    if requested == "auto":
        explicit = inp.value("prefill_attention_backend") or inp.value("attention_backend")
        if explicit in _NVFP4_PREFILL_DEQUANT_DTYPE:
            requested = _NVFP4_PREFILL_DEQUANT_DTYPE[explicit]
        elif explicit is not None:
            return prefill, decode  # kv_cache_hook.py:53
        else:
            requested = "nvfp4" if inp.gpu.is_sm100 else "fp8_e4m3"
    target = _NVFP4_PREFILL_BACKEND.get(requested)
    if target is None or (requested == "nvfp4" and not inp.gpu.is_sm100):
        return prefill, decode  # kv_cache_hook.py:60
    if inp.value("prefill_attention_backend") not in (None, target):
        return prefill, decode  # kv_cache_hook.py:71
    if inp.value("decode_attention_backend") not in (None, "trtllm_mha"):
        return prefill, decode  # kv_cache_hook.py:80
    return target, "trtllm_mha"


def _arch(inp: CheckInput) -> str:
    d = inp.gpu.primary
    return f"{d.name} ({d.sm})" if d else "this GPU"


def _backend_flags(inp: CheckInput, value: str) -> tuple[str, ...]:
    return tuple(
        f
        for f in ("attention_backend", "prefill_attention_backend", "decode_attention_backend")
        if inp.value(f) == value
    )


def _replace_backend(inp: CheckInput, bad: str, good: str) -> Fix:
    flags = _backend_flags(inp, bad)
    return Fix(label=f"Use {good} instead of {bad}", set=dict.fromkeys(flags, good))


@rule(
    "backend-needs-gpu-arch",
    summary="an attention backend this GPU architecture cannot run",
    mirrors="resolution",
    ref=f"{ATT}:203",
)
def backend_arch(inp: CheckInput) -> Iterator[Finding]:
    if inp.gpu.primary is None:
        return
    g = inp.gpu
    prefill, decode = _resolved_prefill_decode(inp)
    trtllm_ok = g.is_sm90 or g.is_sm100 or g.is_sm120
    if prefill == "trtllm_mha" and not trtllm_ok:
        yield Finding(
            code="backend-needs-gpu-arch",
            severity=Severity.ERROR,
            message="TRTLLM MHA backend for prefill requires Hopper (SM90), Blackwell (SM100), or SM120 GPUs. "
            "Please use a different prefill backend.",
            flags=_backend_flags(inp, "trtllm_mha"),
            fixes=(_replace_backend(inp, "trtllm_mha", "flashinfer"),),
            ref=f"{ATT}:203",
            detail=f"{_arch(inp)} is none of those.",
        )
    elif prefill == "trtllm_mha" and g.is_sm120 and inp.value("kv_cache_dtype") == "fp8_e4m3":
        yield Finding(
            code="backend-needs-gpu-arch",
            severity=Severity.ERROR,
            message="TRTLLM FMHAv2 prefill on SM120 does not support fp8_e4m3 KV cache or skip-softmax.",
            flags=(*_backend_flags(inp, "trtllm_mha"), "kv_cache_dtype"),
            fixes=(
                _replace_backend(inp, "trtllm_mha", "flashinfer"),
                Fix(label="Keep the KV cache in bf16", unset=("kv_cache_dtype",)),
            ),
            ref=f"{ATT}:218",
        )
    elif decode == "trtllm_mha" and prefill != "trtllm_mha" and not trtllm_ok:
        asked = _backend_flags(inp, "trtllm_mha")
        if asked:
            flags, why = asked, ""
            fixes: tuple[Fix, ...] = (_replace_backend(inp, "trtllm_mha", "flashinfer"),)
        else:
            # nobody asked for trtllm_mha: --kv-cache-dtype nvfp4 made sglang pick it
            flags = ("kv_cache_dtype",)
            fixes = (
                Fix(label="Use fp8_e4m3 for the KV cache", set={"kv_cache_dtype": "fp8_e4m3"}),
                Fix(
                    label="Use the model's dtype for the KV cache (auto)", unset=("kv_cache_dtype",)
                ),
            )
            why = "--kv-cache-dtype nvfp4 makes sglang decode with trtllm_mha, and "
        yield Finding(
            code="backend-needs-gpu-arch",
            severity=Severity.ERROR,
            message="TRTLLM MHA backend for decode is only supported on Hopper (SM90), Blackwell (SM100) and "
            "(SM120) GPUs. Please use a different decode backend.",
            flags=flags,
            fixes=fixes,
            ref=f"{ATT}:225",
            detail=f"{why}{_arch(inp)} is none of those.",
        )
    uses = {inp.value("attention_backend"), inp.value("decode_attention_backend")}
    if "trtllm_mla" in uses and not g.is_blackwell:
        yield Finding(
            code="backend-needs-gpu-arch",
            severity=Severity.ERROR,
            message="TRTLLM MLA backend is only supported on Blackwell GPUs (SM100/SM12x). Please use a different backend.",
            flags=_backend_flags(inp, "trtllm_mla"),
            fixes=(_replace_backend(inp, "trtllm_mla", "flashmla" if g.is_sm90 else "flashinfer"),),
            ref=f"{OVR}:1211",
            detail=f"{_arch(inp)} is not Blackwell (or its CUDA is older than 12.8).",
        )
    cutedsl = {"cutedsl_mla", "tokenspeed_mla"} & (uses | {inp.value("prefill_attention_backend")})
    if cutedsl and not g.is_sm100 and inp.value("prefill_attention_backend") not in cutedsl:
        bad = sorted(cutedsl)[0]
        yield Finding(
            code="backend-needs-gpu-arch",
            severity=Severity.ERROR,
            message="CuteDSL MLA backend is only supported on Blackwell GPUs (SM100). Please use a different backend.",
            flags=_backend_flags(inp, bad),
            fixes=(_replace_backend(inp, bad, "flashinfer"),),
            ref=f"{OVR}:1245",
        )


@rule(
    "fa3-needs-sm80-sm90",
    summary="FlashAttention 3 runs on SM80 and SM90 only",
    mirrors="launch",
    ref="srt/layers/attention/attention_registry.py:243",
)
def fa3_arch(inp: CheckInput) -> Iterator[Finding]:
    cap = inp.gpu.capability
    if cap is None:
        return
    prefill, decode = _prefill_decode(inp)
    if "fa3" not in (prefill, decode):
        return
    major = cap[0]
    ok = major == 9 or (major == 8 and not (inp.model and inp.model.is_mla))
    if ok:
        return
    yield Finding(
        code="fa3-needs-sm80-sm90",
        severity=Severity.ERROR,
        message="FlashAttention v3 Backend requires SM>=80 and SM<=90. Please use `--attention-backend flashinfer`.",
        flags=_backend_flags(inp, "fa3"),
        fixes=(_replace_backend(inp, "fa3", "fa4" if inp.gpu.is_blackwell else "flashinfer"),),
        ref="srt/layers/attention/attention_registry.py:243 (at launch)",
        detail=f"sglang accepts --attention-backend fa3 while resolving, then fails building the backend on {_arch(inp)}.",
    )


@rule(
    "kv-cache-dtype-needs-gpu-arch",
    summary="a KV-cache dtype this GPU cannot run",
    mirrors="resolution",
    ref=f"{KV}:106",
)
def kv_dtype_arch(inp: CheckInput) -> Iterator[Finding]:
    dtype = inp.value("kv_cache_dtype")
    if inp.gpu.primary is None:
        return
    drop = Fix(label="Use the model's dtype for the KV cache (auto)", unset=("kv_cache_dtype",))
    fp8 = Fix(
        label="Use fp8_e4m3 (half the memory, every recent GPU)", set={"kv_cache_dtype": "fp8_e4m3"}
    )
    if dtype == "mxfp8" and not inp.gpu.is_blackwell:
        yield Finding(
            code="kv-cache-dtype-needs-gpu-arch",
            severity=Severity.ERROR,
            message="--kv-cache-dtype mxfp8 requires an SM100+ (Blackwell) GPU for the block-scaled operands "
            "used by the FA4 MXFP8 attention path.",
            flags=("kv_cache_dtype",),
            fixes=(fp8, drop),
            ref=f"{KV}:106",
        )
    elif dtype == "nvfp4" and not (inp.gpu.is_sm100 or inp.gpu.is_sm120):
        yield Finding(
            code="kv-cache-dtype-needs-gpu-arch",
            severity=Severity.ERROR,
            message="--kv-cache-dtype=nvfp4 requires Blackwell SM100 or SM120. Use "
            "--kv-cache-dtype=fp4_mx_block16 for the block-size-16 FP4 recipe.",
            flags=("kv_cache_dtype",),
            fixes=(fp8, drop),
            ref=f"{KV}:128",
        )


@rule(
    "hicache-excludes-no-radix",
    summary="the hierarchical cache needs the radix cache",
    mirrors="resolution",
    ref=f"{KV}:394",
)
def hicache_radix(inp: CheckInput) -> Iterator[Finding]:
    if inp.value("enable_hierarchical_cache") and inp.value("disable_radix_cache"):
        yield Finding(
            code="hicache-excludes-no-radix",
            severity=Severity.ERROR,
            message="The arguments enable-hierarchical-cache and disable-radix-cache are mutually exclusive "
            "and cannot be used at the same time. Please use only one of them.",
            flags=("enable_hierarchical_cache", "disable_radix_cache"),
            fixes=(
                Fix(
                    label="Keep HiCache (remove --disable-radix-cache)",
                    unset=("disable_radix_cache",),
                ),
                Fix(
                    label="Keep the radix cache off (remove --enable-hierarchical-cache)",
                    unset=("enable_hierarchical_cache",),
                ),
            ),
            ref=f"{KV}:394",
        )


card(
    "backend-needs-gpu-arch",
    "This attention backend does not run on this GPU",
    what=(
        "Some attention kernels exist only for some GPU generations: trtllm_mha needs Hopper "
        "(SM90), datacenter Blackwell (SM100) or SM120; trtllm_mla needs Blackwell (SM100/SM12x) "
        "with CUDA ≥ 12.8; cutedsl_mla needs SM100. sglang checks this while resolving arguments."
    ),
    when=(
        "A B200 launch line (where sglang picks trtllm_mha itself) copied to an A100 or L40S, or a "
        "DeepSeek Blackwell recipe run on Hopper."
    ),
    solutions=(
        "Remove the backend flag and let sglang pick one for this GPU.",
        "Or name one this GPU supports: flashinfer runs everywhere; fa3 on Hopper.",
    ),
    before="sglang serve --model-path X --attention-backend trtllm_mha      # on an A100",
    after="sglang serve --model-path X --attention-backend flashinfer",
    related=("fa3-needs-sm80-sm90", "kv-cache-dtype-needs-gpu-arch"),
    patterns=(
        r"TRTLLM MHA backend for (?:prefill|decode)",
        r"TRTLLM FMHAv2 prefill on SM120",
        r"TRTLLM MLA backend is only supported on Blackwell",
        r"CuteDSL MLA backend is only supported",
    ),
    ref=f"sglang/{ATT}:203",
)

card(
    "fa3-needs-sm80-sm90",
    "FlashAttention 3 runs on SM80 and SM90 only",
    what=(
        "The fa3 backend is built for Ampere (SM80) and Hopper (SM90); sglang lets --attention-backend "
        "fa3 through argument resolution on any GPU and fails when it creates the backend at launch."
    ),
    when="A Hopper launch line reused on Blackwell (B200, RTX 5090) or Ada (L40S, RTX 4090).",
    solutions=("Use fa4 on Blackwell, flashinfer elsewhere — or remove the flag.",),
    before="sglang serve --model-path X --attention-backend fa3      # on a B200",
    after="sglang serve --model-path X --attention-backend fa4",
    related=("backend-needs-gpu-arch",),
    patterns=(r"FlashAttention v3 Backend requires SM>=80 and SM<=90",),
    ref="sglang/srt/layers/attention/attention_registry.py:243",
    stage="launch",
)

card(
    "kv-cache-dtype-needs-gpu-arch",
    "This KV-cache dtype needs a Blackwell GPU",
    what=(
        "The block-scaled KV formats need Blackwell tensor cores: mxfp8 any Blackwell (SM100/SM12x, "
        "CUDA ≥ 12.8), nvfp4 SM100 or SM120. fp8_e4m3 and fp8_e5m2 have no such limit."
    ),
    when="A Blackwell launch line reused on Hopper or Ampere.",
    solutions=(
        "Use --kv-cache-dtype fp8_e4m3 to save KV memory on this GPU, or leave it at auto.",
    ),
    before="sglang serve --model-path X --kv-cache-dtype nvfp4      # on an H100",
    after="sglang serve --model-path X --kv-cache-dtype fp8_e4m3",
    related=("backend-needs-gpu-arch",),
    patterns=(
        r"--kv-cache-dtype mxfp8 requires an SM100\+",
        r"--kv-cache-dtype=nvfp4 requires Blackwell",
    ),
    ref=f"sglang/{KV}:106",
)

card(
    "hicache-excludes-no-radix",
    "The hierarchical cache needs the radix cache",
    what=(
        "HiCache extends the radix (prefix) cache into host memory; with the radix cache disabled "
        "there is nothing to extend, so sglang rejects the pair."
    ),
    when="Turning the radix cache off for a benchmark while keeping a HiCache launch line.",
    solutions=("Keep one of the two flags.",),
    before="sglang serve --model-path X --enable-hierarchical-cache --disable-radix-cache",
    after="sglang serve --model-path X --enable-hierarchical-cache",
    related=("minicpm-sala-hierarchical-cache",),
    patterns=(r"enable-hierarchical-cache and disable-radix-cache are mutually exclusive",),
    ref=f"sglang/{KV}:394",
)
