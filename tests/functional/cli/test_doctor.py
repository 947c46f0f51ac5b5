"""`sglaunch doctor` end to end: the report, --json like check's, exit codes, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ENV = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}


def sglaunch(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sglaunch", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env or ENV,
    )


def test_a_launch_python_without_sglang_makes_the_host_not_ready() -> None:
    # sglaunch's own interpreter has no sglang: the launch would stop at once, GPUs or not
    res = sglaunch("doctor", "--model", "example:minicpm-sala", "--sglang-python", sys.executable)
    assert res.returncode == 1, res.stderr
    assert res.stdout == ""  # findings go to stderr; stdout is for data
    assert res.stderr.startswith("sglaunch doctor · example:minicpm-sala")
    assert "✗ error    host-sglang-missing" in res.stderr
    assert res.stderr.rstrip().endswith("the host is not ready for this launch")


@pytest.mark.parametrize("port", ["99999", "0", "-1"])
def test_a_port_no_host_can_listen_on_is_a_finding_of_doctor_and_check(port: str) -> None:
    flags = ["--", "--port", port]
    res = sglaunch("doctor", "--json", "--model", "example:minicpm-sala", *flags)
    found = {f["code"]: f for f in json.loads(res.stdout)["findings"]}
    assert res.returncode == 1
    assert found["port-range"]["severity"] == "error" and found["port-range"]["flags"] == ["--port"]
    check = sglaunch(
        "check",
        "--json",
        "--no-oracle",
        "--gpu",
        "H100x8",
        "--model",
        "example:minicpm-sala",
        *flags,
    )
    assert check.returncode == 1
    assert "port-range" in {f["code"] for f in json.loads(check.stdout)["findings"]}


def test_the_ports_at_the_ends_of_the_range_pass() -> None:
    for port in ("1", "65535"):
        check = sglaunch(
            "check", "--json", "--no-oracle", "--gpu", "H100x8", "--model",
            "example:minicpm-sala", "--", "--port", port,
        )  # fmt: skip
        assert "port-range" not in {f["code"] for f in json.loads(check.stdout)["findings"]}


def test_doctor_json_is_one_object_like_check_json() -> None:
    res = sglaunch(
        "doctor",
        "--json",
        "--sglang-python",
        sys.executable,
        env={**ENV, "http_proxy": "http://p:3128"},
    )
    data = json.loads(res.stdout)
    assert set(data) == {"ok", "findings"}
    assert data["ok"] is False and res.returncode == 1
    proxy = next(f for f in data["findings"] if f["code"] == "host-proxy-intercepts-warmup")
    assert proxy["severity"] == "error" and proxy["source"] == "builtin"
    assert proxy["flags"] == ["--host"] and proxy["fixes"][0]["label"].startswith(
        "export no_proxy="
    )


def test_the_fix_of_a_finding_is_explained_by_its_card() -> None:
    res = sglaunch("explain", "host-shm-too-small")
    assert res.returncode == 0
    assert "/dev/shm" in res.stdout and "--shm-size" in res.stdout


def test_doctor_is_listed_in_the_help() -> None:
    assert "doctor" in sglaunch("--help").stdout


def test_planned_gpus_stand_in_for_the_count_without_a_driver() -> None:
    res = sglaunch(
        "doctor", "--json", "--gpu", "H100x2", "--sglang-python", sys.executable,
        "--", "--tp", "2", "--base-gpu-id", "1",
    )  # fmt: skip
    found = {f["code"]: f for f in json.loads(res.stdout)["findings"]}
    assert res.returncode == 1
    assert found["host-gpus-out-of-range"]["fixes"][0]["set"] == {"base_gpu_id": 0}


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--nodes", "0"], "--nodes 0"),
        (["--gpu", "NOPEx2"], "NOPE"),
        (["--profile", "no-such-profile"], "no-such-profile"),
        (["--model", "m", "--profile", "p"], "not allowed with"),
        (["--", "--tp-size", "two"], "two"),
        (["--sglang-python", "/no/such/python"], "/no/such/python"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], words: str, tmp_path: Path) -> None:
    res = sglaunch("doctor", *args, env={**ENV, "SGLAUNCH_HOME": str(tmp_path)})
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert words in res.stderr
    assert any(line.startswith("sglaunch") for line in lines) and len(lines) <= 3


def test_a_missing_model_folder_is_a_finding_not_a_traceback(tmp_path: Path) -> None:
    res = sglaunch(
        "doctor", "--json", "--sglang-python", sys.executable, "--model", str(tmp_path / "none")
    )
    assert res.returncode == 1 and "Traceback" not in res.stderr
    found = {f["code"] for f in json.loads(res.stdout)["findings"]}
    assert "host-checkpoint-unreadable" in found


def test_doctor_reads_a_profiles_launch(tmp_path: Path) -> None:
    env = {**ENV, "SGLAUNCH_HOME": str(tmp_path), "http_proxy": "http://p:3128"}
    save = (
        "from sglaunch.profiles import Profile, ProfileStore; import sys; "
        "ProfileStore().save(Profile(name='p', model='example:llama-3.1-8b', "
        "flags={'host': '127.0.0.1', 'tp_size': 2}, sglang_python=sys.executable))"
    )
    subprocess.run([sys.executable, "-c", save], env=env, check=True, timeout=60)
    res = sglaunch("doctor", "--profile", "p", "--json", env=env)
    assert res.returncode == 1, res.stderr
    assert res.stderr.startswith(f"sglaunch doctor · example:llama-3.1-8b · {sys.executable}")
    found = {f["code"]: f for f in json.loads(res.stdout)["findings"]}
    assert "127.0.0.1" in found["host-proxy-intercepts-warmup"]["message"]
