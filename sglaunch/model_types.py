"""Which model types sglang knows (bundled facts per release), and which part of a config
is the language model's.

Below both `facts.model` (config -> facts) and `memory.model_inputs` (the memory plan's
shapes): each asks the same two questions of a config.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from sglaunch import SGLANG_VERSION
from sglaunch.validators.release_spans import semantics

_TEXT_CONFIG_KEYS = ("text_config", "llm_config", "language_config", "thinker_config")


@cache
def model_types_data(version: str | None = None) -> dict[str, Any]:
    """The bundled model-type facts of a supported release (the nearest one for any other)."""
    # sglaunch/facts/data, read as a plain folder (importlib.resources' import costs ~3 ms)
    name = f"model-types-{semantics(version or SGLANG_VERSION)}.json"
    text = (Path(__file__).parent / "facts" / "data" / name).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def sglang_architectures(version: str | None = None) -> frozenset[str]:
    """Architectures that sglang release implements natively (its EntryClass names)."""
    return frozenset(model_types_data(version).get("sglang_architectures", ()))


def known_model_types(version: str | None = None) -> tuple[frozenset[str], frozenset[str]]:
    """(types sglang's transformers knows, types sglang registers itself), bundled facts."""
    data = model_types_data(version)
    return frozenset(data["transformers_model_types"]), frozenset(data["sglang_model_types"])


def text_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """sglang's get_hf_text_config: the language-model part of a multimodal config."""
    archs = config.get("architectures") or []
    if archs and str(archs[0]).startswith("Llava") and str(archs[0]).endswith("ForCausalLM"):
        return config
    for key in _TEXT_CONFIG_KEYS:
        sub = config.get(key)
        if isinstance(sub, Mapping):
            return sub
    return config
