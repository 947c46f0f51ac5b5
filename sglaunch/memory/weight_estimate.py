"""Weight bytes estimated from a config's shapes, for a model folder without weight files.

An estimate, said so wherever it is shown: parameter counts of the usual
decoder layer (attention, gated MLP or MoE experts, norms) times the bytes per
element of the checkpoint's dtype or quantization. sglang itself only ever
measures the weights (`Load weight end … mem usage`), so this is the number a
planner can compare against that line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sglaunch.validators.memory.shapes import (
    LINEAR,
    MLA,
    LayerWeights,
    ModelShapes,
    WeightBreakdown,
)

# bytes per element of a linear weight, by quant_method (scales included roughly)
_QUANT_BYTES = {
    "fp8": 1.0,
    "w8a8_fp8": 1.0,
    "modelopt_fp8": 1.0,
    "awq": 0.53,
    "gptq": 0.53,
    "mxfp4": 0.53,
}


def _i(cfg: Mapping[str, Any], key: str, default: int = 0) -> int:
    v = cfg.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _dtype_bytes(dtype: str) -> float:
    return 4.0 if dtype == "float32" else 2.0


def _linear_bytes(config: Mapping[str, Any], dtype: str) -> tuple[float, str | None]:
    quant = config.get("quantization_config")
    method = quant.get("quant_method") if isinstance(quant, Mapping) else None
    if isinstance(method, str) and method in _QUANT_BYTES:
        return _QUANT_BYTES[method], method
    return _dtype_bytes(dtype), None


def _mlp_params(t: Mapping[str, Any], hidden: int, layer: int) -> tuple[int, int]:
    """(sharded MLP/expert parameters, replicated router parameters) of one layer."""
    experts = _i(t, "num_experts") or _i(t, "n_routed_experts") or _i(t, "num_local_experts")
    dense_first = _i(t, "first_k_dense_replace")
    inter = _i(t, "intermediate_size")
    if experts and layer >= dense_first:
        moe = _i(t, "moe_intermediate_size") or inter
        shared = _i(t, "shared_expert_intermediate_size") or _i(t, "n_shared_experts") * moe
        return experts * 3 * hidden * moe + 3 * hidden * shared, experts * hidden
    return 3 * hidden * inter, 0


def _attn_params(
    t: Mapping[str, Any], s: ModelShapes, hidden: int, heads: int, layer: int
) -> tuple[int, int]:
    """(q/o parameters, k/v parameters) of one layer."""
    if s.family == MLA:
        nope, rope = _i(t, "qk_nope_head_dim"), s.qk_rope_head_dim
        vhd = _i(t, "v_head_dim") or nope
        q_lora = _i(t, "q_lora_rank")
        q = (
            (hidden * q_lora + q_lora * heads * (nope + rope))
            if q_lora
            else hidden * heads * (nope + rope)
        )
        kv = hidden * (s.kv_lora_rank + rope) + s.kv_lora_rank * heads * (nope + vhd)
        return q + heads * vhd * hidden, kv
    if s.linear is not None and layer in s.linear.layers:
        lin = s.linear
        key_dim = lin.n_groups * lin.state_size
        value_dim = lin.num_heads * lin.head_dim
        if lin.kind == "lightning":
            return 2 * hidden * value_dim, 2 * hidden * value_dim
        return hidden * (2 * key_dim + 2 * value_dim) + value_dim * hidden, 0
    return 2 * hidden * heads * s.head_dim, 2 * hidden * s.num_kv_heads * s.head_dim


def estimate_weights(
    config: Mapping[str, Any], tcfg: Mapping[str, Any], s: ModelShapes
) -> WeightBreakdown | None:
    """A WeightBreakdown from the config's shapes; None when the shapes are too incomplete."""
    hidden = _i(tcfg, "hidden_size") or _i(tcfg, "n_embd") or _i(tcfg, "d_model")
    heads = _i(tcfg, "num_attention_heads") or _i(tcfg, "n_head")
    vocab = _i(tcfg, "vocab_size")
    if (
        not hidden
        or not heads
        or not vocab
        or not s.num_layers
        or (s.family != MLA and not s.head_dim)
    ):
        return None
    elem = _dtype_bytes(s.dtype)
    lin_bytes, method = _linear_bytes(config, s.dtype)
    layers = []
    for i in range(s.num_layers):
        qo, kv = _attn_params(tcfg, s, hidden, heads, i)
        mlp, router = _mlp_params(tcfg, hidden, i)
        if s.family == MLA or (
            s.family == LINEAR and s.linear is not None and i in s.linear.layers
        ):
            qo, kv = qo + kv, 0  # no KV-head replication outside GQA attention
        layers.append(
            LayerWeights(
                attn=int(qo * lin_bytes),
                kv=int(kv * lin_bytes),
                mlp=int(mlp * lin_bytes),
                replicated=int((router + 2 * hidden) * elem),
            )
        )
    tied = bool(config.get("tie_word_embeddings") or tcfg.get("tie_word_embeddings"))
    vision = config.get("vision_config")
    tower = 0
    if isinstance(vision, Mapping):
        vh, vl = _i(vision, "hidden_size", 1024), _i(vision, "num_hidden_layers", 24)
        tower = int(12 * vl * vh * vh * elem)
    row = int(hidden * elem)
    total = sum(lw.total for lw in layers) + vocab * row * (1 if tied else 2) + tower
    notes = ["weights estimated from config.json's shapes (no safetensors headers)"]
    if method:
        notes.append(
            f"{method} checkpoint: linear weights counted at {lin_bytes:g} bytes per element"
        )
    return WeightBreakdown(
        source="config",
        layers=tuple(layers),
        embed_rows=vocab,
        embed_row_bytes=row,
        head_rows=0 if tied else vocab,
        head_row_bytes=0 if tied else row,
        tied=tied,
        extra_replicated=tower + int(hidden * elem),
        kv_heads=s.num_kv_heads if s.family != MLA else 0,
        total_bytes=total,
        notes=tuple(notes),
    )
