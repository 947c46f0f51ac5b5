"""The exported sbatch script run as Slurm runs it (srun, scontrol and the interpreter
stood in by tests/support/engine_runs.py): one distinct rank per node, a bounded wait on
the head's /health that notices an early exit."""

from __future__ import annotations

from pathlib import Path

from sglaunch.profiles import Profile
from sglaunch.profiles.slurm import READY_MARK, to_sbatch
from tests.support.engine_runs import run_sbatch


def profile(nodes: int = 2) -> Profile:
    return Profile(
        name="tp16",
        model="meta-llama/Llama-3.1-405B-Instruct",
        flags={"tp_size": 8 * nodes},
        env={"NCCL_SOCKET_IFNAME": "eth0"},
        secrets={"api_key": "SGLANG_API_KEY"},
        nodes=nodes,
    )


def ranks(argvs: list[list[str]]) -> list[str]:
    return sorted(a[a.index("--node-rank") + 1] for a in argvs)


def test_every_node_gets_its_own_rank_and_the_head_becomes_ready(tmp_path: Path) -> None:
    script = to_sbatch(profile(3), poll_s=1)
    proc, argvs = run_sbatch(script, tmp_path, 3, {"SGLANG_API_KEY": "sk-1", "FAKE_SERVE_S": "2"})
    assert proc.returncode == 0, proc.stderr
    assert ranks(argvs) == ["0", "1", "2"]
    for argv in argvs:
        assert argv[argv.index("--dist-init-addr") + 1] == "node-a:20000"
        assert argv[argv.index("--nnodes") + 1] == "3"
        assert argv[argv.index("--api-key") + 1] == "sk-1"
    assert f"{READY_MARK} http://node-a:30000" in proc.stdout


def test_a_rank_expanded_in_the_batch_shell_gives_two_rank_zero_nodes(tmp_path: Path) -> None:
    # the shape of sglang's own example (PR 36116): what the test above must catch
    good = to_sbatch(profile(), poll_s=1)
    # the rank leaves the task's single quotes: the batch shell expands it, once, for all
    broken = good.replace('--node-rank "$SLURM_PROCID"', "--node-rank '\"$SLURM_PROCID\"'")
    assert broken != good
    _, argvs = run_sbatch(broken, tmp_path, 2, {"SGLANG_API_KEY": "sk-1", "FAKE_SERVE_S": "1"})
    assert ranks(argvs) == ["0", "0"]


def test_a_node_that_exits_early_ends_the_wait_with_an_error(tmp_path: Path) -> None:
    script = to_sbatch(profile(), poll_s=1)
    proc, argvs = run_sbatch(
        script, tmp_path, 2, {"SGLANG_API_KEY": "sk-1", "FAKE_HEALTHY": "0", "FAKE_EXIT": "1"}
    )
    assert proc.returncode == 1 and len(argvs) == 2
    assert "sglang exited before the head answered /health" in proc.stderr
    assert READY_MARK not in proc.stdout


def test_the_wait_for_the_head_is_bounded(tmp_path: Path) -> None:
    script = to_sbatch(profile(), poll_s=1, ready_timeout=2)
    proc, _ = run_sbatch(
        script, tmp_path, 2, {"SGLANG_API_KEY": "sk-1", "FAKE_HEALTHY": "0", "FAKE_SERVE_S": "4"}
    )
    assert proc.returncode == 1
    assert "did not answer /health within 2 s" in proc.stderr


def test_a_missing_secret_stops_the_job_before_any_node_starts(tmp_path: Path) -> None:
    proc, argvs = run_sbatch(to_sbatch(profile(), poll_s=1), tmp_path, 2, {"SGLANG_API_KEY": ""})
    assert proc.returncode != 0 and argvs == []
    assert "set SGLANG_API_KEY" in proc.stderr
