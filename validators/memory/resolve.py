"""The memory knobs of one launch, resolved as sglang 0.5.23 resolves them.

From sglang's own resolved configuration when the oracle gave one (`resolved`),
else the built-in mirror of `handle_gpu_memory_settings`
(srt/arg_groups/memory_hook.py:47-354), `parse_cuda_graph_config` and
`apply_cuda_graph_compatibility` (srt/arg_groups/cuda_graph_hook.py:32-190),
`handle_data_parallelism` (parallel_hook.py:313-336), the default attention
backend (model_override_base.py:277-351) and the page-size post-processes
(overrides.py:1174-1363). Each knob records where it came from.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from sglaunch.validators.facts import CheckInput, GpuFacts
from sglaunch.validators.memory.knobs import (
    GraphSettings,
    Reserve,
    ReserveInputs,
    Tier,
    default_reserve,
    gpu_tier,
    prefill_graph_batch_sizes,
    prefill_graph_max_bs,
    vlm_factor,
)
from sglaunch.validators.memory.shapes import MLA, ModelShapes
from sglaunch.validators.memory.shapes import as_int as _int
from sglaunch.validators.release_spans import DECODE_BS_CAPPED, memory_since
from sglaunch.validators.resolving import attn_dp_size, dp_size, pp_size, tp_size

MIB = 1 << 20
# moe_a2a backends breakable prefill graphs accept (cuda_graph_hook.py:219-225)
_BCG_A2A = ("none", "deepep", "megamoe", "flashinfer")
# multimodal archs that keep the breakable prefill graph (configs/model_config.py:2501-2516)
_MM_BCG_ARCHS = frozenset(
    {
        "MiniMaxM3SparseForConditionalGeneration",
        "Cohere2VisionForConditionalGeneration",
        "Glm5NextForConditionalGeneration",
        "InternS2MobiusForConditionalGeneration",
        "PaddleOCRVLForConditionalGeneration",
        "Qwen3_5ForConditionalGeneration",
        "Qwen3_5MoeForConditionalGeneration",
        "Qwen4ExpForConditionalGeneration",
        "MuseGlimmerForConditionalGeneration",
        "MuseSparkForConditionalGeneration",
        "KimiK3ForConditionalGeneration",
        "KimiK25ForConditionalGeneration",
        "MiniMaxM3SparseForCausalLM",
    }
)
_QWEN3_5_HYBRID_ARCHS = frozenset(
    {
        "Qwen3NextForCausalLM",
        "Qwen3_5MoeForConditionalGeneration",
        "InternS2PreviewForConditionalGeneration",
        "InternS2MobiusForConditionalGeneration",
        "Qwen3_5ForConditionalGeneration",
    }
)
_MINICPMV_ARCHS = frozenset(
    {"MiniCPMV4_6ForConditionalGeneration", "MiniCPMV4_7ForConditionalGeneration"}
)
_MINICPM_SPARSE_BACKENDS = ("minicpm_flashattn", "minicpm_flashinfer")
# _MAMBA_EXTRA_BUFFER_ARCHS (arg_groups/overrides.py:403-435), the ones with mirrored state shapes
_EXTRA_BUFFER_ARCHS = frozenset({"Qwen3NextForCausalLM"})


@dataclass(frozen=True)
class Knobs:
    tp: int
    pp: int
    dp: int
    attn_dp: int
    attn_dp_enabled: bool
    gpu_mem_mib: float | None
    tier: Tier
    chunked_prefill_size: int
    decode_max_bs: int
    graphs: GraphSettings
    mem_fraction_static: float
    mfs_source: str  # "flag" | "default"
    reserve: Reserve
    page_size: int
    kv_cache_dtype: str
    context_len: int
    max_total_tokens: int | None
    max_running_requests: int | None
    disable_radix_cache: bool
    swa_full_tokens_ratio: float
    mamba_full_memory_ratio: float
    max_mamba_cache_size: int | None
    mamba_ssm_dtype: str | None
    mamba_extra_buffer: bool
    mamba_overlap: bool
    mamba_lazy: bool
    attention_backends: tuple[str, ...]
    multimodal: bool
    mm_reservation_gib: float
    speculative: bool
    sources: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    release: str | None = None  # the sglang release whose defaults these are

    @property
    def attn_tp(self) -> int:
        return max(self.tp // max(self.attn_dp, 1), 1)

    @property
    def world_size(self) -> int:
        return self.tp * self.pp


def _float(value: Any, default: float | None = None) -> float | None:
    if isinstance(value, bool) or value is None:
        return default
    if isinstance(value, int | float):
        return float(value)
    return default


MAX_PARALLEL = 4096


def _size(read: Callable[[CheckInput], int], inp: CheckInput) -> int:
    """A parallel size through sglang's resolving view; 1 for what no int() takes (inf, 1e400)."""
    try:
        return read(inp)
    except (OverflowError, ValueError, TypeError):
        return 1


