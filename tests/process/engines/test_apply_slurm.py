"""`sglaunch --profile NAME --apply --target slurm` against a stand-in Slurm (fake_slurm.py):
submit, follow to ready, record the job in the run; `runs list/show/stop` know it, and
`runs stop` cancels it and leaves no task; refusals are one line with exit 2."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from sglaunch.profiles import Profile, ProfileStore
from tests.process.engines.fake_slurm import install, job_processes

ROOT = Path(__file__).resolve().parents[3]
SGLAUNCH = [str(ROOT / ".venv" / "bin" / "sglaunch")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def save(nodes: int = 2, port: int = 30000) -> None:
    ProfileStore().save(
        Profile(
            name="tp16",
            model="example:llama-3.1-8b",
            flags={"tp_size": 4 * nodes, "port": port},
            nodes=nodes,
        )
    )


def sglaunch(
    args: list[str], env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SGLAUNCH, *args], env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


APPLY = ["--profile", "tp16", "--apply", "--no-oracle", "--gpu", "H100x8", "--target", "slurm"]


def test_apply_submits_follows_to_ready_and_runs_stop_cancels(tmp_path: Path) -> None:
    port = free_port()
    save(port=port)
    env = install(tmp_path)
    env["FAKE_HTTP"] = "1"
    proc = sglaunch([*APPLY, "--detach"], env)
    try:
        assert proc.returncode == 0, proc.stderr
        assert "submitted slurm job 4100 (2 nodes)" in proc.stderr
        assert f"ready: http://127.0.0.1:{port}" in proc.stderr
        [run] = [p for p in (Path(os.environ["SGLAUNCH_HOME"])).rglob("run.json")]
        record = json.loads(run.read_text())
        assert record["slurm_job"] == "4100" and record["status"] == "detached"
        assert record["url"] == f"http://127.0.0.1:{port}"
        # each node's log is in the run directory
        assert (run.parent / "node-0.log").exists() and (run.parent / "node-1.log").exists()

        logs = sglaunch(["runs", "logs", run.parent.name], env)
        assert "fired up and ready" in logs.stdout  # the head's log

        listed = sglaunch(["runs", "list", "--json"], env)
        [row] = json.loads(listed.stdout)
        assert row["state"] == "ready" and "slurm job 4100" in row["note"]

        stop = sglaunch(["runs", "stop", run.parent.name], env)
        assert stop.returncode == 0, stop.stderr
        assert "cancelled slurm job 4100" in stop.stderr
        assert job_processes(tmp_path / "slurm") == []
        after = sglaunch(["runs", "list", "--json"], env)
        [row] = json.loads(after.stdout)
        assert row["state"] == "exited"
    finally:
        subprocess.run(["scancel", "4100"], env=env, check=False, capture_output=True)


def test_a_job_whose_nodes_fail_is_reported_as_a_failed_start(tmp_path: Path) -> None:
    save(port=free_port())
    env = install(tmp_path)
    env["FAKE_EXIT_AT_ONCE"] = "1"
    proc = sglaunch([*APPLY, "--detach"], env)
    assert proc.returncode == 3, proc.stderr
    assert "before the head was ready" in proc.stderr
    assert job_processes(tmp_path / "slurm") == []


def test_without_slurm_the_launch_is_refused_in_one_line(tmp_path: Path) -> None:
    save()
    env = {**os.environ, "PATH": str(tmp_path)}  # no sbatch anywhere
    proc = sglaunch(APPLY, env)
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()[-1:]
    assert "sbatch" in line and "--format slurm" in line and "Traceback" not in proc.stderr
    assert not list(Path(os.environ["SGLAUNCH_HOME"]).rglob("run.json"))


def test_a_single_node_profile_is_refused_before_anything_is_submitted(tmp_path: Path) -> None:
    save(nodes=1)
    env = install(tmp_path)
    proc = sglaunch(APPLY, env)
    assert proc.returncode == 2, proc.stderr
    assert "nodes = 1" in proc.stderr.strip().splitlines()[-1]
    assert not list((tmp_path / "slurm").iterdir())


def test_without_detach_the_monitor_follows_the_head_and_ctrl_c_cancels_the_job(
    tmp_path: Path,
) -> None:
    port = free_port()
    save(port=port)
    env = install(tmp_path)
    env["FAKE_HTTP"] = "1"
    proc = subprocess.Popen(
        [*SGLAUNCH, *APPLY], env=env, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert proc.stderr is not None
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if "ready: the head answers" in line:
                break
        assert any("ready: the head answers" in ln for ln in seen), "".join(seen)
        time.sleep(1)
        proc.send_signal(signal.SIGINT)
        rest = proc.stderr.read()
        assert proc.wait(timeout=60) == 130, rest
        assert "cancelling slurm job 4100" in rest
        assert job_processes(tmp_path / "slurm") == []
    finally:
        if proc.poll() is None:
            proc.kill()
        subprocess.run(["scancel", "4100"], env=env, check=False, capture_output=True)
