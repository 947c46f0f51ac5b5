"""The memory plan's model facts: shapes from the config, weight groups from the headers.

Called from `facts.model` (one line each): `with_memory_shapes` while the
config becomes facts (pure), `with_weight_breakdown` once the model folder is
known (reads the safetensors headers and hf_quant_config.json, never tensors).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from sglaunch.memory.config_shapes import shapes_from_config
from sglaunch.memory.weight_estimate import estimate_weights
from sglaunch.memory.weights import weight_breakdown
from sglaunch.model_types import known_model_types, text_config
from sglaunch.safeio import InputError, parse_json, read_text, shown
from sglaunch.validators.facts import ModelFacts

HF_QUANT_CONFIG = "hf_quant_config.json"  # ModelOpt's, read by sglang for kv_cache_quant_algo
_MAX_QUANT_CONFIG = 1 << 20


def with_memory_shapes(
    facts: ModelFacts,
    config: Mapping[str, Any],
    tcfg: Mapping[str, Any],
    sala: Mapping[str, Any] | None,
    hf_quant: Mapping[str, Any] | None = None,
    *,
    sglang_types: frozenset[str] | None = None,
) -> ModelFacts:
    shapes = shapes_from_config(
        config, tcfg, sala=sala, hf_quant=hf_quant, sglang_types=sglang_types
    )
    weights = estimate_weights(config, tcfg, shapes) if not shapes.problems else None
    return replace(facts, shapes=shapes, weights=weights)


def read_hf_quant_config(model_dir: Path) -> dict[str, Any] | None:
    """hf_quant_config.json as data (bounded, like every file a model folder brings), else None.

    A file that is not one (too deep, not JSON, a FIFO) says nothing about the KV dtype:
    the plan goes on without it rather than refusing the model.
    """
    path = model_dir / HF_QUANT_CONFIG
    if not path.is_file():
        return None
    label = shown(path)
    try:
        text = read_text(path, limit=_MAX_QUANT_CONFIG, label=label, noun="a quantization config")
        data = parse_json(text, label=label, what="quantization config")
    except (OSError, InputError):
        return None
    if not isinstance(data, dict):
        return None
    # only the shapes the plan reads: a section that is not an object counts as absent
    quant = data.get("quantization")
    if quant is not None and not isinstance(quant, dict):
        data = {k: v for k, v in data.items() if k != "quantization"}
    return data


def with_weight_breakdown(
    facts: ModelFacts,
    model_dir: Path,
    config: Mapping[str, Any],
    *,
    sglang_version: str | None = None,
) -> ModelFacts:
    """Per-tensor weight groups from the checkpoint's headers, when it has safetensors files.

    `config` is config.json as written. For a model type sglang registers itself, its
    own config class wins over transformers' (srt/utils/hf_transformers/config.py), so
    the shapes are read again from the file: transformers' class may fill in fields
    sglang's lacks (Qwen3.5's layer_types where sglang reads full_attention_interval).
    """
    hf_quant = read_hf_quant_config(model_dir)
    _, sglang_types = known_model_types(sglang_version)
    own_type = str(config.get("model_type") or "") in sglang_types
    if own_type and facts.loaded_with == "transformers" and not facts.is_minicpm_sala:
        facts = with_memory_shapes(
            facts, config, text_config(config), None, hf_quant, sglang_types=sglang_types
        )
    elif hf_quant is not None and facts.shapes is not None:
        algo = (hf_quant.get("quantization") or {}).get("kv_cache_quant_algo")
        if isinstance(algo, str):
            facts = replace(facts, shapes=replace(facts.shapes, kv_cache_quant_algo=algo))
    if facts.shapes is None or facts.shapes.problems:
        return facts
    tied = bool(config.get("tie_word_embeddings"))
    breakdown, why = weight_breakdown(model_dir, facts.shapes, facts.num_attention_heads, tied)
    if breakdown is not None:
        return replace(facts, weights=breakdown)
    if why:
        return replace(facts, notes=(*facts.notes, why))
    return facts