def _clamp(value: int) -> int:
    return min(max(value, 1), MAX_PARALLEL)


def gpu_memory_mib(gpu: GpuFacts) -> float | None:
    """get_device_memory_capacity: nvidia-smi's memory.total, MIN over every GPU (utils/common.py:802-837)."""
    totals = [d.memory_total for d in gpu.devices if d.memory_total > 0]
    return min(totals) / MIB if totals else None


def _is_hopper(gpu: GpuFacts) -> bool:
    return gpu.is_sm90


def _is_sm100(gpu: GpuFacts) -> bool:
    return gpu.is_sm100


def default_attention_backend(gpu: GpuFacts, shapes: ModelShapes | None, sinks: bool) -> str:
    """get_default_attn_backend (arg_groups/model_override_base.py:277-351), CUDA, no speculation."""
    mla = shapes is not None and shapes.family == MLA
    if not mla:
        if _is_hopper(gpu):
            return "fa3"
        if _is_sm100(gpu):
            return "fa4" if shapes is not None and shapes.asymmetric_kv else "trtllm_mha"
        return "triton" if sinks else "flashinfer"
    if _is_hopper(gpu):
        return "fa3"
    if _is_sm100(gpu):
        return "flashinfer"
    return "triton"


def _backends(inp: CheckInput, shapes: ModelShapes | None) -> tuple[str, ...]:
    flags = [
        inp.value(k)
        for k in ("attention_backend", "prefill_attention_backend", "decode_attention_backend")
    ]
    chosen = [str(b) for b in flags if b]
    if chosen:
        return tuple(dict.fromkeys(chosen))
    model = inp.model
    if (
        model is not None
        and model.architecture in _MINICPMV_ARCHS
        and model.sglang_native is not False  # registered with the class (4.7: from 0.5.23)
        and _is_sm100(inp.gpu)
    ):
        return ("triton",)  # arg_groups/model_overrides/minicpmv.py:12-17
    if model is not None and model.has_minicpm_sparse_attention:
        # arg_groups/model_overrides/minicpm.py:55-60
        return ("minicpm_flashinfer" if inp.gpu.is_blackwell else "minicpm_flashattn",)
    sinks = shapes.has_attention_sinks if shapes is not None else False
    return (default_attention_backend(inp.gpu, shapes, sinks),)


def _qwen3_5_override(inp: CheckInput) -> bool:
    model = inp.model
    return (
        model is not None
        and model.architecture in _QWEN3_5_HYBRID_ARCHS
        and _is_sm100(inp.gpu)
        and not any(inp.value(k) for k in ("attention_backend",))
    )


def page_size_for(flag: int | None, backends: tuple[str, ...], mla: bool, gpu: GpuFacts) -> int:
    """The page-size post-processes (overrides.py:1174-1199, 1275-1297, 1340-1363)."""
    page = flag
    if "trtllm_mha" in backends and page not in (16, 32, 64, 128):
        page = 64
    if "fa4" in backends and not mla and _is_sm100(gpu):
        page = 128
    return page if page is not None else 1


