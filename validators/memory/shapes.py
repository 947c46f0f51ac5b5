"""What the memory plan reads from a model: attention and state shapes, and weight groups.

Plain frozen data, filled by the core (`sglaunch.facts.model`, `sglaunch.memory.weights`)
from config.json and the safetensors headers, and by tests by hand. Nothing here
imports the rest of the rule engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Attention families, as sglang sizes their KV pools
MHA = "mha"  # MHA/GQA: DefaultPoolConfigurator, pool_configurator.py:472-476
MLA = "mla"  # latent attention: pool_configurator.py:374-383
SWA = "swa"  # sliding-window hybrid: HybridSWAPoolConfigurator, pool_configurator.py:656-922
LINEAR = "linear"  # mamba / GDN / lightning state + full-attention layers (kv_cache_configurator.py:3229)
FAMILIES = (MHA, MLA, SWA, LINEAR)

# torch dtypes by the names configs and safetensors headers use, and their sizes
DTYPE_BYTES: dict[str, float] = {
    "float32": 4,
    "float": 4,
    "fp32": 4,
    "F32": 4,
    "float16": 2,
    "half": 2,
    "fp16": 2,
    "F16": 2,
    "bfloat16": 2,
    "bf16": 2,
    "BF16": 2,
    "float64": 8,
    "F64": 8,
    "I64": 8,
    "I32": 4,
    "U32": 4,
    "I16": 2,
    "U16": 2,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "F8_E8M0": 1,
    "F4": 0.5,
    "F6_E2M3": 0.75,
    "F6_E3M2": 0.75,
}


@dataclass(frozen=True)
class LinearState:
    """One `Mamba2StateShape.create` call (configs/mamba_utils.py:196-242), per state layer.

    `kind` names the config it comes from: "lightning" (MiniCPM SALA,
    configs/minicpm.py:147-169), "gdn" (Qwen3-Next, configs/qwen3_next.py:288-313)
    or "mamba2" (NemotronH, FalconH1 and friends).
    """

    kind: str
    layers: tuple[int, ...]
    num_heads: int
    head_dim: int
    state_size: int
    n_groups: int = 0
    intermediate_size: int = 0
    conv_kernel: int = 1
    # mamba_ssm_dtype from the config: Qwen3-Next and the mamba2 configs pass
    # the config to mamba2_state_dtype (mamba_utils.py:71-100); SALA does not
    config_ssm_dtype: str | None = None


@dataclass(frozen=True)
class ModelShapes:
    """The shapes sglang's pool configurator reads from ModelConfig (configs/model_config.py)."""

    family: str
    num_layers: int
    num_kv_heads: int = 0
    head_dim: int = 0
    v_head_dim: int = 0
    # MLA (configs/model_config.py:1370-1400)
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    # the layers that hold KV; None means every layer
    full_layer_ids: tuple[int, ...] | None = None
    # sliding-window hybrids (get_hybrid_layer_ids, model_config.py:2701)
    swa_layer_ids: tuple[int, ...] = ()
    sliding_window: int | None = None
    swa_num_kv_heads: int | None = None
    swa_head_dim: int | None = None
    swa_v_head_dim: int | None = None
    # mamba / linear attention / lightning state
    linear: LinearState | None = None
    # MiniCPM SALA sparse attention: the compressed-K reserve (layers/attention/minicpm/cache.py:49-66)
    sparse_kernel_stride: int | None = None
    sparse_kernel_size: int | None = None
    # the model dtype sglang uses (`--dtype auto`: configs/model_config.py:2284-2345)
    dtype: str = "bfloat16"
    # hf_quant_config / quantization_config kv_cache_quant_algo (mem_cache/kv_cache_dtype.py:50-57)
    kv_cache_quant_algo: str | None = None
    # multimodal: the vision tower's size for adjust_mem_fraction_for_vlm (memory_hook.py:417-462)
    vision_layers: int | None = None
    vision_hidden: int | None = None
    has_vision_config: bool = False
    has_attention_sinks: bool = False
    # what the config lacks for this family, one line each; the plan says so and goes on
    problems: tuple[str, ...] = ()

    @property
    def asymmetric_kv(self) -> bool:
        """ModelConfig.has_asymmetric_kv (model_config.py:1263-1271)."""
        swa_h = self.swa_head_dim if self.swa_head_dim is not None else self.head_dim
        swa_v = self.swa_v_head_dim if self.swa_v_head_dim is not None else swa_h
        return self.head_dim != self.v_head_dim or swa_h != swa_v


