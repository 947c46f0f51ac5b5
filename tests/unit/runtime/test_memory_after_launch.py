"""After launch: the monitor compares the plan with sglang's own start-up lines
and keeps the measured start-up cost for the next plan on the same GPUs."""

from __future__ import annotations

from dataclasses import replace

from sglaunch.facts.model import load_model_facts
from sglaunch.facts.presets import parse_gpu_spec
from sglaunch.flags.schema import bundled_schema
from sglaunch.memory.assumptions import memory_facts
from sglaunch.runtime import EventKind, Status
from sglaunch.runtime.after_launch import Prediction
from sglaunch.session import LaunchSession
from sglaunch.validators.facts import GpuMode
from tests.support.processes import Recorder, fake_spec, fast_monitor

H100 = "NVIDIA H100 80GB HBM3"


def predicted(gpu_name: str | None) -> Prediction:
    session = LaunchSession(bundled_schema())
    session.request_model("example:llama-3.1-8b")
    session.model_loaded("example:llama-3.1-8b", load_model_facts("example:llama-3.1-8b"))
    session.choose_preset("H100x1")
    prediction = session.prediction()
    assert prediction is not None and prediction.gpu_name is None  # a preset: never stored
    return replace(prediction, gpu_name=gpu_name, driver="575.57.08")


def test_the_monitor_compares_the_plan_with_the_log_and_keeps_the_measured_cost() -> None:
    spec = fake_spec(prediction=predicted(H100))
    monitor = fast_monitor(spec)
    rec = Recorder(monitor)
    try:
        monitor.start()
        assert monitor.wait_ready(30), monitor.log_tail(20)
        [event] = rec.of(EventKind.MEMORY)
        assert "KV tokens" in event.message and "start-up cost measured" in event.message
        comparison = monitor.snapshot().memory
        assert comparison is not None
        weights = comparison.row("weights per GPU")
        assert weights is not None and weights.actual == 15.1  # the stand-in's Load weight end
        # P: the stand-in logs `Load weight begin. avail mem=78.50 GB` on an H100's 79.6 GiB
        cost = comparison.measured_startup_cost_bytes
        assert cost is not None and 0 < cost < 2 * 1024**3
    finally:
        monitor.stop()
    assert monitor.snapshot().status is Status.STOPPED
    # the next plan on an H100 with this driver uses it, and says so
    gpu = replace(parse_gpu_spec("H100x1"), mode=GpuMode.NVML, driver_version="575.57.08")
    facts = memory_facts(gpu)
    assert facts.startup_cost_by_tp.get(1) == cost
    assert facts.calibration_source


def test_a_preset_launch_is_compared_but_never_stored() -> None:
    monitor = fast_monitor(fake_spec(prediction=predicted(None)))
    try:
        monitor.start()
        assert monitor.wait_ready(30)
        assert monitor.snapshot().memory is not None
    finally:
        monitor.stop()
    gpu = replace(parse_gpu_spec("H100x1"), mode=GpuMode.NVML, driver_version="575.57.08")
    assert memory_facts(gpu).startup_cost_by_tp == {}
