"""Bytes per KV-cache token and per state slot, as sglang 0.5.23 computes them.

`cell_size` mirrors `DefaultPoolConfigurator._compute_cell_size`
(srt/model_executor/pool_configurator.py:340-536) and
`HybridSWAPoolConfigurator.__init__` (l.656-786); `state_bytes_per_request`
mirrors `Mamba2StateShape.create` + `mamba_cache_per_req`
(srt/configs/mamba_utils.py:116-126, 196-242).
"""

from __future__ import annotations

from dataclasses import dataclass

from sglaunch.validators.memory.shapes import (
    DTYPE_BYTES,
    LINEAR,
    MLA,
    SWA,
    ModelShapes,
    pp_layer_range,
)

# --kv-cache-dtype -> (the dtype sglang stores, its element size) (mem_cache/kv_cache_dtype.py:34-90)
KV_DTYPES: dict[str, tuple[str, int]] = {
    "fp8_e5m2": ("float8_e5m2", 1),
    "fp8_e4m3": ("float8_e4m3fn", 1),
    "mxfp8": ("float8_e4m3fn", 1),
    "bf16": ("bfloat16", 2),
    "bfloat16": ("bfloat16", 2),
    # float4_e2m1fn_x2 packs two values in one byte; torch reports element size 1
    "nvfp4": ("float4_e2m1fn_x2", 1),
    "fp4_mx_block16": ("float4_e2m1fn_x2", 1),
}
FP4 = ("nvfp4", "fp4_mx_block16")


class CellError(ValueError):
    """A shape sglang would reject or that the mirror does not cover; one line."""


@dataclass(frozen=True)
class KvDtype:
    name: str  # as sglang prints it in "KV Cache is allocated. dtype: torch.<name>"
    size: int
    why: str


def model_dtype_bytes(dtype: str) -> int:
    size = DTYPE_BYTES.get(dtype)
    return int(size) if size is not None and size >= 1 else 2


def resolve_kv_dtype(flag: str, shapes: ModelShapes) -> KvDtype:
    """configure_kv_cache_dtype (mem_cache/kv_cache_dtype.py:34-90)."""
    if flag == "auto":
        algo = shapes.kv_cache_quant_algo
        if isinstance(algo, str) and algo.upper() == "FP8":
            return KvDtype("float8_e4m3fn", 1, "auto: the checkpoint's kv_cache_quant_algo is FP8")
        return KvDtype(shapes.dtype, model_dtype_bytes(shapes.dtype), "auto: the model dtype")
    if flag not in KV_DTYPES:
        raise CellError(f"Unsupported kv_cache_dtype: {flag}.")
    name, size = KV_DTYPES[flag]
    return KvDtype(name, size, f"--kv-cache-dtype {flag}")


