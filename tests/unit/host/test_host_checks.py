"""The host checks as data: launch flags and made-up host facts in, findings out."""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Any

import pytest

from sglaunch.validators.findings import Severity
from sglaunch.validators.registry import get_card
from sglaunch.validators.rules.host import HostFacts, host_checks, ports_to_bind
from sglaunch.validators.rules.host.checks import CHECKS, bypassed, local_ranks
from sglaunch.validators.rules.host.facts import (
    UNLIMITED,
    Checkpoint,
    GpuHeld,
    PortUse,
    PythonPackages,
    Rendezvous,
    Shard,
)

GIB = 1024**3
MIB = 1024**2
PY = "/envs/sg/bin/python"
PINS = (("flashinfer_python", "0.7.2"), ("sglang-kernel", "0.4.10"), ("torch", "2.14.1"))
GOOD_PKGS = PythonPackages(
    PY,
    sglang="0.5.23",
    torch="2.14.1+cu128",
    torch_cuda="12.8",
    pins=PINS,
    installed=MappingProxyType(
        {"flashinfer_python": "0.7.2", "sglang-kernel": "0.4.10", "torch": "2.14.1+cu128"}
    ),
)
# a healthy GPU host: 8 GPUs, driver CUDA 12.8, room everywhere
HEALTHY = HostFacts(
    packages=GOOD_PKGS,
    driver_cuda="12.8",
    gpu_count=8,
    gpu_uuids=tuple(f"GPU-{i:04d}" for i in range(8)),
    ports=(PortUse(30000, "--port (the HTTP server)", True),),
    shm_bytes=64 * GIB,
    mem_total=512 * GIB,
    mem_available=480 * GIB,
    checkpoint=Checkpoint(
        "m", True, "/m", "model.safetensors.index.json", (Shard("a", 10, 10),), 10
    ),
)


def pkgs(**kw: Any) -> PythonPackages:
    return replace(GOOD_PKGS, **kw)


def installed(**versions: str | None) -> Any:
    base = dict(GOOD_PKGS.installed)
    base.update({k.replace("__", "-"): v for k, v in versions.items()})
    return MappingProxyType(base)


