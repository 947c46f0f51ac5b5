"""The exported sbatch script on a real two-node Slurm cluster (`make slurm-up`).

Each node is a slurmd in its own network namespace with 8 GPUs declared; the script runs
the stand-in server's multi-node mode through a stand-in interpreter. Both nodes start, the
head becomes ready, the monitor follows it, and stopping the job leaves nothing on either
node. `sglaunch --profile NAME --apply --target slurm --detach` does the same through sbatch and
`runs stop` cancels it. The same script with the ranks expanded in the batch shell (sglang's
own example's bug) never becomes ready, and says why, within a bound.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from sglaunch.profiles import Profile, ProfileStore
from tests.process.slurm.conftest import (
    NODES,
    job_processes,
    slurm,
    slurm_env,
    wait_no_jobs,
)
from tests.support.processes import MODEL

HEAD, WORKER = NODES["sgl-n1"], NODES["sgl-n2"]
HTTP_PORT, DIST_PORT = 30100, 20100
# sglang's --dist-timeout; the stand-in scales it with its time scale: 300 s -> 6 s
DIST_TIMEOUT = 300
TIME_SCALE = "0.02"
READY_BOUND = 90.0

pytestmark = pytest.mark.usefixtures("no_jobs_after")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SGLAUNCH_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


class NotReady(AssertionError):
    """The job did not become ready: the reason names what the logs say."""


@dataclass
class Job:
    id: str
    folder: Path

    def logs(self) -> str:
        files = sorted(self.folder.glob("*.log")) + sorted(self.folder.glob("*.out"))
        return "\n".join(f"== {p.name}\n{p.read_text(errors='replace')}" for p in files)

    def state(self) -> str:
        line = slurm("scontrol", "-o", "show", "job", self.id)
        found = re.search(r"JobState=(\S+)", line)
        return found.group(1) if found else "UNKNOWN"


def http_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=3) as res:
            return int(res.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def save_profile(wrapper: Path) -> None:
    """Two nodes of 8 GPUs, tp 16, run by the stand-in interpreter."""
    ProfileStore().save(
        Profile(
            name="two-nodes",
            model=MODEL,
            flags={
                "tp_size": 16,
                "nnodes": 2,
                "port": HTTP_PORT,
                "dist_init_addr": f"head:{DIST_PORT}",
                "dist_timeout": DIST_TIMEOUT,
            },
            sglang_python=str(wrapper),
            nodes=2,
        )
    )


def sglaunch(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sglaunch", *argv],
        capture_output=True, text=True, timeout=timeout,
        env=slurm_env(FAKE_SGLANG_TIME_SCALE=TIME_SCALE, FAKE_SGLANG_SCENARIO="ok", NO_COLOR="1"),
    )  # fmt: skip


def export_sbatch(home: Path, wrapper: Path, folder: Path) -> Path:
    """`sglaunch profiles export NAME --format slurm` for a two-node profile."""
    save_profile(wrapper)
    script = folder / "two-nodes.sbatch"
    out = subprocess.run(
        [sys.executable, "-m", "sglaunch", "profiles", "export", "two-nodes", "--format", "slurm",
         "-o", str(script)],
        capture_output=True, text=True, timeout=60, env={**os.environ, "SGLAUNCH_HOME": str(home)},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    text = script.read_text()
    assert "--gpus-per-node=8" in text and "--nodes=2" in text
    # the stand-in answers in seconds: poll it as often
    script.write_text(re.sub(r"\n  sleep \d+\n", "\n  sleep 0.5\n", text))
    return script


def expand_ranks_in_batch_shell(script: Path) -> Path:
    """sglang's own Slurm example: the batch shell expands the node id once, for every task."""
    text = script.read_text()
    assert '--node-rank "$SLURM_PROCID"' in text
    broken = script.with_name("broken.sbatch")
    broken.write_text(
        text.replace('--node-rank "$SLURM_PROCID"', "--node-rank '\"$SLURM_NODEID\"'")
    )
    return broken


