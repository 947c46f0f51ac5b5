"""Example model configs written for sglaunch, addressable as `example:NAME`.

They let a new user try everything before downloading anything. Configs only:
no weights, no tokenizer. The MiniCPM 4 example carries a small configuration
class of our own behind `auto_map`, like a real remote-code checkpoint.
"""

from __future__ import annotations

from pathlib import Path

EXAMPLES: dict[str, str] = {
    "minicpm-sala": "MiniCPM SALA: sparse + lightning attention layers (sglang's minicpm_sala type)",
    "minicpm4-8b": "MiniCPM 4 8B: remote-code config (needs --trust-remote-code)",
    "minicpm-v-4.6": "MiniCPM-V 4.6: vision-language, Qwen3.5 text backbone",
    "llama-3.1-8b": "Llama 3.1 8B: a plain transformers model, 128K context",
}

# The Hugging Face repo each example mirrors: what a launch, a profile's export and the
# preview name, because the bundled folder holds a config and no weights (useless to sglang
# on a GPU box); the checks still read the bundled config.
EXAMPLE_REPOS: dict[str, str] = {
    "minicpm-sala": "openbmb/MiniCPM-SALA",
    "minicpm4-8b": "openbmb/MiniCPM4-8B",
    "minicpm-v-4.6": "openbmb/MiniCPM-V-4_6",
    "llama-3.1-8b": "meta-llama/Llama-3.1-8B-Instruct",
}

DEFAULT_EXAMPLE = "minicpm-sala"


def example_dir(name: str) -> Path:
    # this package's own folder (not importlib.resources: its import alone costs a check ~3 ms)
    return Path(__file__).parent / name
