"""Helpers shared by the oracle tests (imported by name: tests/oracle is on sys.path)."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

MINICPM = {
    "architectures": ["MiniCPMForCausalLM"],
    "model_type": "minicpm_sala",
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "num_hidden_layers": 4,
    "vocab_size": 1024,
    "max_position_embeddings": 4096,
    "torch_dtype": "bfloat16",
}
# MiniCPM SALA with sparse attention: has_minicpm_sparse_attention is true
MINICPM_SALA = {
    **MINICPM,
    "architectures": ["MiniCPMSALAForCausalLM"],
    "mixer_types": ["minicpm4"],
    "sparse_config": {"kernel_size": 32, "kernel_stride": 16, "topk": 64, "block_size": 64},
}


def write_model(folder: Path, config: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return folder


def fake_python(folder: Path, name: str, body: str) -> str:
    """An executable that stands in for a sglang interpreter."""
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return str(path)


def dead_within(pid: int, seconds: float = 10.0) -> bool:
    """Whether `pid` is gone within `seconds`: SIGKILL is delivered asynchronously, and a
    process with a large heap takes a moment to tear down, longer on a loaded machine."""
    deadline = time.monotonic() + seconds
    while pid_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie still answers kill(0); it is dead for our purposes
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            return fh.read().split(") ", 1)[1].split()[0] != "Z"
    except OSError:
        return False
