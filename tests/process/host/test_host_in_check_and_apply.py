"""The host checks where a launch is decided: `check` on this machine's GPUs, every
`--apply` before it launches; and the NVML collector against the fake driver."""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from sglaunch.facts import gpu as gpu_facts
from sglaunch.host.collect import read_nvml
from tests.fakes.nvml import FakeGpu, FakeNvml

H100 = ("NVIDIA H100 80GB HBM3", (9, 0), 80.0)


def fake_nvml() -> FakeNvml:
    return FakeNvml(
        [FakeGpu(H100[0], H100[1], H100[2], used_gib=20.0, uuid=f"GPU-{i:04d}") for i in range(2)]
    )


def test_the_nvml_collector_reads_the_drivers_cuda_and_what_is_held() -> None:
    nv = read_nvml(fake_nvml())
    assert nv.driver_cuda == "12.8" and nv.count == 2 and nv.error == ""
    assert nv.uuids == ("GPU-0000", "GPU-0001")
    assert nv.held[0].used == 20 * 1024**3 and nv.held[0].total == 80 * 1024**3


def _check(
    monkeypatch: pytest.MonkeyPatch, gpu_spec: str | None, as_json: bool = False
) -> tuple[int, str]:
    from sglaunch.cli.check import check_command

    real = gpu_facts.probe_gpus
    monkeypatch.setattr(gpu_facts, "probe_gpus", lambda **kw: real(nvml=fake_nvml(), env={}))
    monkeypatch.setenv("http_proxy", "http://proxy:3128")
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    err, out = io.StringIO(), io.StringIO()
    code = check_command(
        model="example:llama-3.1-8b",
        sglang_tokens=[],
        gpu_spec=gpu_spec,
        as_json=as_json,
        use_oracle=False,
        env_pairs=None,
        sglang_python=None,
        oracle_timeout=5,
        out=out,
        err=err,
    )
    return code, out.getvalue() if as_json else err.getvalue()


def test_check_on_this_machines_gpus_checks_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    code, err = _check(monkeypatch, None)
    assert "host-proxy-intercepts-warmup" in err
    assert code == 1


def test_check_json_carries_the_host_findings(monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = _check(monkeypatch, None, as_json=True)
    data = json.loads(out)
    assert data["ok"] is False and code == 1
    assert "host-proxy-intercepts-warmup" in {f["code"] for f in data["findings"]}


def test_check_for_a_planned_machine_leaves_the_host_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    code, err = _check(monkeypatch, "H100x2")
    assert "host-" not in err
    assert code == 0


def test_apply_does_not_launch_on_a_host_that_is_not_ready(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
    env.update(SGLAUNCH_HOME=str(home), http_proxy="http://proxy:3128")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    save = (
        "from sglaunch.profiles import Profile, ProfileStore; import sys; "
        f"ProfileStore().save(Profile(name='p', model='example:minicpm-sala', flags={{'port': {port}}}, "
        "sglang_python=sys.executable))"
    )
    subprocess.run([sys.executable, "-c", save], env=env, check=True, timeout=60)
    res = subprocess.run(
        [sys.executable, "-m", "sglaunch", "--profile", "p", "--apply", "--no-oracle", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert res.returncode == 1, res.stderr
    assert "not launching: this host is not ready" in res.stderr
    events = [json.loads(line) for line in res.stdout.splitlines()]
    host = next(e for e in events if e["event"] == "host")
    assert host["ok"] is False
    assert "host-proxy-intercepts-warmup" in {f["code"] for f in host["findings"]}
    assert not any(e["event"] == "spawned" for e in events)
    assert not list((home / "data" / "runs").glob("*/run.json"))