# (name, flags, changed facts, the finding code expected, its severity)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], str, Severity]] = [
    ("no sglang", {}, {"packages": pkgs(sglang=None)}, "host-sglang-missing", Severity.ERROR),
    (
        # the launch fails at once, GPUs or not: an error even on a planning host
        "no sglang, no driver here",
        {},
        {"packages": pkgs(sglang=None), "driver_cuda": None, "gpu_count": None},
        "host-sglang-missing",
        Severity.ERROR,
    ),
    ("no torch", {}, {"packages": pkgs(torch=None)}, "host-torch-missing", Severity.ERROR),
    (
        "interpreter hangs",
        {},
        {"packages": PythonPackages(PY, error="no answer in 20 s")},
        "host-python-unusable",
        Severity.ERROR,
    ),
    (
        "torch for a newer CUDA",
        {},
        {"packages": pkgs(torch_cuda="13.0"), "driver_cuda": "12.8"},
        "host-torch-cuda-newer-than-driver",
        Severity.ERROR,
    ),
    (
        "CPU torch on a GPU host",
        {},
        {"packages": pkgs(torch_cuda=None)},
        "host-torch-cpu-only",
        Severity.ERROR,
    ),
    (
        "no NVML",
        {},
        {"driver_cuda": None, "gpu_count": None, "nvml_error": "libnvidia-ml.so is missing"},
        "host-no-nvml",
        Severity.INFO,
    ),
    (
        "flashinfer missing",
        {},
        {"packages": pkgs(installed=installed(flashinfer_python=None))},
        "host-package-missing",
        Severity.ERROR,
    ),
    (
        "sglang-kernel another release",
        {},
        {"packages": pkgs(installed=installed(sglang__kernel="0.4.9"))},
        "host-package-mismatch",
        Severity.ERROR,
    ),
    (
        "port held",
        {"port": 30000},
        {
            "ports": (
                PortUse(
                    30000, "--port (the HTTP server)", False, "pid 7 (python)", alternative=30001
                ),
            )
        },
        "host-port-in-use",
        Severity.ERROR,
    ),
    (
        "port unbindable",
        {"host": "10.9.9.9"},
        {
            "ports": (
                PortUse(
                    30000,
                    "--port (the HTTP server)",
                    False,
                    error="Cannot assign requested address",
                ),
            )
        },
        "host-port-unbindable",
        Severity.WARNING,
    ),
    (
        "http_proxy without no_proxy",
        {},
        {"env": {"HTTP_PROXY": "http://proxy:3128"}},
        "host-proxy-intercepts-warmup",
        Severity.ERROR,
    ),
    (
        "http_proxy, no_proxy names another host",
        {"host": "0.0.0.0"},
        {"env": {"http_proxy": "http://p:1", "no_proxy": "example.com"}},
        "host-proxy-intercepts-warmup",
        Severity.ERROR,
    ),
    (
        "https_proxy only",
        {},
        {"env": {"https_proxy": "http://p:1"}},
        "host-proxy-intercepts-warmup",
        Severity.WARNING,
    ),
    (
        "docker's 64 MB shm, tp 2",
        {"tp_size": 2},
        {"shm_bytes": 64 * MIB},
        "host-shm-too-small",
        Severity.ERROR,
    ),
    (
        "2 GiB shm, tp 8",
        {"tp_size": 8},
        {"shm_bytes": 2 * GIB},
        "host-shm-too-small",
        Severity.WARNING,
    ),
    (
        "hicache per rank over the host",
        {"tp_size": 4, "enable_hierarchical_cache": True, "hicache_size": 150},
        {"mem_total": 512 * GIB, "mem_available": 500 * GIB},
        "host-memory-hicache",
        Severity.ERROR,
    ),
    (
        "hicache per rank over what is free",
        {"tp_size": 4, "enable_hierarchical_cache": True, "hicache_size": 100},
        {"mem_total": 512 * GIB, "mem_available": 300 * GIB},
        "host-memory-hicache",
        Severity.WARNING,
    ),
    (
        "weights over free memory",
        {},
        {
            "mem_available": 8 * GIB,
            "checkpoint": Checkpoint(
                "m", True, "/m", "", (Shard("a", 16 * GIB, 16 * GIB),), 16 * GIB
            ),
        },
        "host-memory-weights",
        Severity.WARNING,
    ),
    (
        "a shard missing",
        {},
        {
            "checkpoint": Checkpoint(
                "m",
                True,
                "/m",
                "model.safetensors.index.json",
                (Shard("a", 10, 10), Shard("b", None, None)),
            )
        },
        "host-shard-missing",
        Severity.ERROR,
    ),
    (
        "a shard cut short",
        {},
        {"checkpoint": Checkpoint("m", True, "/m", "i", (Shard("a", 100, 60),))},
        "host-shard-truncated",
        Severity.ERROR,
    ),
    (
        "a shard with no header",
        {},
        {
            "checkpoint": Checkpoint(
                "m", True, "/m", "i", (Shard("a", None, 60, "shorter than a safetensors header"),)
            )
        },
        "host-shard-corrupt",
        Severity.ERROR,
    ),
    (
        "an index that does not parse",
        {},
        {"checkpoint": Checkpoint("m", True, "/m", "i", problem="i: Expecting value")},
        "host-checkpoint-unreadable",
        Severity.ERROR,
    ),
    (
        "a folder with no weights",
        {},
        {"checkpoint": Checkpoint("m", True, "/m")},
        "host-no-weights",
        Severity.WARNING,
    ),
    (
        "a download larger than the disk",
        {},
        {
            "checkpoint": Checkpoint(
                "org/m", False, download_bytes=100 * GIB, download_dir="/hf", disk_free=10 * GIB
            )
        },
        "host-download-no-space",
        Severity.ERROR,
    ),
    (
        "a download of unknown size",
        {},
        {"checkpoint": Checkpoint("org/m", False, download_dir="/hf", disk_free=10 * GIB)},
        "host-download-size-unknown",
        Severity.INFO,
    ),
    (
        "CUDA_VISIBLE_DEVICES past the GPUs",
        {},
        {"env": {"CUDA_VISIBLE_DEVICES": "8,9"}},
        "host-visible-devices-absent",
        Severity.ERROR,
    ),
    (
        "CUDA_VISIBLE_DEVICES empty",
        {},
        {"env": {"CUDA_VISIBLE_DEVICES": ""}},
        "host-visible-devices-absent",
        Severity.ERROR,
    ),
    (
        "base-gpu-id past the visible GPUs",
        {"tp_size": 2, "base_gpu_id": 1},
        {"env": {"CUDA_VISIBLE_DEVICES": "0,1"}},
        "host-gpus-out-of-range",
        Severity.ERROR,
    ),
    (
        "memory held on a GPU",
        {},
        {"gpu_held": (GpuHeld(0, 20 * GIB, 80 * GIB, ("pid 9 (jupyter)",)),)},
        "host-gpu-memory-held",
        Severity.WARNING,
    ),
    (
        "rendezvous name does not resolve",
        {"nnodes": 2, "node_rank": 1, "dist_init_addr": "head-nod:20000"},
        {"rendezvous": Rendezvous("head-nod", 20000, error="head-nod does not resolve")},
        "host-rendezvous-unresolvable",
        Severity.ERROR,
    ),
    (
        "head with another host's address",
        {"nnodes": 2, "node_rank": 0, "dist_init_addr": "10.0.0.2:20000"},
        {"rendezvous": Rendezvous("10.0.0.2", 20000, ("10.0.0.2",), ("10.0.0.1", "127.0.0.1"))},
        "host-rendezvous-not-local",
        Severity.ERROR,
    ),
    (
        "InfiniBand with memlock 64 KiB",
        {"nnodes": 2, "dist_init_addr": "10.0.0.1:20000"},
        {"infiniband": ("mlx5_0",), "memlock": 65536},
        "host-memlock-limited",
        Severity.ERROR,
    ),
    (
        "a fact that could not be read",
        {},
        {"notes": ("/proc/meminfo: No such file or directory; host memory was not checked",)},
        "host-fact-unknown",
        Severity.INFO,
    ),
]