def _graphs(
    inp: CheckInput, tier_bs: int, cps: int, shapes: ModelShapes | None, pp: int
) -> GraphSettings:
    """Decode and prefill CUDA-graph settings (cuda_graph_hook.py:32-190, memory_hook.py:182-268)."""
    v = inp.value
    disagg = str(v("disaggregation_mode") or "null")
    decode_backend = v("cuda_graph_backend_decode")
    decode_on = not (v("disable_cuda_graph") or v("disable_decode_cuda_graph"))
    if decode_backend is not None:
        decode_on = decode_backend != "disabled"
    if disagg == "prefill" and decode_backend is None:
        decode_on = False
    bs_list = v("cuda_graph_bs_decode")
    max_bs = _int(v("cuda_graph_max_bs_decode"))
    if isinstance(bs_list, list | tuple) and bs_list and all(isinstance(b, int) for b in bs_list):
        max_bs = max(bs_list)
    elif max_bs is None:
        max_bs = tier_bs
        mrr = _int(v("max_running_requests"))
        if mrr is not None and max_bs > mrr and memory_since(inp.sglang_version, DECODE_BS_CAPPED):
            max_bs = mrr
    prefill_backend = v("cuda_graph_backend_prefill")
    mla = shapes is not None and shapes.family == MLA
    locked = prefill_backend is not None or bool(
        v("disable_prefill_cuda_graph") or v("disable_cuda_graph")
    )
    prefill_on = prefill_backend != "disabled" if prefill_backend is not None else True
    if v("disable_cuda_graph") or v("disable_prefill_cuda_graph"):
        prefill_on = prefill_backend not in (None, "disabled")
    breakable = (prefill_backend or "breakable") == "breakable"
    if not locked and prefill_on and breakable:
        model = inp.model
        incompatible = (
            pp > 1
            or (_int(v("dcp_size"), 1) or 1) > 1
            or bool(v("enable_two_batch_overlap"))
            or str(v("moe_a2a_backend") or "none") not in _BCG_A2A
            or (
                model is not None
                and model.is_multimodal
                and model.architecture not in _MM_BCG_ARCHS
            )
        )
        if incompatible:
            prefill_on = False
    if disagg == "decode" and prefill_backend is None:
        prefill_on = False
    pbs = v("cuda_graph_bs_prefill")
    if isinstance(pbs, list | tuple) and pbs:
        count = len(pbs)
    else:
        pmax = _int(v("cuda_graph_max_bs_prefill"))
        if pmax is None:
            pmax = prefill_graph_max_bs(
                cps,
                mla=mla,
                max_total_tokens=_int(v("max_total_tokens")),
                model_path=str(v("model_path") or ""),
                release=inp.sglang_version,
            )
        count = len(prefill_graph_batch_sizes(pmax))
    return GraphSettings(
        decode_enabled=decode_on,
        decode_max_bs=int(max_bs),
        prefill_enabled=prefill_on,
        prefill_bs_count=count,
        prefill_breakable=breakable,
    )


def _graphs_from_resolved(resolved: Mapping[str, Any], fallback: GraphSettings) -> GraphSettings:
    cfg = resolved.get("cuda_graph_config")
    if not isinstance(cfg, Mapping):
        return fallback
    raw_dec, raw_pre = cfg.get("decode"), cfg.get("prefill")
    dec: Mapping[str, Any] = raw_dec if isinstance(raw_dec, Mapping) else {}
    pre: Mapping[str, Any] = raw_pre if isinstance(raw_pre, Mapping) else {}
    bs = pre.get("bs")
    return GraphSettings(
        decode_enabled=dec.get("backend", "full") != "disabled",
        decode_max_bs=_int(dec.get("max_bs"), fallback.decode_max_bs) or 0,
        prefill_enabled=pre.get("backend", "disabled") != "disabled",
        prefill_bs_count=len(bs) if isinstance(bs, list) else fallback.prefill_bs_count,
        prefill_breakable=pre.get("backend") == "breakable",
    )


