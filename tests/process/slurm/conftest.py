"""The two-node Slurm cluster `scripts/slurm/cluster.sh up` starts (`make slurm-up`, as root).

The tests fail, never skip, when it is not running: `make test` starts it when run as root
and prints the same line as `NOT_UP` otherwise.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import FAKE

ROOT = Path(__file__).resolve().parents[3]
CLUSTER = ROOT / "scripts" / "slurm" / "cluster.sh"
STATE = Path(os.environ.get("SGLAUNCH_SLURM_STATE", "/run/sglaunch-slurm"))
SLURM_CONF = STATE / "etc" / "slurm.conf"
# the nodes cluster.sh makes: name -> address on the bridge
NODES = {"sgl-n1": "10.77.0.11", "sgl-n2": "10.77.0.12"}
NOT_UP = (
    "the Slurm test cluster is not running: start it as root with `sudo make slurm-up` "
    "(`sudo make slurm-down` removes it), then run the Slurm tests"
)


def slurm_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "SLURM_CONF": str(SLURM_CONF), **extra}


def slurm(*argv: str, timeout: float = 20) -> str:
    out = subprocess.run(
        list(argv), capture_output=True, text=True, timeout=timeout, env=slurm_env(), check=True
    )
    return out.stdout


@pytest.fixture(scope="session")
def cluster() -> dict[str, str]:
    """Fails with NOT_UP unless both nodes answer."""
    status = subprocess.run([str(CLUSTER), "status"], capture_output=True, timeout=30)
    if status.returncode != 0:
        pytest.fail(NOT_UP, pytrace=False)
    return NODES


def job_processes(node: str) -> list[str]:
    """What runs in a node's network namespace besides its slurmd: a job's processes."""
    pids = subprocess.run(
        ["ip", "netns", "pids", node], capture_output=True, text=True, timeout=10, check=True
    ).stdout.split()
    daemon = (STATE / f"slurmd-{node}.pid").read_text().strip()
    out = []
    for pid in pids:
        if pid == daemon:
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue  # gone meanwhile
        out.append(f"{pid} {cmd}")
    return out


def queue() -> list[str]:
    return slurm("squeue", "-h", "-o", "%i %T %j").split("\n")[:-1]


def wait_no_jobs(timeout: float = 60) -> None:
    """No job in the queue and no job process on any node, within `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        left = {n: job_processes(n) for n in NODES}
        jobs = queue()
        if not jobs and not any(left.values()):
            return
        if time.monotonic() > deadline:
            raise AssertionError(
                f"left behind after {timeout:.0f} s: jobs {jobs}, processes {left}"
            )
        time.sleep(0.2)


@pytest.fixture
def no_jobs_after(cluster: dict[str, str]) -> Iterator[None]:
    """Whatever a test submitted is cancelled afterwards, so the next one starts clean."""
    wait_no_jobs()
    yield
    subprocess.run(
        ["scancel", "--full", "--user=root"], env=slurm_env(), timeout=20, capture_output=True
    )
    wait_no_jobs()


@pytest.fixture
def wrapper(tmp_path: Path) -> Path:
    """A stand-in interpreter: `-m sglang.launch_server` runs the fake server."""
    script = tmp_path / "sglang-python"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-m" ] && [ "$2" = "sglang.launch_server" ]; then\n'
        f'  shift 2; exec "{sys.executable}" "{FAKE}" "$@"\n'
        "fi\n"
        f'exec "{sys.executable}" "$@"\n'
    )
    script.chmod(0o755)
    return script
