"""The real host collectors on this machine: a small /dev/shm in a private mount namespace,
a port this test holds, proxy variables, a checkpoint with a shard gone, odd hosts."""

from __future__ import annotations

import json
import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sglaunch.host.collect import (
    Collectors,
    collect_host_facts,
    probe_ports,
    read_checkpoint,
    read_meminfo,
    read_nvml,
    read_packages,
    read_rendezvous,
    read_shm,
)
from sglaunch.validators.rules.host import host_checks

ENV = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}


def doctor(
    *args: str, env: dict[str, str] | None = None, prefix: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    cmd = [
        *(prefix or []),
        sys.executable,
        "-m",
        "sglaunch",
        "doctor",
        "--json",
        "--sglang-python",
        sys.executable,
        *args,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env or ENV)


def codes(res: subprocess.CompletedProcess[str]) -> dict[str, dict]:
    assert "Traceback" not in res.stderr, res.stderr
    return {f["code"]: f for f in json.loads(res.stdout)["findings"]}


def test_a_16m_dev_shm_in_a_private_mount_namespace_is_an_error() -> None:
    script = (
        "mount -t tmpfs -o size=16M tmpfs /dev/shm && exec "
        f"{sys.executable} -m sglaunch doctor --json --sglang-python {sys.executable} -- --tp 2"
    )
    res = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env=ENV,
    )
    found = codes(res)
    assert res.returncode == 1, res.stderr
    shm = found["host-shm-too-small"]
    assert shm["severity"] == "error" and "/dev/shm is 16 MiB" in shm["message"]
    # outside the namespace this machine's /dev/shm is the host's own, and large
    size, why = read_shm()
    assert why == "" and size is not None and size > 16 * 1024**2


@pytest.fixture
def held_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def test_a_port_this_test_holds_is_named_with_its_process(held_port: int) -> None:
    (use,) = probe_ports([(held_port, "--port (the HTTP server)")], "127.0.0.1")
    assert not use.free and f"pid {os.getpid()}" in use.holder
    assert use.alternative is not None and use.alternative != held_port
    res = doctor("--", "--port", str(held_port))
    finding = codes(res)["host-port-in-use"]
    assert res.returncode == 1
    assert f"port {held_port}" in finding["message"] and f"pid {os.getpid()}" in finding["message"]
    assert finding["fixes"][0]["set"]["port"] != held_port


def test_a_free_port_is_no_finding() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    res = doctor("--", "--port", str(port))
    assert "host-port-in-use" not in codes(res)


def test_proxy_variables_without_no_proxy() -> None:
    res = doctor(env={**ENV, "HTTPS_PROXY": "http://proxy:3128", "http_proxy": "http://proxy:3128"})
    assert codes(res)["host-proxy-intercepts-warmup"]["severity"] == "error"
    assert res.returncode == 1
    ok = doctor(env={**ENV, "http_proxy": "http://proxy:3128", "NO_PROXY": "localhost,127.0.0.1"})
    assert "host-proxy-intercepts-warmup" not in codes(ok)


def _shard(path: Path, names: list[str]) -> None:
    header = {
        n: {"dtype": "F32", "shape": [2], "data_offsets": [8 * i, 8 * i + 8]}
        for i, n in enumerate(names)
    }
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * 8 * len(names))


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    folder = tmp_path / "tiny"
    folder.mkdir()
    (folder / "config.json").write_text(
        json.dumps({"architectures": ["LlamaForCausalLM"], "model_type": "llama"})
    )
    shards = {
        "model-00001-of-00002.safetensors": ["a", "b"],
        "model-00002-of-00002.safetensors": ["c"],
    }
    weight_map = {}
    for name, tensors in shards.items():
        _shard(folder / name, tensors)
        weight_map.update(dict.fromkeys(tensors, name))
    (folder / "model.safetensors.index.json").write_text(json.dumps({"weight_map": weight_map}))
    return folder


def test_a_whole_checkpoint_passes(checkpoint: Path) -> None:
    ck = read_checkpoint(str(checkpoint), ENV)
    assert ck.local and len(ck.shards) == 2
    assert all(s.actual == s.expected for s in ck.shards)
    assert not [f for f in host_checks({}, _facts_with(ck)) if f.code.startswith("host-shard")]


def _facts_with(ck: object) -> object:
    from sglaunch.validators.rules.host import HostFacts

    return HostFacts(checkpoint=ck)  # type: ignore[arg-type]


def test_a_removed_shard_and_a_truncated_one(checkpoint: Path) -> None:
    (checkpoint / "model-00002-of-00002.safetensors").unlink()
    first = checkpoint / "model-00001-of-00002.safetensors"
    first.write_bytes(first.read_bytes()[:-5])
    res = doctor("--model", str(checkpoint))
    found = codes(res)
    assert res.returncode == 1
    assert "model-00002-of-00002.safetensors" in found["host-shard-missing"]["message"]
    assert "model-00001-of-00002.safetensors" in found["host-shard-truncated"]["message"]


def test_an_unresolvable_rendezvous_name_is_a_finding_in_bounded_time() -> None:
    t0 = time.monotonic()
    rv = read_rendezvous("no-such-host.invalid:20000", timeout=5)
    assert rv.error and "no-such-host.invalid" in rv.error
    assert time.monotonic() - t0 < 6
    res = doctor(
        "--", "--nnodes", "2", "--node-rank", "1", "--dist-init-addr", "no-such-host.invalid:20000"
    )
    assert codes(res)["host-rendezvous-unresolvable"]["severity"] == "error"


def test_a_hanging_interpreter_is_given_up_on(tmp_path: Path) -> None:
    slow = tmp_path / "python"
    slow.write_text("#!/bin/sh\nsleep 30\n")
    slow.chmod(0o755)
    t0 = time.monotonic()
    pk = read_packages(str(slow), timeout=1)
    assert time.monotonic() - t0 < 5
    assert pk.error == "no answer in 1 s"
    missing = read_packages(str(tmp_path / "gone"))
    assert missing.error and missing.sglang is None


def test_the_launch_interpreter_is_read_without_importing_torch() -> None:
    python = os.environ.get("SGLAUNCH_SGLANG_PYTHON") or str(
        Path(__file__).parents[3] / ".venv-sglang/bin/python"
    )
    pk = read_packages(python)
    assert pk.error == "" and pk.sglang and pk.torch
    # the CPU build's torch/version.py says cuda = None
    assert pk.torch_cuda is None
    assert ("torch", pk.torch.split("+")[0]) in pk.pins or any(n == "torch" for n, _ in pk.pins)
    assert any(n.startswith(("flashinfer", "sglang-kernel", "sgl-kernel")) for n, _ in pk.pins)


def test_no_nvml_here_is_said_not_raised() -> None:
    nv = read_nvml()
    assert nv.driver_cuda is None and nv.error


def test_an_unreadable_proc_is_a_note_not_a_traceback(tmp_path: Path) -> None:
    gone = tmp_path / "proc" / "meminfo"
    total, avail, why = read_meminfo(gone)
    assert total is None and avail is None and str(gone) in why
    facts = collect_host_facts(
        {"enable_hierarchical_cache": True, "hicache_size": 10**6},
        environ=ENV,
        python=None,
        model=None,
        collectors=Collectors(meminfo=lambda: read_meminfo(gone)),
    )
    found = host_checks({"enable_hierarchical_cache": True, "hicache_size": 10**6}, facts)
    assert [f.code for f in found if f.code.startswith("host-memory")] == []
    assert any(f.code == "host-fact-unknown" and str(gone) in f.message for f in found)