def submit(script: Path) -> Job:
    out = subprocess.run(
        ["sbatch", "--parsable", f"--chdir={script.parent}", str(script)],
        capture_output=True, text=True, timeout=30,
        env=slurm_env(FAKE_SGLANG_TIME_SCALE=TIME_SCALE, FAKE_SGLANG_SCENARIO="ok"),
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return Job(out.stdout.strip().split(";")[0], script.parent)


def wait_ready(job: Job, bound: float = READY_BOUND) -> float:
    """Seconds until the head's /health answers 200; NotReady (with the reason) otherwise."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < bound:
        if http_status(f"http://{HEAD}:{HTTP_PORT}/health") == 200:
            return time.monotonic() - t0
        state = job.state()
        if state not in ("PENDING", "CONFIGURING", "RUNNING"):
            errors = [
                line for line in job.logs().splitlines()
                if "Error" in line or "exited before" in line or "RuntimeError" in line
            ]  # fmt: skip
            raise NotReady(f"job {job.id} ended {state} before the head was ready: {errors}")
        time.sleep(0.25)
    raise NotReady(f"job {job.id} not ready within {bound:.0f} s; logs:\n{job.logs()[-3000:]}")


def watch_once(url: str, timeout: float = 60) -> list[dict[str, object]]:
    """`sglaunch attach --url URL --json` until it reports the server ready."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "sglaunch", "attach", "--url", url, "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    events: list[dict[str, object]] = []
    deadline = time.monotonic() + timeout
    try:
        assert proc.stdout is not None
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            events.append(json.loads(line))
            if any("ready" in json.dumps(e).lower() for e in events[-1:]):
                break
    finally:
        proc.kill()
        proc.communicate(timeout=10)
    return events


def stop(job: Job) -> None:
    slurm("scancel", job.id)


def test_exported_sbatch_runs_on_two_nodes(tmp_path: Path, home: Path, wrapper: Path) -> None:
    script = export_sbatch(home, wrapper, tmp_path)
    job = submit(script)
    wait_ready(job)
    # the script's --gpus-per-node=8 was granted on both nodes, as on a real cluster
    granted = slurm("scontrol", "-o", "show", "job", job.id)
    assert "NumNodes=2 " in granted and "TresPerNode=gres:gpu:8" in granted, granted
    # both nodes run: the head's API, the worker's health-only server, each in its namespace
    assert http_status(f"http://{HEAD}:{HTTP_PORT}/model_info") == 200
    assert http_status(f"http://{WORKER}:{HTTP_PORT}/health") == 200
    assert http_status(f"http://{WORKER}:{HTTP_PORT}/model_info") == 404
    assert any("fake_sglang_server.py" in p for p in job_processes("sgl-n1"))
    assert any("fake_sglang_server.py" in p for p in job_processes("sgl-n2"))
    logs = job.logs()
    assert "--node-rank 1" not in logs  # the rank came from each task's own shell
    assert " TP8] Init parallel ends." in logs and "Dummy health check server started" in logs
    assert "The server is fired up and ready to roll!" in logs
    events = watch_once(f"http://{HEAD}:{HTTP_PORT}")
    assert events, "the monitor reported nothing"
    assert events[-1]["event"] == "ready", events
    assert events[-1]["url"] == f"http://{HEAD}:{HTTP_PORT}"
    stop(job)
    wait_no_jobs(timeout=60)


def test_apply_on_slurm_then_runs_stop(home: Path, wrapper: Path) -> None:
    save_profile(wrapper)
    t0 = time.monotonic()
    applied = sglaunch("--profile", "two-nodes", "--apply", "--target", "slurm", "--detach")
    assert applied.returncode == 0, applied.stderr
    assert time.monotonic() - t0 < READY_BOUND
    # --detach returns once the head answers; the job's nodes said how far each got
    assert http_status(f"http://{HEAD}:{HTTP_PORT}/health") == 200
    assert "node 0: ready" in applied.stderr and "node 1: ready" in applied.stderr
    url = re.search(r"follow: sglaunch attach --url (\S+)", applied.stderr)
    run = re.search(r"stop: sglaunch runs stop (\S+)", applied.stderr)
    assert url and run, applied.stderr
    assert http_status(f"http://{WORKER}:{HTTP_PORT}/health") == 200
    assert any("fake_sglang_server.py" in p for p in job_processes("sgl-n1"))
    assert any("fake_sglang_server.py" in p for p in job_processes("sgl-n2"))
    events = watch_once(url.group(1))
    assert events and events[-1]["event"] == "ready", events
    stopped = sglaunch("runs", "stop", run.group(1))
    assert stopped.returncode == 0, stopped.stderr
    # nothing is left on either node once `runs stop` returns (a moment for /proc to agree)
    wait_no_jobs(timeout=5)


def test_ranks_expanded_in_the_batch_shell_never_become_ready(
    tmp_path: Path, home: Path, wrapper: Path
) -> None:
    script = expand_ranks_in_batch_shell(export_sbatch(home, wrapper, tmp_path))
    job = submit(script)
    t0 = time.monotonic()
    with pytest.raises(NotReady) as failed:
        wait_ready(job)
    # both tasks were rank 0: each opened its own store and waited for a node that never came
    assert time.monotonic() - t0 < READY_BOUND
    reason = str(failed.value)
    assert "before the head was ready" in reason, reason
    assert "Timed out after" in reason and "waiting for clients. 8/16 clients joined." in reason
    wait_no_jobs(timeout=60)
