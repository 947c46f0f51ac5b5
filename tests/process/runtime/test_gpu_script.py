"""The GPU machine's scripts here, without a GPU: scripts/gpu_facts_check.py with a fake NVML,
the CUDA start-up check and the all-in-one script saying what they could not do (the real
runs are on the GPU machine; README, "Last run on a GPU")."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
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


def test_the_cuda_start_up_check_without_a_gpu_says_so_and_exits_2() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "cuda_startup_check.py")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
    )
    assert done.returncode == 2, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["status"] == "no-gpu" and report["stages"] == []


def test_the_gpu_machine_script_names_its_arguments() -> None:
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu_machine_checks.sh")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "usage: bash scripts/gpu_machine_checks.sh WHEELS_DIR|- OUT_DIR" in done.stderr


def test_the_gpu_machine_script_reports_every_step_when_out_of_time(tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "gpu_machine_checks.sh"), "-", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "BUDGET": "1", "PY": sys.executable},
    )
    assert done.returncode == 1  # nothing ran, so nothing passed
    summary = (tmp_path / "summary.txt").read_text().splitlines()
    assert [line.split()[0] for line in summary] == ["setup", "a", "b", "d", "c"]
    assert all("rc=skip" in line for line in summary)
