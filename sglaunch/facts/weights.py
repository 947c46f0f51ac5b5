"""Weight size from safetensors headers or index files, never from the tensors themselves."""

from __future__ import annotations

import struct
from pathlib import Path

from sglaunch.safeio import MIB, BadContent, RegularFile, parse_json, read_text, shown

# A safetensors header is JSON of a few MB at most; refuse absurd lengths
# rather than reading a corrupt file's "header" into memory.
_MAX_HEADER = 100 * 1024 * 1024

# An index lists each tensor's file: a few MB for the largest checkpoints.
_MAX_INDEX = 64 * MIB

_INDEX_FILES = ("model.safetensors.index.json", "pytorch_model.bin.index.json")


def safetensors_payload_bytes(path: Path) -> int | None:
    """Bytes of tensor data in one .safetensors file, from its header alone."""
    # A FIFO or a device is refused by name (InputError); a header that does not parse is
    # a corrupt file, whose size is unknown; one that breaks the limits is refused.
    try:
        with RegularFile(path) as fh:
            raw = fh.read_exact(8)
            if raw is None:
                return None
            (n,) = struct.unpack("<Q", raw)
            if n <= 0 or n > _MAX_HEADER:
                return None
            body = fh.read_exact(n)
        if body is None:
            return None
        header = parse_json(body, label=shown(path), what="safetensors header")
    except BadContent:
        return None
    except OSError:
        return None
    if not isinstance(header, dict):
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
