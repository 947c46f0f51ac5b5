"""scripts/gpu_facts_check.py with a fake NVML (the real one runs on the GPU machine)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from tests.support.processes import ROOT, FakeNvml


def _script() -> ModuleType:
    path = ROOT / "scripts" / "gpu_facts_check.py"
    spec = importlib.util.spec_from_file_location("gpu_facts_check", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_prints_each_gpu_and_json(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert _script().main(nvml=FakeNvml()) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "driver 570.86.15, CUDA 12.8, 1 GPU(s)"
    assert out[1].startswith("GPU0: NVIDIA H100 80GB HBM3 · compute capability 9.0 (sm90, Hopper)")
    data = json.loads(out[-1])
    assert data["mode"] == "nvml" and data["devices"][0]["memory_total_gib"] == 80.0
    assert data["devices"][0]["utilization_pct"] == 87


class _NoDriver:
    def nvmlInit(self) -> None:
        raise RuntimeError("NVML Shared Library Not Found")


def test_no_nvml_gpu_exits_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert _script().main(nvml=_NoDriver()) == 1
    captured = capsys.readouterr()
    assert "no NVML GPU" in captured.err
    data = json.loads(captured.out)
    assert data["mode"] == "planning" and data["devices"] == []


def test_script_exists_where_the_gpu_machine_expects_it() -> None:
    assert Path(ROOT / "scripts" / "gpu_facts_check.py").is_file()
