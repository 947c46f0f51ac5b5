"""Each engine export's per-node line, run the way its engine runs it, is read by sglang
0.5.23's REAL parser as the profile: every flag, the secret from its variable, and this
node's --nnodes/--node-rank/--dist-init-addr (rank 0 and rank 1 with the engine's own
variables filled in: SLURM_PROCID, LWS_WORKER_INDEX, SKYPILOT_NODE_RANK).

Needs SGLAUNCH_SGLANG_PYTHON (see tests/sglang/profiles/test_sglang_config.py).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sglaunch.profiles import Profile
from sglaunch.profiles.lws import to_lws
from sglaunch.profiles.nodes import node_lines
from sglaunch.profiles.skypilot import to_skypilot
from sglaunch.profiles.slurm import to_sbatch
from tests.sglang.profiles.test_sglang_config import sglang_python
from tests.support.engine_runs import lws_pods, run_command_lines, run_sbatch, run_skypilot

pytestmark = pytest.mark.oracle

PROBE = Path(__file__).resolve().parents[2] / "support" / "sglang_config_probe.py"
SECRET = "sk-engine-test"
MODEL = "openbmb/MiniCPM4-8B"


def profile() -> Profile:
    return Profile(
        name="tp16",
        model=MODEL,
        flags={
            "tp_size": 16,
            "dist_timeout": 3600,
            "mem_fraction_static": 0.8,
            "cuda_graph_bs_decode": [1, 2, 4],
            "enable_metrics": True,
            # the profile's own multi-node flags: replaced by each node's
            "nnodes": 4,
            "node_rank": 3,
        },
        env={"NCCL_SOCKET_IFNAME": "eth0"},
        secrets={"api_key": "SGLANG_API_KEY"},
        nodes=2,
    )


def node_argvs(fmt: str, tmp: Path) -> tuple[list[list[str]], list[str]]:
    """Each node's argv (rank order) and the head address every node must rendezvous at."""
    p = profile()
    if fmt == "command":
        argvs = run_command_lines(
            node_lines(p), tmp, {"SGLANG_API_KEY": SECRET, "SGLANG_HEAD_ADDR": "10.0.0.1"}
        )
        return argvs, ["10.0.0.1:20000"]
    if fmt == "slurm":
        proc, argvs = run_sbatch(
            to_sbatch(p, poll_s=1), tmp, 2, {"SGLANG_API_KEY": SECRET, "FAKE_SERVE_S": "1"}
        )
        assert proc.returncode == 0, proc.stderr
        argvs.sort(key=lambda a: a[a.index("--node-rank") + 1])
        return argvs, ["node-a:20000"]
    if fmt == "lws":
        pods = lws_pods(to_lws(p), {"SGLANG_API_KEY": SECRET})
        return [pod["argv"] for pod in pods], ["tp16-0.tp16.default:20000"]
    argvs = run_skypilot(to_skypilot(p), tmp, {"SGLANG_API_KEY": SECRET})
    return argvs, ["10.0.0.1:20000"]


FORMATS = ("command", "slurm", "lws", "skypilot")


@pytest.fixture(scope="module")
def parsed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    fields = ["model_path", *profile().flags, "api_key", "dist_init_addr", "host", "port"]
    jobs: list[dict[str, Any]] = []
    heads: dict[str, list[str]] = {}
    for fmt in FORMATS:
        argvs, heads[fmt] = node_argvs(fmt, tmp_path_factory.mktemp(fmt))
        assert len(argvs) == 2, f"{fmt}: {argvs}"
        jobs += [{"argv": argv, "fields": fields} for argv in argvs]
    proc = subprocess.run(
        [sglang_python(), str(PROBE)],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])["results"]
    return {"results": results, "heads": heads}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("rank", [0, 1])
def test_sglang_reads_each_nodes_line_as_the_profile(
    parsed: dict[str, Any], fmt: str, rank: int
) -> None:
    result = parsed["results"][FORMATS.index(fmt) * 2 + rank]
    assert "error" not in result, result
    got = result["fields"]
    p = profile()
    expected = {
        **p.flags,
        "model_path": MODEL,
        "api_key": SECRET,
        "nnodes": 2,
        "node_rank": rank,
        "dist_init_addr": parsed["heads"][fmt][0],
        "host": "0.0.0.0",
        "port": 30000,
    }
    assert {k: got[k] for k in expected} == expected
