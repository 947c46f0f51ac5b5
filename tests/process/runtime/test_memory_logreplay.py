"""After launch: sglang's start-up lines (the stand-in server's format) read through the log
parser, compared with the prediction, and the measured start-up cost calibrating the next plan."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from sglaunch.memory import calibration
from sglaunch.memory.assumptions import with_memory_facts
from sglaunch.runtime.after_launch import compare, record_calibration, startup_memory_from_lines
from sglaunch.validators.facts import GpuDevice, GpuFacts, GpuMode
from sglaunch.validators.memory.baseline import GIB, MemoryFacts
from sglaunch.validators.memory.plan import MemoryPlan, plan_memory
from tests.conftest import make_input

ROOT = Path(__file__).resolve().parents[3]
FAKE = ROOT / "tests" / "fake_sglang_server.py"
H100_TOTAL = 81559 * (1 << 20)
DRIVER = "575.57.08"


def nvml_h100s(count: int, free: int = H100_TOTAL - (1 << 29)) -> GpuFacts:
    """What NVML reports for idle H100s (0.5 GiB used by the driver's own context)."""
    devices = tuple(
        GpuDevice(
            i,
            "NVIDIA H100 80GB HBM3",
            H100_TOTAL,
            (9, 0),
            memory_free=free,
            memory_used=H100_TOTAL - free,
        )
        for i in range(count)
    )
    return GpuFacts(mode=GpuMode.NVML, devices=devices, driver_version=DRIVER, cuda_version="12.9")


def transcript(plan: MemoryPlan, *, baseline_gib: float, tp: int) -> list[str]:
    """What sglang logs when the baseline comes out at `baseline_gib`, in the stand-in
    server's format (`[time TPn] msg`, every rank); the numbers follow sglang's own
    arithmetic for that baseline (the plan recomputed with --assume-free-gib)."""
    weights = (plan.weights_bytes or 0) / GIB
    after = baseline_gib - weights
    kv = (plan.kv_budget_bytes or 0) / GIB
    pool_end = after - kv
    lines = []
    for rank in range(tp):
        tag = f" TP{rank}" if tp > 1 else ""
        skew = 0.03 * rank  # other ranks differ a little; rank 0 is the one compared
        stamp = f"[2025-06-01 12:00:0{rank % 10}{tag}]"
        lines += [
            f"{stamp} Init parallel begin.",
            f"{stamp} Memory baseline taken. mem usage=0.45 GB",
            f"{stamp} Load weight begin. avail mem={baseline_gib - skew:.2f} GB",
            f"{stamp} Load weight end. elapsed=8.00 s, type=LlamaForCausalLM, avail mem={after - skew:.2f} GB, "
            f"mem usage={weights:.2f} GB.",
            f"{stamp} KV Cache is allocated. dtype: torch.bfloat16, #tokens: {plan.max_total_num_tokens}, "
            f"K size: {kv / 2:.2f} GB, V size: {kv / 2:.2f} GB",
            f"{stamp} Memory pool end. avail mem={pool_end - skew:.2f} GB",
            f"{stamp} Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, avail mem={pool_end:.2f} GB",
            f"{stamp} Capture target decode CUDA graph end. bs=[1, 2, 4], elapsed=6.00 s, mem usage=0.80 GB, "
            f"avail mem={pool_end - 0.8:.2f} GB.",
        ]
    lines.append(
        f"[2025-06-01 12:00:18{' TP0' if tp > 1 else ''}] max_total_num_tokens={plan.max_total_num_tokens}, "
        f"chunked_prefill_size={plan.knobs.chunked_prefill_size}, max_prefill_tokens=16384, "
        f"max_running_requests={plan.max_running_requests}, context_len={plan.knobs.context_len}, "
        f"available_gpu_mem={pool_end - 0.8:.2f} GB"
    )
    return lines


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_replayed_startup_matches_the_prediction_and_calibrates(tp: int, tmp_path: Path) -> None:
    store = tmp_path / "cal.json"
    base = make_input("example:llama-3.1-8b", ["--tp", str(tp)], "H100x8")
    gpu = nvml_h100s(8)
    inp = replace(base, gpu=gpu, memory=MemoryFacts())
    predicted = plan_memory(inp)
    assert predicted.baseline is not None and predicted.baseline.source == "nvml"
    # the launch had a larger start-up cost than the estimate: 2.3 GiB more
    actual_baseline = predicted.baseline.free_bytes / GIB - 2.3
    truth = plan_memory(
        replace(inp, memory=MemoryFacts(assumed_free_bytes=int(actual_baseline * GIB)))
    )
    lines = transcript(truth, baseline_gib=actual_baseline, tp=tp)
    seen = startup_memory_from_lines(lines)
    assert seen.complete
    assert seen.baseline_gib == pytest.approx(
        actual_baseline, abs=0.006
    )  # rank 0's, not a skewed rank's
    assert seen.kv_tokens == seen.max_total_num_tokens == truth.max_total_num_tokens
    cmp = compare(predicted, seen)
    row = cmp.row("max_total_num_tokens")
    assert row is not None and row.predicted is not None and row.actual is not None
    assert row.predicted > row.actual  # the estimate was optimistic by 2.3 GiB
    weights = cmp.row("weights per GPU")
    assert weights is not None and weights.error_pct == pytest.approx(0, abs=0.2)
    measured = cmp.measured_startup_cost_bytes
    assert measured is not None
    assert measured == pytest.approx(H100_TOTAL - actual_baseline * GIB, abs=0.006 * GIB)
    # stored, the next plan on this GPU, driver and TP uses it, and says so
    assert record_calibration(
        cmp, gpu_name=gpu.devices[0].name, driver=DRIVER, tp_size=tp, store=store
    )
    costs, source = calibration.costs_for(gpu.devices[0].name, DRIVER, store)
    again = plan_memory(
        replace(inp, memory=MemoryFacts(startup_cost_by_tp=costs, calibration_source=source))
    )
    assert again.max_total_num_tokens is not None and truth.max_total_num_tokens is not None
    # NVML free (total - 0.5 GiB) less the measured cost is within 0.5 GiB of the truth
    err = abs(again.max_total_num_tokens - truth.max_total_num_tokens)
    assert err <= 0.6 * (again.tokens_per_gib or 0)
    assert any("measured at TP" in a for a in again.assumptions)
    # another TP size keeps the estimate
    other = plan_memory(
        replace(
            inp,
            flags={**inp.flags, "tp_size": tp * 2},
            memory=MemoryFacts(startup_cost_by_tp=costs),
        )
    )
    assert not any("measured at TP" in a for a in other.assumptions)


def test_memory_facts_read_the_store_for_real_gpus_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLAUNCH_HOME", str(tmp_path))
    calibration.record("NVIDIA H100 80GB HBM3", DRIVER, 2, 3 * GIB, source="run-1")
    nvml_inp = replace(
        make_input("example:llama-3.1-8b", ["--tp", "2"], "H100x8"), gpu=nvml_h100s(2)
    )
    assert with_memory_facts(nvml_inp).memory.startup_cost_by_tp == {2: 3 * GIB}  # type: ignore[union-attr]
    preset_inp = make_input("example:llama-3.1-8b", ["--tp", "2"], "H100x8")
    assert with_memory_facts(preset_inp).memory.startup_cost_by_tp == {}  # type: ignore[union-attr]


def test_the_stand_in_servers_own_startup_is_read(tmp_path: Path) -> None:
    """The real stand-in server's start-up (ok scenario, TP 2), through the same parser."""
    env = {
        **os.environ,
        "FAKE_SGLANG_SCENARIO": "ok",
        "FAKE_SGLANG_TIME_SCALE": "0.01",
        "FAKE_SGLANG_MAX_TOTAL_TOKENS": "123456",
    }
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, str(FAKE), "--model-path", "x/y", "--tp-size", "2", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,
    )
    lines: list[str] = []
    deadline = time.monotonic() + 60
    try:
        assert proc.stdout is not None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "max_total_num_tokens=" in line:
                break
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    seen = startup_memory_from_lines(lines)
    assert (seen.baseline_gib, seen.weights_gib, seen.after_weights_gib) == (78.5, 15.1, 63.4)
    assert seen.kv_tokens == seen.max_total_num_tokens == 123456
    assert seen.kv_gib == pytest.approx(53.4)
    assert seen.pool_end_gib == 9.8
    plan = plan_memory(make_input("example:llama-3.1-8b", ["--tp", "2"], "H100x8"))
    cmp = compare(plan, seen)
    assert cmp.measured_startup_cost_bytes == H100_TOTAL - int(78.5 * GIB)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