def test_a_healthy_host_has_no_findings() -> None:
    assert host_checks({"tp_size": 8}, HEALTHY) == []


@pytest.mark.parametrize(
    ("flags", "changes", "code", "severity"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_each_problem_is_one_finding(
    flags: dict[str, Any], changes: dict[str, Any], code: str, severity: Severity
) -> None:
    findings = host_checks(flags, replace(HEALTHY, **changes))
    found = [f for f in findings if f.code == code]
    assert found, [f.code for f in findings]
    assert found[0].severity is severity
    assert found[0].source == "builtin"


@pytest.mark.parametrize("code", sorted({c[3] for c in CASES}))
def test_every_host_code_has_a_card_with_a_way_out(code: str) -> None:
    card = get_card(code)
    assert card is not None and card.stage == "host"
    assert card.what and card.when and card.solutions and card.example_after


def test_the_cases_cover_every_check() -> None:
    # each check function produced at least one of the cases' codes
    covered = {c[3] for c in CASES}
    for check in CHECKS:
        codes = set()
        for _, flags, changes, _, _ in CASES:
            codes |= {f.code for f in check(_inp(flags, replace(HEALTHY, **changes)))}
        assert codes & covered, check.__name__


def _inp(flags: dict[str, Any], facts: HostFacts) -> Any:
    from sglaunch.validators.rules.host.checks import HostInput

    return HostInput(flags, facts)


def test_a_taken_http_port_names_its_holder_and_offers_a_free_one() -> None:
    facts = replace(
        HEALTHY,
        ports=(
            PortUse(30000, "--port (the HTTP server)", False, "pid 7 (python)", alternative=30001),
        ),
    )
    (f,) = host_checks({}, facts)
    assert "pid 7 (python)" in f.message and f.flags == ("port",)
    assert f.fixes[0].set == {"port": 30001}


def test_hicache_is_counted_per_rank_and_the_fix_fits() -> None:
    facts = replace(HEALTHY, mem_total=512 * GIB, mem_available=500 * GIB)
    flags = {"tp_size": 4, "enable_hierarchical_cache": True, "hicache_size": 150}
    (f,) = host_checks(flags, facts)
    assert "4 ranks" in f.message and "600.0 GiB" in f.message
    fixed = f.fixes[0].apply(flags)
    assert host_checks(fixed, facts) == []


def test_base_gpu_id_fix_brings_the_ranks_back_in_range() -> None:
    flags = {"tp_size": 2, "base_gpu_id": 1}
    facts = replace(HEALTHY, env={"CUDA_VISIBLE_DEVICES": "0,1"})
    (f,) = host_checks(flags, facts)
    assert host_checks(f.fixes[0].apply(flags), facts) == []


def test_memlock_unlimited_or_no_infiniband_is_fine() -> None:
    flags = {"nnodes": 2, "dist_init_addr": "10.0.0.1:20000"}
    assert host_checks(flags, replace(HEALTHY, infiniband=("mlx5_0",), memlock=UNLIMITED)) == []
    assert host_checks(flags, replace(HEALTHY, infiniband=(), memlock=65536)) == []


def test_a_single_node_launch_skips_the_rendezvous() -> None:
    facts = replace(HEALTHY, rendezvous=Rendezvous("x", 1, error="x does not resolve"))
    assert host_checks({}, facts) == []


def test_shm_is_not_needed_by_one_rank() -> None:
    assert host_checks({"tp_size": 1}, replace(HEALTHY, shm_bytes=64 * MIB)) == []


@pytest.mark.parametrize(
    ("host", "no_proxy", "expected"),
    [
        ("127.0.0.1", "127.0.0.1", True),
        ("127.0.0.1", "localhost, 10.0.0.0/8", True),
        ("0.0.0.0", "localhost", True),
        ("10.1.2.3", "10.0.0.0/8", True),
        ("node1.cluster.local", ".cluster.local", True),
        ("node1.cluster.local", "cluster.local", True),
        ("127.0.0.1", "*", True),
        ("127.0.0.1", "", False),
        ("10.1.2.3", "10.1.2.30", False),
        ("127.0.0.1", "example.com,10.0.0.0/8", False),
    ],
)
def test_no_proxy_matching(host: str, no_proxy: str, expected: bool) -> None:
    assert bypassed(host, no_proxy) is expected


@pytest.mark.parametrize(
    ("flags", "nodes", "ports"),
    [
        ({}, 1, [30000]),
        ({"port": 31000, "grpc_port": 31001}, 1, [31000, 31001]),
        (
            {"enable_dp_attention": True, "dp_size": 2, "tp_size": 2},
            1,
            [30000, 30233, 30234, 30235, 30236, 30237, 30238, 30013],
        ),
        (
            {"nnodes": 2, "node_rank": 0, "dist_init_addr": "10.0.0.1:20000"},
            1,
            [30000, 20000],
        ),
        ({"nnodes": 2, "node_rank": 1, "dist_init_addr": "10.0.0.1:20000"}, 1, [30000]),
        (
            {
                "nnodes": 2,
                "dist_init_addr": "[fd00::1]:20000",
                "enable_dp_attention": True,
                "dp_size": 4,
            },
            1,
            [30000, 20000, 20001, 20002, 20003, 20004, 20005, 20006, 20013],
        ),
        ({"nccl_port": 25000}, 1, [30000, 25000]),
    ],
)
def test_the_ports_a_launch_binds(flags: dict[str, Any], nodes: int, ports: list[int]) -> None:
    assert [p for p, _ in ports_to_bind(flags, nodes)] == ports


@pytest.mark.parametrize(
    ("flags", "nodes", "ranks"),
    [
        ({}, 1, 1),
        ({"tp_size": 8}, 1, 8),
        ({"tp_size": 16, "nnodes": 2}, 1, 8),
        ({"tp_size": 16}, 2, 8),
        ({"tp_size": 2, "dp_size": 2}, 1, 4),
        ({"tp_size": 4, "dp_size": 4, "enable_dp_attention": True}, 1, 4),
        ({"tp_size": 2, "pp_size": 2}, 1, 4),
    ],
)
def test_ranks_on_this_node(flags: dict[str, Any], nodes: int, ranks: int) -> None:
    assert local_ranks(flags, nodes) == ranks
