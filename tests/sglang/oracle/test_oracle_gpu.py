"""On a machine with a real NVIDIA GPU: the oracle worker never creates a CUDA context.

Marked `gpu`, which the default run deselects (pyproject addopts); `make test-gpu` selects it
on the GPU machine, where a missing GPU is a failure, not a skip.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _gpu_count() -> int:
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return 0
    try:
        return int(pynvml.nvmlDeviceGetCount())
    finally:
        pynvml.nvmlShutdown()


@pytest.mark.gpu
@pytest.mark.oracle
def test_the_worker_tree_never_holds_a_cuda_context(sglang_python: str) -> None:
    assert _gpu_count() > 0, "NVML sees no GPU: run `make test-gpu` on a machine with one"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "oracle_gpu_check.py"),
            "--json",
            "--sglang-python",
            sglang_python,
        ],
        capture_output=True,
        text=True,
        timeout=400,
    )
    report = json.loads(done.stdout)
    assert report["verdict"] == "PASS", report
    assert done.returncode == 0
    assert len(report["worker_tree"]) >= 2