def resolve_knobs(inp: CheckInput, resolved: Mapping[str, Any] | None = None) -> Knobs:
    """Every knob the plan needs; `resolved` (sglang's resolved_dict) wins where it has the field."""
    model = inp.model
    shapes = model.shapes if model is not None else None
    v = inp.value
    # clamped: a typed 10**12 must not make the plan loop (the parallel rules report it)
    tp, pp = _clamp(_size(tp_size, inp)), _clamp(_size(pp_size, inp))
    adp, dp = _clamp(_size(attn_dp_size, inp)), _clamp(_size(dp_size, inp))
    dp_on = (
        adp > 1 or inp.value("ep_join_mode") == "scale"
    )  # attn_dp_enabled_of, runtime_context.py:191
    gpu_mem = gpu_memory_mib(inp.gpu)
    tier = gpu_tier(gpu_mem, tp, inp.sglang_version)
    sources: dict[str, str] = {"tier": tier.label}
    cps_flag = _int(v("chunked_prefill_size"))
    cps = cps_flag if cps_flag is not None else tier.chunked_prefill_size
    sources["chunked_prefill_size"] = (
        "flag" if cps_flag is not None else f"default for {tier.label}"
    )
    graphs = _graphs(inp, tier.decode_max_bs, cps, shapes, pp)
    sources["cuda_graph_max_bs"] = (
        "flag"
        if inp.is_set("cuda_graph_max_bs_decode") or inp.is_set("cuda_graph_bs_decode")
        else f"default for {tier.label}"
    )
    mla = shapes is not None and shapes.family == MLA
    multimodal = bool(
        model is not None
        and model.is_multimodal
        and not v("language_only")
        and not v("language_model_only")
    )
    reserve = default_reserve(
        ReserveInputs(
            gpu_mem_mib=gpu_mem,
            tp_size=tp,
            pp_size=pp,
            chunked_prefill_size=cps,
            max_prefill_tokens=_int(v("max_prefill_tokens"), 16384) or 16384,
            graphs=graphs,
            attn_dp_enabled=dp_on,
            attn_dp_size=adp,
            mla=mla,
            disaggregation_mode=str(v("disaggregation_mode") or "null"),
            max_running_requests=_int(v("max_running_requests")),
            speculative_num_draft_tokens=_int(v("speculative_num_draft_tokens")),
            deepep=v("moe_a2a_backend") == "deepep",
            release=inp.sglang_version,
        )
    )
    mfs = reserve.mem_fraction_static
    is_vlm = multimodal and str(v("disaggregation_mode") or "null") != "decode"
    if is_vlm and shapes is not None and shapes.has_vision_config and gpu_mem is not None:
        factor = vlm_factor(shapes.vision_layers, shapes.vision_hidden)
        reserve = Reserve(
            reserve.parts, reserve.total_mib, reserve.floor_applied, mfs * factor, factor
        )
        mfs = reserve.mem_fraction_static
    mfs_flag = _float(v("mem_fraction_static"))
    mfs_source = "flag" if mfs_flag is not None else "default"
    if mfs_flag is not None:
        mfs = mfs_flag
    backends = _backends(inp, shapes)
    page = page_size_for(_int(v("page_size")), backends, mla, inp.gpu)
    if _qwen3_5_override(inp):
        # _qwen3_5_hybrid_overrides (arg_groups/model_overrides/qwen3_5.py:17-47): on SM100 the
        # radix cache (strategy not yet resolved) keeps triton and page 1
        trtllm = bool(v("disable_radix_cache")) or v("speculative_algorithm") is not None
        backends = ("trtllm_mha",) if trtllm else ("triton",)
        page = 64 if trtllm else 1
    ctx = _int(v("context_length")) or (model.context_length if model is not None else None) or 2048
    if dp_on:
        cps = cps // adp  # handle_data_parallelism, parallel_hook.py:326-331
    mm_gib = 0.0
    if multimodal:
        mm_gib = _float(inp.env.get("SGLANG_VLM_CACHE_SIZE_MB"), 100.0) or 0.0
        if v("mm_feature_transport") in ("cuda_ipc", "cuda_vmm"):
            mm_gib += _float(inp.env.get("SGLANG_MM_FEATURE_CACHE_MB"), 1024.0) or 0.0
        mm_gib /= 1024
    strategy = str(v("mamba_radix_cache_strategy") or "auto")
    no_radix = bool(v("disable_radix_cache")) or _forces_no_radix(inp)
    overlap = not v("disable_overlap_schedule")
    # _mamba_radix_cache_resolution (arg_groups/overrides.py:453-489), triton linear backend
    auto_extra = model is not None and model.architecture in _EXTRA_BUFFER_ARCHS
    if strategy == "auto" and auto_extra and not no_radix and (overlap or page > 1):
        strategy = "extra_buffer"
    knobs = Knobs(
        tp=tp,
        pp=pp,
        dp=dp,
        attn_dp=adp,
        attn_dp_enabled=dp_on,
        gpu_mem_mib=gpu_mem,
        tier=tier,
        chunked_prefill_size=cps,
        decode_max_bs=graphs.decode_max_bs,
        graphs=graphs,
        mem_fraction_static=mfs,
        mfs_source=mfs_source,
        reserve=reserve,
        page_size=page,
        kv_cache_dtype=str(v("kv_cache_dtype") or "auto"),
        context_len=ctx,
        max_total_tokens=_int(v("max_total_tokens")),
        max_running_requests=_int(v("max_running_requests")),
        disable_radix_cache=no_radix,
        swa_full_tokens_ratio=_float(v("swa_full_tokens_ratio"), 0.8) or 0.8,
        mamba_full_memory_ratio=_float(v("mamba_full_memory_ratio"), 0.9) or 0.9,
        max_mamba_cache_size=_int(v("max_mamba_cache_size")),
        mamba_ssm_dtype=v("mamba_ssm_dtype"),
        mamba_extra_buffer=strategy.startswith("extra_buffer"),
        # _pipeline_parallel_overlap_disable (arg_groups/overrides.py:1623-1627) runs after
        # the strategy is chosen: it changes the tracking slots, not the strategy
        mamba_overlap=overlap and pp == 1,
        mamba_lazy=strategy == "extra_buffer_lazy",
        attention_backends=backends,
        multimodal=multimodal,
        mm_reservation_gib=mm_gib,
        speculative=v("speculative_algorithm") is not None,
        sources=sources,
        release=inp.sglang_version,
    )
    if resolved:
        knobs = _apply_resolved(knobs, resolved, inp)
    return knobs


