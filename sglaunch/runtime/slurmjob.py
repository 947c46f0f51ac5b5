"""A server run as a Slurm job: submit with `sbatch`, follow with `squeue`/`sacct`, cancel.

sglaunch runs no cluster of its own: Slurm places the nodes, and the exported batch script
(profiles/slurm.py) starts one sglang task per node. This module only talks to Slurm's
commands, each with a time limit, and reads the per-node logs the script writes into the
run directory (`node-N.log`, `batch.log`).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from sglaunch.errors import UserError

# Slurm's commands answer in well under a second; a controller that does not answer in this
# long is reported rather than waited on.
COMMAND_TIMEOUT_S = 15.0
# squeue/sacct states (squeue(1) "JOB STATE CODES")
QUEUED = frozenset({"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "RESV_DEL_HOLD"})
RUNNING = frozenset({"RUNNING", "COMPLETING", "STAGE_OUT", "SIGNALING", "SUSPENDED", "STOPPED"})
ENDED_OK = frozenset({"COMPLETED", "CANCELLED"})
_JOB_ID = re.compile(r"^\d+(?:_\d+)?$")


@dataclass(frozen=True)
class JobState:
    state: str | None  # PENDING, RUNNING, COMPLETED, ... ; None: Slurm knows no such job
    nodes: str = ""  # the allocated node list, while it runs

    @property
    def queued(self) -> bool:
        return self.state in QUEUED

    @property
    def running(self) -> bool:
        return self.state in RUNNING

    @property
    def ended(self) -> bool:
        return self.state is not None and not self.queued and not self.running


def require(command: str) -> str:
    """The path of one of Slurm's commands, or UserError naming the way out."""
    path = shutil.which(command)
    if path is None:
        raise UserError(
            f"Slurm's `{command}` is not installed here (not on PATH): run sglaunch on a Slurm "
            "login node, or write the script with `sglaunch profiles export NAME --format slurm "
            "-o job.sbatch` and submit it there"
        )
    return path


def _run(argv: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise UserError(
            f"`{' '.join(argv[:2])}` did not answer in {COMMAND_TIMEOUT_S:g} s: is the Slurm "
            "controller up? (`scontrol ping`)"
        ) from None
    except OSError as exc:
        raise UserError(f"cannot run {argv[0]}: {exc.strerror or exc}") from None


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


def submit(script: Path, cwd: Path) -> str:
    """`sbatch --parsable SCRIPT`: the job id."""
    proc = _run([require("sbatch"), "--parsable", str(script)], cwd=cwd)
    if proc.returncode != 0:
        why = _first_line(proc.stderr) or f"exit {proc.returncode}"
        raise UserError(f"sbatch refused the job: {why[:300]}")
    job = _first_line(proc.stdout).split(";", 1)[0]  # "ID" or "ID;CLUSTER"
    if not _JOB_ID.fullmatch(job):
        raise UserError(f"sbatch answered {job[:80]!r}, not a job id")
    return job


def job_state(job: str) -> JobState:
    """The job's state from `squeue` (while Slurm holds it) or `sacct` (after)."""
    squeue = shutil.which("squeue")
    if squeue is not None:
        proc = _run([squeue, "-h", "-j", job, "-o", "%T|%N"])
        line = _first_line(proc.stdout)
        if proc.returncode == 0 and line:
            state, _, nodes = line.partition("|")
            return JobState(state.strip().upper(), nodes.strip())
    sacct = shutil.which("sacct")
    if sacct is not None:
        proc = _run([sacct, "-n", "-X", "-P", "-j", job, "-o", "State"])
        line = _first_line(proc.stdout)
        if proc.returncode == 0 and line:
            # "CANCELLED by 1000" -> CANCELLED
            return JobState(line.split()[0].upper())
    if squeue is None and sacct is None:
        require("squeue")
    return JobState(None)


def tasks_left(job: str) -> bool:
    """Whether Slurm still lists the job (any of its tasks may be running)."""
    proc = _run([require("squeue"), "-h", "-j", job, "-o", "%T"])
    return proc.returncode == 0 and bool(_first_line(proc.stdout))


def cancel(job: str, *, wait_s: float = 120.0, poll_s: float = 0.5) -> bool:
    """`scancel JOB`, then wait until `squeue` lists none of it: True when it is gone."""
    proc = _run([require("scancel"), job])
    if proc.returncode != 0 and "Invalid job id" not in proc.stderr:
        why = _first_line(proc.stderr) or f"exit {proc.returncode}"
        raise UserError(f"scancel {job} failed: {why[:300]}")
    deadline = time.monotonic() + wait_s
    while tasks_left(job):
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll_s)
    return True


_PHASES = (
    # (what a node's log says, the phase it means): reference §4.2, last match wins
    ("Init parallel begin", "joining the other nodes"),
    ("Init torch distributed begin", "joining the other nodes"),
    ("Init parallel ends", "joined"),
    ("Init torch distributed ends", "joined"),
    ("Load weight begin", "loading weights"),
    ("Load weight end", "weights loaded"),
    ("CUDA graph begin", "capturing CUDA graphs"),
    ("max_total_num_tokens=", "memory planned"),
    ("Dummy health check server started", "ready (health server)"),
    ("The server is fired up and ready to roll", "ready"),
    ("Traceback (most recent call last)", "failed"),
    ("died during initialization", "failed"),
)
_TAIL_BYTES = 256 << 10


def node_phase(log: Path) -> str | None:
    """The furthest start-up phase one node's log shows (None: no log yet)."""
    try:
        with open(log, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - _TAIL_BYTES))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    phase = "started"
    best = -1
    for needle, name in _PHASES:
        at = text.rfind(needle)
        if at > best:
            best, phase = at, name
    return phase


def head_url(batch_log: Path, mark: str) -> str | None:
    """The head's URL from the batch script's `MARK host:port` line."""
    try:
        text = batch_log.read_text("utf-8", "replace")[:_TAIL_BYTES]
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(mark):
            where = line[len(mark) :].strip()
            if re.fullmatch(r"[A-Za-z0-9._\[\]:-]+:\d+", where):
                return f"http://{where}"
    return None