@dataclass(frozen=True)
class LayerWeights:
    """One decoder layer's weight bytes, by how sglang splits them over TP ranks."""

    attn: int = 0  # q/o projections: split over the attention TP size
    kv: int = 0  # k/v projections: split by KV heads, replicated once TP > KV heads
    mlp: int = 0  # MLP, experts, linear-attention mixers: split over TP
    replicated: int = 0  # norms, routers, 1-D tensors: every rank holds a copy

    @property
    def total(self) -> int:
        return self.attn + self.kv + self.mlp + self.replicated


@dataclass(frozen=True)
class WeightBreakdown:
    """The weights, grouped so the bytes one GPU holds follow from (tp, pp, attention tp)."""

    source: str  # "safetensors" (the headers) or "config" (estimated from the shapes)
    layers: tuple[LayerWeights, ...] = ()
    # VocabParallelEmbedding: rows split over TP after padding to 64 (layers/vocab_parallel_embedding.py)
    embed_rows: int = 0
    embed_row_bytes: int = 0
    head_rows: int = 0
    head_row_bytes: int = 0
    tied: bool = False
    # outside the decoder layers (final norm, vision tower, projector)
    extra_sharded: int = 0
    extra_replicated: int = 0
    kv_heads: int = 0
    total_bytes: int = 0
    dtypes: tuple[tuple[str, int], ...] = ()
    notes: tuple[str, ...] = field(default=())


def as_int(value: object, default: int | None = None) -> int | None:
    """An integer from config or flag data: ints and integral floats, never bools."""
    if isinstance(value, bool) or value is None:
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return default


VOCAB_PADDING = 64  # DEFAULT_VOCAB_PADDING_SIZE, layers/vocab_parallel_embedding.py


def pp_layer_range(num_layers: int, pp_rank: int, pp_size: int) -> tuple[int, int]:
    """get_pp_indices (distributed/utils.py:110-150) without SGLANG_PP_LAYER_PARTITION."""
    if pp_size <= 1:
        return 0, num_layers
    base, remainder = divmod(num_layers, pp_size)
    if pp_rank >= pp_size - remainder:
        start = pp_rank * (base + 1) - (pp_size - remainder)
        return start, start + base + 1
    return pp_rank * base, pp_rank * base + base


def _vocab_rows_per_rank(rows: int, tp: int) -> int:
    padded = -(-rows // VOCAB_PADDING) * VOCAB_PADDING
    return -(-padded // max(tp, 1))


def rank_weight_bytes(w: WeightBreakdown, *, tp: int, attn_tp: int, pp: int, pp_rank: int) -> int:
    """The weight bytes one GPU of PP stage `pp_rank` holds."""
    tp = max(tp, 1)
    attn_tp = max(attn_tp, 1)
    start, end = pp_layer_range(len(w.layers), pp_rank, pp)
    kv_share = max(1, w.kv_heads // attn_tp) / w.kv_heads if w.kv_heads > 0 else 1 / attn_tp
    total = 0.0
    for layer in w.layers[start:end]:
        total += layer.attn / attn_tp + layer.kv * kv_share + layer.mlp / tp + layer.replicated
    first, last = pp_rank == 0, pp_rank == max(pp, 1) - 1
    if first:
        total += _vocab_rows_per_rank(w.embed_rows, tp) * w.embed_row_bytes
    if last:
        if not w.tied or pp > 1:
            rows = w.head_rows if not w.tied else w.embed_rows
            row_bytes = w.head_row_bytes if not w.tied else w.embed_row_bytes
            total += _vocab_rows_per_rank(rows, tp) * row_bytes
        total += w.extra_sharded / tp
    if first:
        total += w.extra_replicated
    return int(total)


def max_rank_weight_bytes(w: WeightBreakdown, *, tp: int, attn_tp: int, pp: int) -> int:
    """The most any GPU holds: the KV budget is sized from the MIN free memory over ranks."""
    return max(
        rank_weight_bytes(w, tp=tp, attn_tp=attn_tp, pp=pp, pp_rank=r) for r in range(max(pp, 1))
    )
