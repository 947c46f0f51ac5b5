"""Weight size from safetensors headers or index files, never from the tensors themselves."""

from __future__ import annotations

import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sglaunch.safeio import MIB, BadContent, RegularFile, parse_json, read_text, shown
from sglaunch.validators.memory.shapes import LayerWeights, ModelShapes, WeightBreakdown

# A safetensors header is JSON of a few MB at most; refuse absurd lengths
# rather than reading a corrupt file's "header" into memory.
_MAX_HEADER = 100 * 1024 * 1024

# An index lists each tensor's file: a few MB for the largest checkpoints.
_MAX_INDEX = 64 * MIB

_INDEX_FILES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


def read_safetensors_header(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(the header JSON, None), or (None, why it cannot be read) for one .safetensors file.

    A FIFO or a device is refused by name (InputError, raised); a header that breaks the
    limits or does not parse is a corrupt file, whose size is unknown.
    """
    try:
        with RegularFile(path) as fh:
            raw = fh.read_exact(8)
            if raw is None:
                return None, "shorter than a safetensors header"
            (n,) = struct.unpack("<Q", raw)
            if n <= 0 or n > _MAX_HEADER:
                return None, f"declares a {n:,}-byte header (corrupt, or not safetensors)"
            body = fh.read_exact(n)
        if body is None:
            return None, "has a header that is not valid JSON (the file ends inside it)"
        header = parse_json(body, label=shown(path), what="safetensors header")
    except BadContent as exc:
        return None, f"has a header that is not valid JSON ({exc})"
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    if not isinstance(header, dict):
        return None, "has a header that is not a JSON object"
    return header, None


def safetensors_payload_bytes(path: Path) -> int | None:
    """Bytes of tensor data in one .safetensors file, from its header alone."""
    header, _ = read_safetensors_header(path)
    if header is None:
        return None
    end = 0
    for name, info in header.items():
        if name == "__metadata__" or not isinstance(info, dict):
            continue
        offsets = info.get("data_offsets")
        if isinstance(offsets, list) and len(offsets) == 2:
            try:
                end = max(end, int(offsets[1]))
            except (ValueError, TypeError, OverflowError):
                # "x", null, [..] or 1e400 (inf): a corrupt header, so the size is unknown
                return None
    return end


def weight_bytes(model_dir: Path) -> tuple[int | None, str | None]:
    """(total bytes, how it was found) for a model directory; (None, None) without weights."""
    for name in _INDEX_FILES:
        index = model_dir / name
        if index.exists() or index.is_symlink():
            label = shown(index)
            try:
                text = read_text(index, limit=_MAX_INDEX, label=label, noun="a weight index")
                data = parse_json(text, label=label, what="weight index")
                total = data.get("metadata", {}).get("total_size")
                if isinstance(total, int | float) and total > 0:
                    return int(total), name
            except (BadContent, AttributeError):  # 1e400 (inf), a list, not JSON: no size
                pass
    files = sorted(model_dir.glob("*.safetensors"))
    if files:
        sizes = [safetensors_payload_bytes(f) for f in files]
        if all(s is not None for s in sizes):
            return sum(s for s in sizes if s is not None), "safetensors headers"
    return None, None


# --- per-tensor accounting: how sglang splits each tensor over TP ranks ------------

_LAYER = re.compile(r"(?:^|\.)(?:layers|h|blocks|layer|decoder\.layers)\.(\d+)\.")
# towers and projectors outside the language model; counted whole on every GPU
_TOWERS = (
    "visual.",
    "vision_tower",
    "vision_model",
    "vpm.",
    "resampler",
    "mm_projector",
    "multi_modal_projector",
    "vision_embed",
    "image_newline",
    "audio_tower",
    "apm.",
    "merger.",
    "model.vision",
)
_EMBED = ("embed_tokens", "wte.", "word_embeddings", "tok_embeddings")
_HEAD = ("lm_head", "embed_out")
_KV = ("k_proj", "v_proj", ".wk.", ".wv.")
_FUSED_QKV = ("qkv_proj", "query_key_value", "w_pack", "c_attn", "wqkv")
# MLA's down-projections are ReplicatedLinear in sglang's DeepSeek models
_REPLICATED = ("kv_a_proj_with_mqa", "q_a_proj", "mlp.gate.weight", "router", "e_score_correction")
_ATTN = ("self_attn", ".attn.", "attention", "linear_attn", "mixer.")
MAX_TENSORS = 2_000_000  # a header with more entries is not a model we can reason about


@dataclass
class _Acc:
    layers: dict[int, list[int]]
    embed: list[int]
    head: list[int]
    extra_sharded: int = 0
    extra_replicated: int = 0
    skipped: int = 0
    dtypes: dict[str, int] | None = None


def _tensor_bytes(info: Mapping[str, Any]) -> int:
    offsets = info.get("data_offsets")
    if isinstance(offsets, list) and len(offsets) == 2:
        try:
            return max(int(offsets[1]) - int(offsets[0]), 0)
        except (ValueError, TypeError, OverflowError):
            return 0
    return 0


def _classify(
    acc: _Acc, name: str, info: Mapping[str, Any], shapes: ModelShapes, qkv_kv_share: float
) -> None:
    size = _tensor_bytes(info)
    low = name.lower()
    raw_shape = info.get("shape")
    shape: list[Any] = raw_shape if isinstance(raw_shape, list) else []
    dtype = str(info.get("dtype") or "?")
    assert acc.dtypes is not None
    acc.dtypes[dtype] = acc.dtypes.get(dtype, 0) + size
    if any(t in low for t in _TOWERS):
        acc.extra_replicated += size
        return
    m = _LAYER.search(low)
    if m is None:
        if any(t in low for t in _EMBED) and len(shape) == 2:
            acc.embed[0] += int(shape[0])
            acc.embed[1] += size
        elif any(t in low for t in _HEAD) and len(shape) == 2:
            acc.head[0] += int(shape[0])
            acc.head[1] += size
        else:
            acc.extra_replicated += size  # final norm and friends
        return
    idx = int(m.group(1))
    if idx >= shapes.num_layers:
        acc.skipped += size  # MTP / next-n layers: the target model does not load them
        return
    slot = acc.layers.setdefault(idx, [0, 0, 0, 0])  # attn, kv, mlp, replicated
    full = shapes.full_layer_ids is None or idx in shapes.full_layer_ids
    mla = shapes.family == "mla"
    if len(shape) <= 1 or any(t in low for t in _REPLICATED):
        slot[3] += size
    elif (
        full and not mla and any(t in low for t in _FUSED_QKV)
    ):  # before _KV: "qkv_proj" ends in "v_proj"
        kv = int(size * qkv_kv_share)
        slot[1] += kv
        slot[0] += size - kv
    elif full and not mla and any(t in low for t in _KV):
        slot[1] += size
    elif any(t in low for t in _ATTN):
        slot[0] += size
    else:
        slot[2] += size


def breakdown_from_headers(
    headers: Sequence[Mapping[str, Any]], shapes: ModelShapes, heads: int | None, tied: bool
) -> WeightBreakdown:
    """Group every tensor of the checkpoint by how sglang shards it over TP and PP ranks."""
    acc = _Acc(layers={}, embed=[0, 0], head=[0, 0], dtypes={})
    kv, q = shapes.num_kv_heads, heads or shapes.num_kv_heads
    share = 2 * kv / (q + 2 * kv) if kv and q else 0.0
    count = 0
    for header in headers:
        for name, info in header.items():
            if name == "__metadata__" or not isinstance(info, Mapping):
                continue
            count += 1
            if count > MAX_TENSORS:
                break
            _classify(acc, name, info, shapes, share)
    layers = tuple(LayerWeights(*acc.layers.get(i, [0, 0, 0, 0])) for i in range(shapes.num_layers))
    notes: list[str] = []
    if acc.skipped:
        notes.append(
            f"{acc.skipped / 2**30:.2f} GiB of MTP/next-n layer weights are not loaded by the target model"
        )
    e_rows, e_bytes = acc.embed
    h_rows, h_bytes = acc.head
    total = sum(sum(v) for v in acc.layers.values()) + e_bytes + h_bytes + acc.extra_replicated
    return WeightBreakdown(
        source="safetensors",
        layers=layers,
        embed_rows=e_rows,
        embed_row_bytes=e_bytes // e_rows if e_rows else 0,
        head_rows=h_rows,
        head_row_bytes=h_bytes // h_rows if h_rows else 0,
        tied=tied and not h_rows,
        extra_replicated=acc.extra_replicated,
        kv_heads=kv if shapes.family != "mla" else 0,
        total_bytes=total,
        dtypes=tuple(sorted((acc.dtypes or {}).items(), key=lambda kv_: -kv_[1])),
        notes=tuple(notes),
    )


def checkpoint_files(model_dir: Path) -> list[Path]:
    """The .safetensors files sglang would load: the index's weight_map, else every file."""
    index = model_dir / "model.safetensors.index.json"
    if index.is_file():
        label = shown(index)
        try:
            text = read_text(index, limit=_MAX_INDEX, label=label, noun="a weight index")
            data = parse_json(text, label=label, what="weight index")
            names = sorted({str(v) for v in (data.get("weight_map") or {}).values()})
            files = [model_dir / n for n in names if "/" not in n and "\\" not in n]
            if files:
                return files
        except (BadContent, AttributeError):
            pass
    return sorted(model_dir.glob("*.safetensors"))


def weight_breakdown(
    model_dir: Path, shapes: ModelShapes, heads: int | None, tied: bool
) -> tuple[WeightBreakdown | None, str | None]:
    """(the breakdown, None), or (None, one line saying why the headers could not be used)."""
    files = checkpoint_files(model_dir)
    if not files:
        return None, None
    headers = []
    for f in files:
        header, why = read_safetensors_header(f)
        if header is None:
            return None, f"{f.name} {why}; the weights are estimated from the config instead"
        headers.append(header)
    return breakdown_from_headers(headers, shapes, heads, tied), None
