"""Weights per GPU from the safetensors headers: dtype per tensor, sharded where sglang shards."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from sglaunch.facts.model import load_model_facts
from sglaunch.memory.weights import breakdown_from_headers, read_safetensors_header
from sglaunch.validators.memory.shapes import (
    MHA,
    ModelShapes,
    max_rank_weight_bytes,
    rank_weight_bytes,
)

LLAMA_SHAPES = ModelShapes(family=MHA, num_layers=2, num_kv_heads=8, head_dim=128, v_head_dim=128)
SIZES = {"BF16": 2, "F32": 4, "F8_E4M3": 1, "I32": 4}


def header(tensors: dict[str, tuple[str, list[int]]]) -> dict[str, object]:
    out: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        n = SIZES[dtype]
        for d in shape:
            n *= d
        out[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        offset += n
    return out


def write_safetensors(path: Path, hdr: dict[str, object]) -> None:
    raw = json.dumps(hdr).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw)  # the header is all sglaunch reads


def tiny_llama() -> dict[str, tuple[str, list[int]]]:
    t: dict[str, tuple[str, list[int]]] = {
        "model.embed_tokens.weight": ("BF16", [1000, 4096]),
        "lm_head.weight": ("BF16", [1000, 4096]),
        "model.norm.weight": ("BF16", [4096]),
    }
    for i in range(2):
        p = f"model.layers.{i}."
        t[p + "self_attn.q_proj.weight"] = ("BF16", [4096, 4096])
        t[p + "self_attn.k_proj.weight"] = ("BF16", [1024, 4096])
        t[p + "self_attn.v_proj.weight"] = ("BF16", [1024, 4096])
        t[p + "self_attn.o_proj.weight"] = ("BF16", [4096, 4096])
        t[p + "mlp.gate_proj.weight"] = ("BF16", [14336, 4096])
        t[p + "mlp.up_proj.weight"] = ("BF16", [14336, 4096])
        t[p + "mlp.down_proj.weight"] = ("BF16", [4096, 14336])
        t[p + "input_layernorm.weight"] = ("BF16", [4096])
        t[p + "post_attention_layernorm.weight"] = ("BF16", [4096])
    return t


def test_tensors_are_split_as_sglang_splits_them() -> None:
    w = breakdown_from_headers([header(tiny_llama())], LLAMA_SHAPES, heads=32, tied=False)
    layer = w.layers[0]
    assert layer.attn == 2 * 4096 * 4096 * 2
    assert layer.kv == 2 * 1024 * 4096 * 2
    assert layer.mlp == 3 * 14336 * 4096 * 2
    assert layer.replicated == 2 * 4096 * 2
    assert (w.embed_rows, w.embed_row_bytes, w.head_rows) == (1000, 8192, 1000)
    assert w.total_bytes == sum(SIZES["BF16"] * _numel(s) for _, s in tiny_llama().values())
    one = rank_weight_bytes(w, tp=1, attn_tp=1, pp=1, pp_rank=0)
    assert one == w.total_bytes + 2 * (1024 - 1000) * 8192  # vocab rows padded to 64 (1000 -> 1024)
    # TP 2: everything halves but the norms; KV heads 8 -> 4 per rank
    two = rank_weight_bytes(w, tp=2, attn_tp=2, pp=1, pp_rank=0)
    assert (
        two
        == (2 * (layer.attn + layer.kv + layer.mlp)) // 2
        + 2 * layer.replicated
        + 2 * 512 * 8192
        + 4096 * 2
    )
    # TP 16 > 8 KV heads: each rank keeps one KV head (1/8 of K/V), not 1/16
    sixteen = rank_weight_bytes(w, tp=16, attn_tp=16, pp=1, pp_rank=0)
    kv_share = 2 * layer.kv / 8
    assert sixteen == int(
        2 * (layer.attn + layer.mlp) / 16
        + kv_share
        + 2 * layer.replicated
        + 2 * 64 * 8192
        + 4096 * 2
    )
    # PP 2: the embedding on the first stage, the head and final norm... on its own stage
    first = rank_weight_bytes(w, tp=1, attn_tp=1, pp=2, pp_rank=0)
    last = rank_weight_bytes(w, tp=1, attn_tp=1, pp=2, pp_rank=1)
    assert (
        first - last == 4096 * 2
    )  # the same layer sizes, embed vs head rows equal; the final norm on rank 0
    assert max_rank_weight_bytes(w, tp=1, attn_tp=1, pp=2) == first


def _numel(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def test_fused_qkv_and_dtypes_and_mtp_layers() -> None:
    t = {
        "model.layers.0.self_attn.qkv_proj.weight": ("BF16", [(32 + 16) * 128, 4096]),
        "model.layers.0.mlp.experts.w1.weight": ("F8_E4M3", [8, 1024, 4096]),
        "model.layers.0.mlp.experts.w1.weight_scale": ("F32", [8, 1024]),
        "model.layers.0.mlp.gate.weight": ("BF16", [8, 4096]),
        "model.layers.5.mlp.down_proj.weight": (
            "BF16",
            [4096, 1024],
        ),  # an MTP layer past num_layers
    }
    shapes = ModelShapes(family=MHA, num_layers=1, num_kv_heads=8, head_dim=128, v_head_dim=128)
    w = breakdown_from_headers([header(t)], shapes, heads=32, tied=True)
    qkv = 48 * 128 * 4096 * 2
    assert w.layers[0].kv == int(qkv * 16 / 48)
    assert w.layers[0].attn == qkv - int(qkv * 16 / 48)
    assert w.layers[0].replicated == 8 * 4096 * 2  # the MoE router is replicated
    assert dict(w.dtypes)["F8_E4M3"] == 8 * 1024 * 4096
    assert w.notes and "MTP" in w.notes[0]


@pytest.mark.parametrize(
    ("blob", "why"),
    [
        (b"\x01", "shorter than a safetensors header"),
        (struct.pack("<Q", 10**12), "1,000,000,000,000-byte header"),
        (struct.pack("<Q", 5) + b"{not", "not valid JSON"),
        (struct.pack("<Q", 2) + b"[]", "not a JSON object"),
    ],
)
def test_a_corrupt_or_huge_header_is_one_line(tmp_path: Path, blob: bytes, why: str) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(blob)
    hdr, reason = read_safetensors_header(path)
    assert hdr is None and reason is not None and why in reason and "\n" not in reason


def test_model_folder_with_headers_and_with_a_corrupt_file(tmp_path: Path) -> None:
    cfg = json.loads(
        (Path(__file__).parents[3] / "sglaunch/examples/llama-3.1-8b/config.json").read_text()
    )
    cfg.update(num_hidden_layers=2, vocab_size=1000)
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    write_safetensors(tmp_path / "model-00001.safetensors", header(tiny_llama()))
    facts = load_model_facts(str(tmp_path))
    assert facts.weights is not None and facts.weights.source == "safetensors"
    assert facts.weights.layers[1].mlp == 3 * 14336 * 4096 * 2
    (tmp_path / "model-00002.safetensors").write_bytes(struct.pack("<Q", 10**12))
    facts = load_model_facts(str(tmp_path))
    assert facts.weights is not None and facts.weights.source == "config"  # the estimate goes on
    assert any(
        "model-00002.safetensors" in n and "estimated from the config" in n for n in facts.notes
    )