def _forces_no_radix(inp: CheckInput) -> bool:
    """MiniCPM's override sets disable_radix_cache for SALA (arg_groups/model_overrides/minicpm.py:19-27)."""
    m = inp.model
    return (
        m is not None
        and m.is_minicpm_sala
        and (m.has_minicpm_sparse_attention or m.has_lightning_layers)
    )


def _apply_resolved(k: Knobs, r: Mapping[str, Any], inp: CheckInput) -> Knobs:
    """sglang's own resolved values over the mirror's (the oracle ran handle_gpu_memory_settings)."""
    graphs = _graphs_from_resolved(r, k.graphs)
    backends = tuple(
        str(b)
        for b in (
            r.get("prefill_attention_backend"),
            r.get("decode_attention_backend"),
            r.get("attention_backend"),
        )
        if b
    )
    mfs = _float(r.get("mem_fraction_static"), k.mem_fraction_static)
    sources = dict(k.sources)
    sources.update(
        {
            "chunked_prefill_size": "sglang (resolved)",
            "cuda_graph_max_bs": "sglang (resolved)",
            "mem_fraction_static": "sglang (resolved)",
        }
    )
    ctx = _int(r.get("context_length")) or k.context_len
    return replace(
        k,
        tp=_int(r.get("tp_size"), k.tp) or k.tp,
        pp=_int(r.get("pp_size"), k.pp) or k.pp,
        attn_dp=_int(r.get("attn_dp_size"), k.attn_dp) or k.attn_dp,
        chunked_prefill_size=_int(r.get("chunked_prefill_size"), k.chunked_prefill_size)
        or k.chunked_prefill_size,
        decode_max_bs=graphs.decode_max_bs,
        graphs=graphs,
        mem_fraction_static=mfs if mfs is not None else k.mem_fraction_static,
        page_size=_int(r.get("page_size"), k.page_size) or k.page_size,
        kv_cache_dtype=str(r.get("kv_cache_dtype") or k.kv_cache_dtype),
        context_len=ctx,
        max_total_tokens=_int(r.get("max_total_tokens"), k.max_total_tokens),
        max_running_requests=_int(r.get("max_running_requests"), k.max_running_requests),
        disable_radix_cache=bool(r.get("disable_radix_cache", k.disable_radix_cache)),
        swa_full_tokens_ratio=_float(r.get("swa_full_tokens_ratio"), k.swa_full_tokens_ratio)
        or k.swa_full_tokens_ratio,
        mamba_full_memory_ratio=_float(r.get("mamba_full_memory_ratio"), k.mamba_full_memory_ratio)
        or k.mamba_full_memory_ratio,
        max_mamba_cache_size=_int(r.get("max_mamba_cache_size"), k.max_mamba_cache_size),
        mamba_ssm_dtype=r.get("mamba_ssm_dtype", k.mamba_ssm_dtype),
        mamba_extra_buffer=str(r.get("mamba_radix_cache_strategy") or "").startswith(
            "extra_buffer"
        ),
        mamba_overlap=not r.get("disable_overlap_schedule", not k.mamba_overlap),
        mamba_lazy=r.get("mamba_radix_cache_strategy") == "extra_buffer_lazy",
        attention_backends=backends or k.attention_backends,
        sources=sources,
    )


def uses_minicpm_sparse_backend(k: Knobs) -> bool:
    return any(b in _MINICPM_SPARSE_BACKENDS for b in k.attention_backends)