def kv_heads_per_rank(total_kv_heads: int, attn_tp: int, dcp: int = 1) -> int:
    """ModelConfig.get_num_kv_heads (configs/model_config.py:1700-1711)."""
    return max(1, total_kv_heads // max(attn_tp // max(dcp, 1), 1))


def local_layers(ids: tuple[int, ...] | None, num_layers: int, start: int, end: int) -> int:
    if ids is None:
        return max(0, min(end, num_layers) - start)
    return sum(1 for i in ids if start <= i < end)


@dataclass(frozen=True)
class Cell:
    bytes_per_token: (
        float  # a float for SWA hybrids: ratio × SWA bytes (pool_configurator.py:811-817)
    )
    full_layers: int
    swa_layers: int = 0
    full_per_token: int = 0
    swa_per_token: int = 0


def cell_size(
    shapes: ModelShapes,
    kv: KvDtype,
    *,
    kv_flag: str,
    attn_tp: int,
    layer_range: tuple[int, int],
    swa_full_tokens_ratio: float = 0.8,
) -> Cell:
    """Bytes per token of max_total_num_tokens for one PP stage's layers."""
    start, end = layer_range
    if shapes.family == SWA:
        return _swa_cell(shapes, kv, kv_flag, attn_tp, start, end, swa_full_tokens_ratio)
    ids = shapes.full_layer_ids
    layers = local_layers(ids, shapes.num_layers, start, end)
    if shapes.family == MLA:
        dim = shapes.kv_lora_rank + shapes.qk_rope_head_dim
        size = dim * layers * kv.size
        if kv_flag in FP4:
            # kv_scale_buffer, pool_configurator.py:384-394
            size = size // 2 + (dim // 16) * layers * kv.size
        return Cell(size, layers, full_per_token=dim * kv.size)
    if kv_flag in FP4:
        raise CellError(
            "an FP4 KV cache for MHA/GQA is sized by its quant method (pool_configurator.py:490-514), "
            "which sglaunch does not mirror"
        )
    n = kv_heads_per_rank(shapes.num_kv_heads, attn_tp)
    per_layer = n * (shapes.head_dim + shapes.v_head_dim)
    size = per_layer * layers * kv.size
    if kv_flag == "mxfp8":
        size += per_layer * layers // 32  # pool_configurator.py:515-520
    return Cell(size, layers, full_per_token=per_layer * kv.size)


def _swa_cell(
    shapes: ModelShapes,
    kv: KvDtype,
    kv_flag: str,
    attn_tp: int,
    start: int,
    end: int,
    ratio: float,
) -> Cell:
    """HybridSWAPoolConfigurator.__init__ + _recompute_cell_size (pool_configurator.py:656-817)."""
    full_ids = shapes.full_layer_ids or ()
    full = local_layers(full_ids, shapes.num_layers, start, end)
    swa = local_layers(shapes.swa_layer_ids, shapes.num_layers, start, end)
    if swa == 0:
        raise CellError("Hybrid SWA model must have at least one SWA layer")
    n = kv_heads_per_rank(shapes.num_kv_heads, attn_tp)
    swa_heads = shapes.swa_num_kv_heads
    n_swa = max(1, swa_heads // attn_tp) if swa_heads is not None else n
    swa_hd = shapes.swa_head_dim if shapes.swa_head_dim is not None else shapes.head_dim
    swa_vhd = shapes.swa_v_head_dim if shapes.swa_v_head_dim is not None else swa_hd
    full_per = n * (shapes.head_dim + shapes.v_head_dim) * kv.size
    swa_per = n_swa * (swa_hd + swa_vhd) * kv.size
    if kv_flag == "mxfp8":
        full_per += n * (shapes.head_dim + shapes.v_head_dim) // 32
        swa_per += n_swa * (swa_hd + swa_vhd) // 32
    if full == 0:
        return Cell(swa_per * swa, 0, swa, full_per, swa_per)
    return Cell(full_per * full + ratio * swa_per * swa, full, swa, full_per, swa_per)


def _divide(numerator: int, denominator: int, what: str) -> int:
    # distributed/utils.py:75-79: sglang asserts divisibility
    if denominator <= 0 or numerator % denominator:
        raise CellError(
            f"{what} ({numerator}) is not divisible by the attention TP size ({denominator})"
        )
    return numerator // denominator


def state_dtype_bytes(kind: str, config_ssm_dtype: str | None, flag_ssm_dtype: str | None) -> int:
    """The temporal (SSM) state's element size: mamba2_state_dtype (mamba_utils.py:47-103).

    --mamba-ssm-dtype reaches it through SGLANG_MAMBA_SSM_DTYPE (arg_groups/serving_hook.py:439-440);
    SALA's lightning layers do not pass their config (configs/minicpm.py:159-169).
    """
    sizes = {"float32": 4, "bfloat16": 2, "float16": 2}
    chosen = "float32"
    if kind != "lightning" and config_ssm_dtype in sizes:
        chosen = config_ssm_dtype
    if flag_ssm_dtype in sizes:
        chosen = flag_ssm_dtype
    return sizes[chosen]


def state_bytes_per_layer(shapes: ModelShapes, attn_tp: int, ssm_bytes: int) -> int:
    """One layer's conv + temporal state for one request (Mamba2StateShape.create)."""
    s = shapes.linear
    if s is None:
        return 0
    tp = max(attn_tp, 1)
    groups = s.n_groups
    if groups % tp:
        groups += tp - groups  # extra_groups_for_head_shards, mamba_utils.py:29-38
    conv_dim = s.intermediate_size + 2 * groups * s.state_size
    conv = _divide(conv_dim, tp, "the linear-attention conv dimension") * max(s.conv_kernel - 1, 0)
    heads = _divide(s.num_heads, tp, f"{s.kind} state heads")
    temporal = heads * s.head_dim * s.state_size
    conv_bytes = 2  # SGLANG_MAMBA_CONV_DTYPE defaults to bfloat16 (mamba_utils.py:68)
    return conv * conv_bytes + temporal * ssm_bytes


def state_bytes_per_request(
    shapes: ModelShapes, attn_tp: int, ssm_bytes: int, pp: int
) -> tuple[int, int]:
    """(all layers' bytes per request, the largest PP stage's share) (kv_cache_configurator.py:3233-3256)."""
    s = shapes.linear
    if s is None or not s.layers:
        return 0, 0
    per_req = state_bytes_per_layer(shapes, attn_tp, ssm_bytes) * len(s.layers)
    if pp <= 1:
        return per_req, per_req
    most = max(
        sum(1 for i in s.layers if a <= i < b)
        for a, b in (pp_layer_range(shapes.num_layers, r, pp) for r in range(pp))
    )
    return per_req, int(per_req * (most / len(s.layers)))


def sala_reserve(total_tokens: int, kernel_stride: int) -> int:
    """Compressed-K slots the MiniCPM sparse backend takes from the pool (minicpm/cache.py:59-62)."""
    denominator = 4 * kernel_stride + 5
    return (5 * total_tokens + denominator - 1) // denominator


def is_linear(shapes: ModelShapes) -> bool:
    return shapes.family == LINEAR and shapes.linear is not None
