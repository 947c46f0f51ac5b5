"""GPU facts through a fake at the pynvml boundary: no GPU, mixed GPUs, CUDA_VISIBLE_DEVICES, errors."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sglaunch.errors import UserError
from sglaunch.facts.gpu import planning_fallback, probe_gpus, visible_indices
from sglaunch.facts.presets import PRESETS, parse_gpu_spec
from sglaunch.validators.facts import GpuMode
from tests.fakes.nvml import (
    A100,
    B200,
    H100,
    L40S,
    RTX5090,
    FakeNvml,
    NVMLError_DriverNotLoaded,
    NVMLError_LibraryNotFound,
    gpu,
)


def test_two_h100s() -> None:
    nvml = FakeNvml([gpu(H100, 0, util=37, pids=[(4242, 2 * 1024**3)]), gpu(H100, 1)])
    facts = probe_gpus(nvml=nvml, env={})
    assert facts.mode is GpuMode.NVML
    assert facts.count == 2
    d0 = facts.devices[0]
    assert d0.name == "NVIDIA H100 80GB HBM3"
    assert d0.capability == (9, 0)
    assert d0.arch == "Hopper"
    assert d0.utilization == 37
    assert d0.processes[0].pid == 4242
    assert facts.cuda_version == "12.8"
    assert facts.driver_version == "570.124.06"
    assert facts.is_hopper and not facts.is_blackwell
    assert "2× NVIDIA H100 80GB HBM3" in facts.status
    assert nvml.shutdowns == 1  # NVML is always shut down again


def test_mixed_architectures() -> None:
    nvml = FakeNvml([gpu(A100, 0), gpu(L40S, 1), gpu(B200, 2), gpu(RTX5090, 3)])
    facts = probe_gpus(nvml=nvml, env={})
    assert [d.arch for d in facts.devices] == ["Ampere", "Ada", "Blackwell", "Blackwell"]
    assert [d.sm for d in facts.devices] == ["sm80", "sm89", "sm100", "sm120"]
    # sglang reads device 0: an A100 first makes the machine non-Blackwell
    assert not facts.is_blackwell


@pytest.mark.parametrize(
    ("visible", "expected"),
    [
        ("1", [1]),
        ("2,0", [2, 0]),
        ("GPU-00000003", [3]),  # a UUID prefix
        ("0,7,1", [0]),  # CUDA stops at the first entry naming no device
        ("1,1", [1]),  # and at a duplicate
        ("", []),
        ("-1", []),
    ],
)
def test_cuda_visible_devices(visible: str, expected: list[int]) -> None:
    nvml = FakeNvml([gpu(H100, 0), gpu(H100, 1), gpu(B200, 2), gpu(B200, 3)])
    facts = probe_gpus(nvml=nvml, env={"CUDA_VISIBLE_DEVICES": visible})
    if expected:
        assert facts.mode is GpuMode.NVML
        assert [d.index for d in facts.devices] == expected
        if len(expected) < 4:
            assert "hidden by CUDA_VISIBLE_DEVICES" in facts.status
    else:
        assert facts.mode is GpuMode.PLANNING
        assert "CUDA_VISIBLE_DEVICES" in facts.status


def test_visible_order_decides_device_zero() -> None:
    nvml = FakeNvml([gpu(H100, 0), gpu(B200, 1)])
    assert probe_gpus(nvml=nvml, env={"CUDA_VISIBLE_DEVICES": "1,0"}).is_blackwell
    assert not probe_gpus(nvml=nvml, env={"CUDA_VISIBLE_DEVICES": "0,1"}).is_blackwell


def test_visible_indices_unset_is_all() -> None:
    assert visible_indices(None, ["a", "b"]) is None


@pytest.mark.parametrize(
    ("error", "words"),
    [
        (NVMLError_LibraryNotFound("NVML Shared Library Not Found"), "no NVIDIA driver found"),
        (NVMLError_DriverNotLoaded("Driver Not Loaded"), "driver is not loaded"),
    ],
)
def test_no_driver_is_planning_mode(error: Exception, words: str) -> None:
    facts = probe_gpus(nvml=FakeNvml([], init_error=error), env={})
    assert facts.mode is GpuMode.PLANNING
    assert words in facts.status
    assert "planning mode" in facts.status
    assert "\n" not in facts.status
    assert facts.count == 8  # the default planning preset, H100x8


def test_no_gpu_is_planning_mode() -> None:
    facts = probe_gpus(nvml=FakeNvml([]), env={})
    assert facts.mode is GpuMode.PLANNING
    assert "sees no GPU" in facts.status


def test_nvml_error_midway_is_planning_mode() -> None:
    nvml = FakeNvml([gpu(H100, 0)], fail_on="memory")
    facts = probe_gpus(nvml=nvml, env={})
    assert facts.mode is GpuMode.PLANNING
    assert "NVML error" in facts.status
    assert nvml.shutdowns == 1


def test_without_pynvml_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_pynvml(name: str, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        if name == "pynvml":
            raise ImportError("no pynvml")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pynvml)
    facts = probe_gpus(env={})
    assert facts.mode is GpuMode.PLANNING
    assert "nvidia-ml-py is not installed" in facts.status


@pytest.mark.parametrize(
    ("spec", "name", "count", "cap", "blackwell"),
    [
        ("H100x8", "NVIDIA H100 80GB HBM3", 8, (9, 0), False),
        ("b200x8", "NVIDIA B200", 8, (10, 0), True),
        ("RTX5090x1", "NVIDIA GeForce RTX 5090", 1, (12, 0), True),
        ("A100x4", "NVIDIA A100-SXM4-80GB", 4, (8, 0), False),
        ("H200x8", "NVIDIA H200", 8, (9, 0), False),
        ("L40Sx4", "NVIDIA L40S", 4, (8, 9), False),
        ("H100", "NVIDIA H100 80GB HBM3", 1, (9, 0), False),
        ("rtx-5090 x 2", "NVIDIA GeForce RTX 5090", 2, (12, 0), True),
    ],
)
def test_planning_presets(
    spec: str, name: str, count: int, cap: tuple[int, int], blackwell: bool
) -> None:
    facts = parse_gpu_spec(spec)
    assert facts.mode is GpuMode.PLANNING
    assert facts.count == count
    assert facts.devices[0].name == name
    assert facts.devices[0].capability == cap
    assert facts.is_blackwell is blackwell


def test_preset_memory_is_real() -> None:
    by_key = {p.key: p for p in PRESETS}
    assert by_key["H100"].memory_mib == 81559
    assert by_key["H200"].memory_mib > 140_000
    assert by_key["B200"].memory_mib > 180_000
    assert by_key["RTX5090"].memory_mib == 32607


@pytest.mark.parametrize("bad", ["H1000x8", "H100x0", "H100x65", "x8", ""])
def test_bad_gpu_spec(bad: str) -> None:
    with pytest.raises(UserError) as exc:
        parse_gpu_spec(bad)
    assert "\n" not in str(exc.value)


def test_bad_gpu_spec_suggests() -> None:
    with pytest.raises(UserError, match="did you mean H100"):
        parse_gpu_spec("H10x8")


def test_planning_fallback_is_the_preset_with_a_reason() -> None:
    facts = planning_fallback("no NVIDIA driver found", "B200x2")
    assert facts.status.startswith("no NVIDIA driver found — planning mode with ")
    assert replace(facts, status="") == replace(parse_gpu_spec("B200x2"), status="")
