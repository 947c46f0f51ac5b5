"""`sglaunch runs stop`: end a server sglaunch started, and only that, with its whole tree.

The recorded pid must still be the recorded server (identity.py); then SIGTERM
to it (sglang drains and stops its children), a grace period, and SIGKILL to
every process of its tree and its process group that is still alive. psutil
checks each process's own start time again before it signals it, so a pid
that is reused in the meantime is never hit.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from typing import Any

from sglaunch.errors import UserError
from sglaunch.exitcodes import ExitCode
from sglaunch.runtime.identity import Liveness, check
from sglaunch.runtime.rundir import RunDir
from sglaunch.runtime.runs import RunInfo, RunState, load_run
from sglaunch.runtime.slurmjob import cancel

DEFAULT_GRACE_S = 25.0  # as process.DEFAULT_GRACE_S: sglang's drain and scheduler exit
_POLL_S = 0.1


@dataclass(frozen=True)
class StopOutcome:
    pid: int
    processes: int  # how many processes the tree had
    killed: int  # how many needed SIGKILL after the grace period
    left: tuple[int, ...]  # any still alive at the end (should be empty)


def _refuse_unless_ours(run: RunInfo) -> int:
    """The verified pid of `run`'s server, or UserError saying why it is not touched."""
    if run.state is RunState.CORRUPT:
        raise UserError(f"run {run.name} is unreadable ({run.note}); nothing was stopped")
    if run.state is RunState.REMOTE:
        raise UserError(
            f"run {run.name} was started on {run.host}, not here: stop it there with "
            f"`sglaunch runs stop {run.name}`; nothing was stopped"
        )
    pid = run.pid
    if pid is None:
        raise UserError(f"run {run.name} names no server process; nothing was stopped")
    proc = run.record.get("process")
    verdict = check(proc if isinstance(proc, dict) else None, pid)
    if verdict.liveness in (Liveness.REUSED, Liveness.UNVERIFIABLE):
        raise UserError(
            f"not stopping pid {pid}: it is not provably the server of run {run.name} "
            f"({verdict.why}); nothing was stopped",
            ExitCode.VALIDATION,
        )
    if verdict.liveness is not Liveness.ALIVE:
        raise _AlreadyEnded(run)
    return pid


class _AlreadyEnded(Exception):
    def __init__(self, run: RunInfo) -> None:
        super().__init__(run.name)
        self.run = run


def _tree(root: Any) -> dict[int, Any]:
    """The live process `root`, its descendants and its process group, as psutil objects."""
    import psutil  # psutil (~40 ms): only when a process is looked at

    found: dict[int, Any] = {}
    with contextlib.suppress(psutil.Error):
        if root.is_running():
            found[root.pid] = root
            for child in root.children(recursive=True):
                found[child.pid] = child
    with contextlib.suppress(OSError):
        group = os.getpgid(root.pid)
        if group == root.pid:  # the server leads its own session (process.py)
            for proc in psutil.process_iter():
                with contextlib.suppress(psutil.Error, OSError):
                    if proc.pid not in found and os.getpgid(proc.pid) == group:
                        found[proc.pid] = proc
    return found


def _alive(procs: dict[int, Any]) -> dict[int, Any]:
    import psutil  # psutil (~40 ms): only when a process is looked at

    out = {}
    for pid, proc in procs.items():
        with contextlib.suppress(psutil.Error):
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                out[pid] = proc
    return out


def stop_tree(pid: int, grace: float) -> StopOutcome:
    """SIGTERM `pid`, wait up to `grace` s, then SIGKILL what is left of its tree."""
    import psutil  # psutil (~40 ms): only when a process is looked at

    try:
        root = psutil.Process(pid)
    except psutil.Error:
        return StopOutcome(pid, 0, 0, ())
    seen = _tree(root)
    with contextlib.suppress(psutil.Error):
        root.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + max(grace, 0.0)
    while time.monotonic() < deadline:
        # children started while it drains are part of the tree too
        with contextlib.suppress(psutil.Error):
            if root.is_running():
                seen.update(_tree(root))
        if not _alive(seen):
            break
        time.sleep(_POLL_S)
    left = _alive(seen)
    for proc in left.values():
        with contextlib.suppress(psutil.Error):
            proc.kill()  # psutil re-checks the process's identity first
    end = time.monotonic() + 10.0
    while _alive(left) and time.monotonic() < end:
        time.sleep(_POLL_S)
    return StopOutcome(pid, len(seen), len(left), tuple(sorted(_alive(left))))


def stop_run(run: RunInfo, *, grace: float = DEFAULT_GRACE_S) -> StopOutcome | None:
    """Stop `run`'s server; None when it had already ended. UserError when it is refused."""
    if isinstance(run.record.get("slurm_job"), str):
        return stop_slurm_run(run)
    try:
        pid = _refuse_unless_ours(run)
    except _AlreadyEnded:
        return None
    # recorded before the signal: whoever watches the run (`attach`, `runs list`) and sees
    # the process gone must already read "stopping", or it would take the stop for a crash
    _record_stopping(run)
    outcome = stop_tree(pid, grace)
    # a watching sglaunch (a launch without --detach) records the end itself, with the
    # exit code only it can know: its record is kept
    now = load_run(run.path, tail=0)
    recorded_end = now.record.get("status") in ("stopped", "failed", "died")
    if not recorded_end and now.state is not RunState.CORRUPT:
        with contextlib.suppress(OSError):
            RunDir.open(run.path, dict(now.record)).update_status(
                status="stopped",
                stopped_by="sglaunch runs stop",
                ended_at=time.time(),
                returncode=None,
            )
    return outcome


def _record_stopping(run: RunInfo) -> None:
    try:
        now = load_run(run.path, tail=0)
    except OSError:
        return
    if now.state is RunState.CORRUPT or now.record.get("status") in ("stopped", "failed", "died"):
        return
    with contextlib.suppress(OSError):
        RunDir.open(run.path, dict(now.record)).update_status(
            status="stopping", stop_requested_at=time.time(), stopped_by="sglaunch runs stop"
        )


def stop_slurm_run(run: RunInfo, *, wait_s: float = 120.0) -> StopOutcome | None:
    """`scancel` the run's Slurm job and wait until Slurm lists none of its tasks."""
    if not run.state.running and run.state is not RunState.UNKNOWN:
        return None
    job = str(run.record["slurm_job"])
    _record_stopping(run)
    gone = cancel(job, wait_s=wait_s)
    if not gone:
        raise UserError(
            f"slurm job {job} of run {run.name} still lists tasks after {wait_s:g} s: "
            f"check `squeue -j {job}` and `scancel {job}` again"
        )
    now = load_run(run.path, tail=0)
    if now.record.get("status") not in ("stopped", "failed", "died"):
        with contextlib.suppress(OSError):
            RunDir.open(run.path, dict(now.record)).update_status(
                status="stopped", stopped_by="sglaunch runs stop", ended_at=time.time()
            )
    nodes = run.record.get("nodes")
    count = nodes if isinstance(nodes, int) and not isinstance(nodes, bool) else 0
    return StopOutcome(pid=0, processes=count, killed=0, left=())
