"""Planning mode reports no invented facts: a preset's driver and CUDA versions are
assumptions, null in `check --json`'s gpu object and marked "assumed" on screen."""

from __future__ import annotations

import json

import pytest

from sglaunch.cli.main import main
from sglaunch.facts.gpu import probe_gpus
from sglaunch.facts.presets import DEFAULT_CUDA, DEFAULT_DRIVER, parse_gpu_spec
from tests.fakes.nvml import H100, FakeNvml, NVMLError_LibraryNotFound
from tests.fakes.nvml import gpu as fake_gpu
from tests.support.tui import make_app, plain, settle_app


def check_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    rc = main(["check", "--model", "example:llama-3.1-8b", "--no-oracle", "--json", *argv])
    out, err = capsys.readouterr()
    assert rc == 0, err
    data: dict[str, object] = json.loads(out)
    return data


def test_a_presets_versions_are_null_and_marked_assumed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    gpu = check_json(["--gpu", "H100x8"], capsys)["gpu"]
    assert isinstance(gpu, dict)
    assert gpu["driver_version"] is None and gpu["cuda_version"] is None
    assert gpu["planning"] is True
    assert gpu["assumed"] == {"driver_version": DEFAULT_DRIVER, "cuda_version": DEFAULT_CUDA}


def test_no_driver_reports_no_versions(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sglaunch.facts.gpu as gpu_facts

    nvml = FakeNvml([], init_error=NVMLError_LibraryNotFound("NVML Shared Library Not Found"))
    real = gpu_facts.probe_gpus
    monkeypatch.setattr(gpu_facts, "probe_gpus", lambda **kw: real(nvml=nvml, **kw))
    gpu = check_json([], capsys)["gpu"]
    assert isinstance(gpu, dict) and gpu["mode"] == "planning"
    assert (gpu["driver_version"], gpu["cuda_version"]) == (None, None)
    assert isinstance(gpu["assumed"], dict)


def test_the_rules_still_use_the_assumed_cuda() -> None:
    # sglang's Blackwell check needs CUDA >= 12.8: the assumption keeps it working
    assert parse_gpu_spec("B200x8").is_blackwell


async def test_the_gpu_panel_marks_the_cuda_version_assumed() -> None:
    app = make_app(gpu_spec="H100x8")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        text = plain(app.main.query_one("#gpu-panel"))
        assert f"CUDA {DEFAULT_CUDA} assumed" in text


def test_a_probed_gpu_reports_its_own_versions() -> None:
    facts = probe_gpus(nvml=FakeNvml([fake_gpu(H100, 0)]), env={})
    assert not facts.versions_assumed and facts.cuda_version
