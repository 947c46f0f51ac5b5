"""Numbers in a model config that no model has, and HF-cache entries that lead elsewhere.

Refused before any fact is derived: sglang's own arithmetic on these (a layer list
expanded to `num_hidden_layers` entries, `int(rope_factor * context)`) would take
all the memory or overflow, in sglaunch exactly as in sglang.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from sglaunch.errors import UserError
from sglaunch.safeio import KIB, read_text, shown

# The deepest models have a few hundred layers; SALA expands its mixer list per layer.
MAX_LAYERS = 100_000
# RoPE scaling factors in the wild are at most a few hundred (YaRN 40, 64, 128).
MAX_ROPE_FACTOR = 1_000_000
# sglang multiplies a context value by the factor: a string there would be repeated.
MAX_CONTEXT_TEXT = 32
_LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
_CONTEXT_KEYS = (
    "max_sequence_length",
    "seq_length",
    "max_seq_len",
    "model_max_length",
    "max_position_embeddings",
)
_REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _configs(data: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """The config and the sub-configs sglang reads shape facts from (text_config, ...)."""
    yield "", data
    for key, sub in data.items():
        if isinstance(sub, Mapping):
            yield f"{key}.", sub


def _problem(prefix: str, cfg: Mapping[str, Any]) -> str | None:
    for key in _LAYER_KEYS:
        v = cfg.get(key)
        if isinstance(v, int | float) and not isinstance(v, bool) and v > MAX_LAYERS:
            return (
                f"{prefix}{key} = {shown(v, 30)} is more layers than any model has "
                f"(at most {MAX_LAYERS})"
            )
    rope = cfg.get("rope_scaling")
    if isinstance(rope, Mapping) and rope.get("factor") is not None:
        factor = rope["factor"]
        if not _is_number(factor):
            return f"{prefix}rope_scaling.factor must be a number, got {shown(repr(factor), 40)}"
        if abs(factor) > MAX_ROPE_FACTOR:
            return (
                f"{prefix}rope_scaling.factor = {shown(factor, 30)} is beyond any RoPE scaling "
                f"(at most {MAX_ROPE_FACTOR})"
            )
    for key in _CONTEXT_KEYS:
        v = cfg.get(key)
        if isinstance(v, str) and len(v) > MAX_CONTEXT_TEXT:
            return f"{prefix}{key} must be a number, got a {len(v)}-character string"
    return None


def check_config_numbers(data: Mapping[str, Any], label: str) -> None:
    """UserError (one line, exit 2) when a shape number of the config is beyond any model."""
    for prefix, cfg in _configs(data):
        problem = _problem(prefix, cfg)
        if problem:
            raise UserError(f"{label}: {problem}; is it the right file?")


# Every integer field the rules and the memory plan read (facts/model.py, shapes.py,
# weight_estimate.py), in the config and its text sub-config: sglang reads them as numbers
# and fails on anything else, so sglaunch refuses them too, naming the field.
INT_FIELDS = (
    "num_hidden_layers",
    "n_layer",
    "num_layers",
    "n_layers",
    "num_attention_heads",
    "n_head",
    "num_heads",
    "n_heads",
    "num_key_value_heads",
    "num_kv_heads",
    "n_head_kv",
    "multi_query_group_num",
    "num_attention_groups",
    "hidden_size",
    "n_embd",
    "d_model",
    "head_dim",
    "v_head_dim",
    "vocab_size",
    "intermediate_size",
    "moe_intermediate_size",
    "shared_expert_intermediate_size",
    "num_experts",
    "num_local_experts",
    "n_routed_experts",
    "n_shared_experts",
    "first_k_dense_replace",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "lightning_nh",
    "lightning_nkv",
    "lightning_head_dim",
    "swa_num_key_value_heads",
    "swa_head_dim",
    "swa_v_head_dim",
    "full_attention_interval",
    "linear_num_value_heads",
    "linear_value_head_dim",
    "linear_num_key_heads",
    "linear_key_head_dim",
    "linear_conv_kernel_dim",
)
# sub-configs whose integers the plan reads
INT_SUBFIELDS: dict[str, tuple[str, ...]] = {
    "sparse_config": ("kernel_size", "kernel_stride"),
    "vision_config": ("num_hidden_layers", "hidden_size"),
}
_TEXT_KEYS = ("text_config", "llm_config", "language_config", "thinker_config")


def _type_problem(key: str, value: Any, *, number: bool = False) -> str | None:
    """`key`'s problem when `value` is not what sglang reads there; None (absent) is fine."""
    if value is None:
        return None
    if number:
        if _is_number(value):
            return None
        return f"{key} must be a number, got {shown(repr(value), 40)}"
    # an integral float (32.0) is read as its integer; a bool is not an integer here
    if isinstance(value, int) and not isinstance(value, bool):
        return None
    if isinstance(value, float) and value.is_integer():
        return None
    return f"{key} must be an integer, got {shown(repr(value), 40)}"


def config_type_problem(data: Mapping[str, Any]) -> str | None:
    """The first field the rules or the plan read whose value has the wrong type."""
    scopes: list[tuple[str, Mapping[str, Any]]] = [("", data)]
    for key in _TEXT_KEYS:
        sub = data.get(key)
        if isinstance(sub, Mapping):
            scopes.append((f"{key}.", sub))
    for prefix, cfg in scopes:
        for key in INT_FIELDS:
            problem = _type_problem(prefix + key, cfg.get(key))
            if problem:
                return problem
        for key in _CONTEXT_KEYS:
            problem = _type_problem(prefix + key, cfg.get(key), number=True)
            if problem:
                return problem
        for sub_key, fields in INT_SUBFIELDS.items():
            sub = cfg.get(sub_key)
            if sub is None:
                continue
            if not isinstance(sub, Mapping):
                return f"{prefix}{sub_key} must be an object, got {shown(repr(sub), 40)}"
            for key in fields:
                problem = _type_problem(f"{prefix}{sub_key}.{key}", sub.get(key))
                if problem:
                    return problem
    return None


def check_config_types(data: Mapping[str, Any], label: str) -> None:
    """UserError (one line, exit 2) naming the first field of a wrong type and the file."""
    problem = config_type_problem(data)
    if problem:
        raise UserError(f"{label}: {problem}")


def _inside(path: Path, folder: Path) -> bool:
    try:
        real, base = os.path.realpath(path), os.path.realpath(folder)
    except (OSError, ValueError):
        return False
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def in_snapshots(repo: Path, snapshot: Path) -> bool:
    """Whether `snapshot` (links followed) lies inside the repo's own snapshots/ folder."""
    return _inside(snapshot, repo / "snapshots")


def snapshot_in_repo(repo: Path, ref: Path) -> Path:
    """The snapshot folder `refs/main` names; UserError when it names one outside the
    repo's snapshots/ (`../../..`, an absolute path, a link out): a damaged or planted entry."""
    label = f"Hugging Face cache entry {shown(repo)}"
    revision = read_text(ref, limit=KIB, label=f"{label}: refs/main", noun="a revision").strip()
    snap = repo / "snapshots" / revision
    if (
        not _REVISION.fullmatch(revision)
        or revision in (".", "..")
        or (os.path.lexists(snap) and not in_snapshots(repo, snap))
    ):
        raise UserError(
            f"{label}: refs/main points outside its snapshots folder ({shown(revision, 60)}); "
            "the entry is damaged — delete it and download the model again"
        )
    return snap
