"""The memory plan's model shapes from a config dict, with sglang 0.5.23's semantics.

Pure: a config dict in, `ModelShapes` out. Each family reads what sglang's
ModelConfig and config classes read (srt/configs/model_config.py,
srt/configs/minicpm.py, srt/configs/qwen3_next.py); a field the family needs
and the config lacks becomes one `problems` line, never an exception.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sglaunch.validators.memory.shapes import (
    LINEAR,
    MHA,
    MLA,
    SWA,
    LinearState,
    ModelShapes,
)
from sglaunch.validators.memory.shapes import as_int as _int

# model_config.py:1370-1395: the architectures sglang runs with MLA
MLA_ARCHS = frozenset(
    {
        "DeepseekV2ForCausalLM",
        "DeepseekV3ForCausalLM",
        "DeepseekV3ForCausalLMNextN",
        "Glm4MoeLiteForCausalLM",
        "LongcatFlashForCausalLM",
        "DotsVLMForCausalLM",
        "MistralLarge3ForCausalLM",
        "KimiK25ForConditionalGeneration",
        "GigaChat35ForCausalLM",
        "MiniCPM3ForCausalLM",
        "DeepseekVL2ForCausalLM",
        "KimiVLForConditionalGeneration",
        "HYV4ForCausalLM",
    }
)
# DSA / DSv4 pools add an indexer sglaunch does not mirror
UNMIRRORED_MLA = frozenset(
    {"DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM", "DeepseekV4ForCausalLM"}
)
# is_hybrid_swa_model's list with layer_types-based ids (model_config.py:2651-2760)
SWA_LAYER_TYPES_ARCHS = frozenset(
    {
        "GptOssForCausalLM",
        "GraniteSWAForCausalLM",
        "GraniteMoeSWAForCausalLM",
        "IQuestQ1ForCausalLM",
        "Gemma4ForCausalLM",
        "Gemma4ForConditionalGeneration",
        "LagunaForCausalLM",
        "MellumForCausalLM",
        "Step3p5ForCausalLM",
    }
)
SWA_SINK_ARCHS = frozenset(
    {
        "GptOssForCausalLM",
        "GraniteSWAForCausalLM",
        "GraniteMoeSWAForCausalLM",
        "IQuestQ1ForCausalLM",
    }
)
# mamba-ish configs whose state shapes sglaunch does not mirror yet (configs/hybrid_arch.py)
UNMIRRORED_LINEAR_TYPES = frozenset(
    {
        "nemotron_h",
        "falcon_h1",
        "falcon_mamba",
        "mamba",
        "mamba2",
        "lfm2",
        "lfm2_moe",
        "granitemoehybrid",
        "kimi_linear",
        "bailing_hybrid",
        "jet_nemotron",
        "zaya",
    }
)
# the vision tower sglang's config class creates when config.json has none
DEFAULT_VISION: dict[str, Mapping[str, int]] = {
    "MiniCPMV4_6ForConditionalGeneration": {"num_hidden_layers": 27, "hidden_size": 1152},
    "MiniCPMV4_7ForConditionalGeneration": {"num_hidden_layers": 27, "hidden_size": 1152},
}
# text configs built on sglang's Qwen3NextConfig (configs/qwen3_5.py:15-16, 119-120)
GDN_TEXT_TYPES = frozenset({"qwen3_next", "qwen3_5_text", "qwen3_5_moe_text"})
_KV_HEAD_KEYS = (
    "n_head_kv",
    "num_kv_heads",
    "num_key_value_heads",
    "multi_query_group_num",
    "num_attention_groups",
)
_WINDOW_KEYS = ("sliding_window_size", "sliding_window", "window_size")


def _first_int(cfg: Mapping[str, Any], keys: tuple[str, ...]) -> int | None:
    for key in keys:
        v = _int(cfg.get(key))
        if v is not None:
            return v
    return None


def model_dtype(config: Mapping[str, Any], tcfg: Mapping[str, Any], flag: str | None = None) -> str:
    """_get_and_verify_dtype (configs/model_config.py:2284-2345) for --dtype auto or a named dtype."""
    if flag and flag != "auto":
        return {"half": "float16", "float": "float32"}.get(flag, flag)
    raw = (
        tcfg.get("dtype")
        or tcfg.get("torch_dtype")
        or config.get("dtype")
        or config.get("torch_dtype")
    )
    dtype = str(raw) if isinstance(raw, str) else "float32"
    if dtype not in ("float16", "bfloat16", "float32"):
        dtype = "float32"
    if dtype == "float32":
        model_type = str(tcfg.get("model_type") or config.get("model_type") or "")
        return "bfloat16" if model_type.startswith("gemma") else "float16"
    return dtype


def total_kv_heads(tcfg: Mapping[str, Any], heads: int | None) -> int | None:
    """get_total_num_kv_heads (configs/model_config.py:1625-1690), the common keys."""
    if tcfg.get("multi_query") and not tcfg.get("new_decoder_architecture"):
        return 1
    kv = _first_int(tcfg, _KV_HEAD_KEYS)
    return kv if kv is not None else heads


def _kv_quant_algo(config: Mapping[str, Any], hf_quant: Mapping[str, Any] | None) -> str | None:
    for source in (
        hf_quant.get("quantization") if hf_quant else None,
        config.get("quantization_config"),
    ):
        if isinstance(source, Mapping):
            algo = source.get("kv_cache_quant_algo")
            if isinstance(algo, str):
                return algo
    return None


def shapes_from_config(
    config: Mapping[str, Any],
    tcfg: Mapping[str, Any],
    *,
    sala: Mapping[str, Any] | None = None,
    hf_quant: Mapping[str, Any] | None = None,
    sglang_types: frozenset[str] | None = None,
) -> ModelShapes:
    """The shapes of one model; `tcfg` is the text config, `sala` facts_from_config's SALA facts,
    `sglang_types` the model types the release registers a config class for (None: the newest)."""
    arch = str((config.get("architectures") or [""])[0])
    model_type = str(config.get("model_type") or "")
    problems: list[str] = []
    heads = _first_int(tcfg, ("num_attention_heads", "n_head", "num_heads", "n_heads"))
    hidden = _first_int(tcfg, ("hidden_size", "n_embd", "d_model"))
    layers = _first_int(tcfg, ("num_hidden_layers", "n_layer", "num_layers", "n_layers"))
    if model_type == "minicpm_sala":
        heads = 32 if heads is None else heads
        layers = 32 if layers is None else layers
        hidden = 4096 if hidden is None else hidden
    kv = total_kv_heads(tcfg, heads)
    if model_type == "minicpm_sala" and _int(tcfg.get("num_key_value_heads")) is None:
        kv = 8
    head_dim = _int(tcfg.get("head_dim"))
    if head_dim is None:
        if heads and hidden:
            head_dim = hidden // heads
        else:
            problems.append(
                "config.json has neither head_dim nor hidden_size and num_attention_heads: no KV cell size"
            )
    if layers is None:
        problems.append("config.json has no num_hidden_layers: the layers holding KV are unknown")
    v_head_dim = _int(tcfg.get("v_head_dim")) or head_dim or 0
    vision = (
        config.get("vision_config") if isinstance(config.get("vision_config"), Mapping) else None
    )
    own_config = sglang_types is None or model_type in sglang_types
    if vision is None and arch in DEFAULT_VISION and own_config:
        # sglang's own config class builds a default vision config (configs/minicpmv4_6.py:127-128);
        # a release without that class (MiniCPM-V 4.7 before 0.5.23) has no vision config
        vision = DEFAULT_VISION[arch]
    common: dict[str, Any] = {
        "num_layers": layers or 0,
        "num_kv_heads": kv or 0,
        "head_dim": head_dim or 0,
        "v_head_dim": v_head_dim,
        "dtype": model_dtype(config, tcfg),
        "kv_cache_quant_algo": _kv_quant_algo(config, hf_quant),
        "has_vision_config": vision is not None,
        "vision_layers": _int(vision.get("num_hidden_layers")) if vision is not None else None,
        "vision_hidden": _int(vision.get("hidden_size")) if vision is not None else None,
        "has_attention_sinks": arch in SWA_SINK_ARCHS or bool(tcfg.get("learnable_sink")),
    }
    if arch in UNMIRRORED_MLA:
        problems.append(
            f"{arch}'s KV pool (DSA indexer / compressed attention) is not mirrored by sglaunch"
        )
        return ModelShapes(family=MLA, problems=tuple(problems), **common)
    if arch in MLA_ARCHS:
        return _mla(tcfg, common, problems)
    if model_type == "minicpm_sala":
        return _sala(config, tcfg, sala or {}, common, problems)
    text_type = str(tcfg.get("model_type") or model_type)
    if text_type in GDN_TEXT_TYPES or arch == "Qwen3NextForCausalLM":
        return _qwen3_next(tcfg, common, problems)
    if model_type in UNMIRRORED_LINEAR_TYPES:
        problems.append(f"the state cache of {model_type} models is not mirrored by sglaunch")
        return ModelShapes(family=LINEAR, problems=tuple(problems), **common)
    if (
        arch in SWA_LAYER_TYPES_ARCHS
        or arch == "Llama4ForConditionalGeneration"
        or tcfg.get("is_hybrid_swa")
    ):
        return _swa(arch, tcfg, common, problems)
    return ModelShapes(family=MHA, problems=tuple(problems), **common)


def _mla(tcfg: Mapping[str, Any], common: dict[str, Any], problems: list[str]) -> ModelShapes:
    rank = _int(tcfg.get("kv_lora_rank"))
    rope = _int(tcfg.get("qk_rope_head_dim"))
    if rank is None or rope is None:
        problems.append(
            "an MLA config needs kv_lora_rank and qk_rope_head_dim (configs/model_config.py:1397-1400)"
        )
    return ModelShapes(
        family=MLA,
        kv_lora_rank=rank or 0,
        qk_rope_head_dim=rope or 0,
        problems=tuple(problems),
        **common,
    )


def _swa(
    arch: str, tcfg: Mapping[str, Any], common: dict[str, Any], problems: list[str]
) -> ModelShapes:
    n = common["num_layers"]
    if arch == "Llama4ForConditionalGeneration":
        swa_ids = tuple(i for i in range(n) if (i + 1) % 4 != 0)
        full_ids = tuple(i for i in range(n) if (i + 1) % 4 == 0)
    else:
        types = tcfg.get("layer_types")
        if not isinstance(types, list):
            problems.append(
                "a sliding-window hybrid needs layer_types in config.json (get_hybrid_layer_ids)"
            )
            types = []
        swa_ids = tuple(i for i, t in enumerate(types) if t == "sliding_attention" and i < n)
        full_ids = tuple(i for i, t in enumerate(types) if t == "full_attention" and i < n)
    window = _first_int(tcfg, _WINDOW_KEYS)
    if arch == "GptOssForCausalLM" and window is not None:
        window -= 1  # the model's get_attention_sliding_window_size (models/gpt_oss.py:131-132)
    return ModelShapes(
        family=SWA,
        full_layer_ids=full_ids,
        swa_layer_ids=swa_ids,
        sliding_window=window,
        swa_num_kv_heads=_int(tcfg.get("swa_num_key_value_heads")),
        swa_head_dim=_int(tcfg.get("swa_head_dim")),
        swa_v_head_dim=_int(tcfg.get("swa_v_head_dim")),
        problems=tuple(problems),
        **common,
    )


def _sala(
    config: Mapping[str, Any],
    tcfg: Mapping[str, Any],
    sala: Mapping[str, Any],
    common: dict[str, Any],
    problems: list[str],
) -> ModelShapes:
    """MiniCPMHybridConfig (configs/minicpm.py:29-194)."""
    mixers = tuple(sala.get("mixer_types") or ())
    if sala.get("config_error"):
        problems.append(str(sala["config_error"]))
    full_ids = tuple(i for i, m in enumerate(mixers) if m == "minicpm4")
    light_ids = tuple(i for i, m in enumerate(mixers) if m == "lightning-attn")
    sparse = config.get("sparse_config")
    stride = size = None
    if sala.get("has_minicpm_sparse_attention") and isinstance(sparse, Mapping):
        stride, size = _int(sparse.get("kernel_stride")), _int(sparse.get("kernel_size"))
        if not stride or stride <= 0:
            problems.append(
                "sparse_config has no positive kernel_stride (layers/attention/minicpm/backend.py:171)"
            )
            stride = None
    linear = None
    if light_ids:
        nkv = _int(tcfg.get("lightning_nkv"))
        nkv = common["num_kv_heads"] if nkv is None else nkv
        hd = _int(tcfg.get("lightning_head_dim")) or common["head_dim"]
        if not nkv or not hd:
            problems.append(
                "lightning layers need lightning_nkv and lightning_head_dim (configs/minicpm.py:152-157)"
            )
        linear = LinearState(
            kind="lightning",
            layers=light_ids,
            num_heads=nkv or 0,
            head_dim=hd or 0,
            state_size=hd or 0,
            conv_kernel=1,
        )
    return ModelShapes(
        family=LINEAR if linear is not None else MHA,
        full_layer_ids=full_ids if linear is not None else None,
        linear=linear,
        sparse_kernel_stride=stride,
        sparse_kernel_size=size,
        problems=tuple(problems),
        **common,
    )


def _qwen3_next(
    tcfg: Mapping[str, Any], common: dict[str, Any], problems: list[str]
) -> ModelShapes:
    """Qwen3NextConfig.layers_block_type / mamba2_cache_params (configs/qwen3_next.py:259-313)."""
    interval = _int(tcfg.get("full_attention_interval"))
    n = common["num_layers"]
    if interval:
        full_ids = tuple(i for i in range(n) if (i + 1) % interval == 0)
        lin_ids = tuple(i for i in range(n) if (i + 1) % interval != 0)
    else:
        # sglang's own config class reads only full_attention_interval (layer_types is
        # transformers'): without it sglang fails with AttributeError while sizing the state
        problems.append(
            "the text config has no full_attention_interval, which sglang's Qwen3NextConfig "
            "reads to place the linear-attention layers (configs/qwen3_next.py:264)"
        )
        full_ids, lin_ids = (), tuple(range(n))

    def get(key: str, default: int) -> int:
        value = _int(tcfg.get(key))
        return default if value is None else value

    nv, vd = get("linear_num_value_heads", 32), get("linear_value_head_dim", 128)
    linear = LinearState(
        kind="gdn",
        layers=lin_ids,
        num_heads=nv,
        head_dim=vd,
        state_size=get("linear_key_head_dim", 128),
        n_groups=get("linear_num_key_heads", 16),
        intermediate_size=vd * nv,
        conv_kernel=get("linear_conv_kernel_dim", 4),
        config_ssm_dtype=tcfg.get("mamba_ssm_dtype")
        if isinstance(tcfg.get("mamba_ssm_dtype"), str)
        else None,
    )
    return ModelShapes(
        family=LINEAR, full_layer_ids=full_ids, linear=linear, problems=tuple(problems), **common
    )
