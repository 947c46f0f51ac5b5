"""`sglaunch --profile NAME --apply --target slurm|lws|skypilot [--detach]`: launch on an engine.

sglaunch runs no cluster: the profile's export (profiles/slurm.py, lws.py, skypilot.py)
goes to the engine people already use.

- slurm: the sbatch script is written into a run directory (its per-node logs land there
  too), submitted with `sbatch --parsable`, and followed: queued, running, each node's
  start-up phase from its log, ready when the head answers /health; then the usual monitor
  (as `attach --url`), or, with --detach, back to the shell. `runs list/show/logs/stop`
  know the job by the id in run.json; `runs stop` cancels it and waits until no task is left.
- lws / skypilot: `kubectl apply -f FILE` / `sky launch FILE` when the command (and, for
  kubectl, a cluster) is there; else the file is written and the exact command printed.
"""

from __future__ import annotations

import argparse
import contextlib
import queue
import shlex
import shutil
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TextIO

from sglaunch.atomic import atomic_write
from sglaunch.errors import UserError
from sglaunch.exitcodes import ExitCode
from sglaunch.paths import data_dir
from sglaunch.profiles.lws import to_lws
from sglaunch.profiles.nodes import dns_name
from sglaunch.profiles.skypilot import secret_args, to_skypilot
from sglaunch.profiles.slurm import HEAD_MARK, to_sbatch
from sglaunch.runtime import slurmjob
from sglaunch.runtime.attach_target import resolve_attach_target
from sglaunch.runtime.rundir import RunDir
from sglaunch.runtime.state import EventKind
from sglaunch.runtime.watch import Watcher

if TYPE_CHECKING:
    from sglaunch.profiles.profile import Profile
    from sglaunch.runtime.slurmjob import JobState

TARGETS = ("local", "slurm", "lws", "skypilot")
# how often the job and the head are asked while the job starts
POLL_S = 2.0
_INTERRUPT = object()


def apply_on_target(profile: Profile, target: str, args: argparse.Namespace, err: TextIO) -> int:
    nodes = getattr(args, "nodes", None)
    if isinstance(nodes, int) and nodes != profile.nodes:
        profile = replace(profile, nodes=nodes)  # --nodes over the profile's own
    if target == "slurm":
        return _slurm(profile, args, err)
    return _k8s_or_sky(profile, target, args, err)


def _say(err: TextIO, text: str) -> None:
    print(f"sglaunch: {text}", file=err, flush=True)


# --- Slurm ------------------------------------------------------------------------------


def _slurm(profile: Profile, args: argparse.Namespace, err: TextIO) -> int:
    slurmjob.require("sbatch")
    slurmjob.require("squeue")
    # the script is rendered before anything is created: a refusal leaves no run behind
    to_sbatch(profile, python=getattr(args, "sglang_python", None))
    run = RunDir.create(profile.name)
    script_text = to_sbatch(
        profile, python=getattr(args, "sglang_python", None), log_dir=str(run.path)
    )
    script = run.path / "job.sbatch"

    atomic_write(script, script_text.encode("utf-8"), mode=0o755)
    run.write_json("argv.json", {"command": ["sbatch", "--parsable", str(script)], "argv": []})
    started = time.time()
    try:
        job = slurmjob.submit(script, run.path)
    except UserError as exc:
        run.update_status(
            status="failed", profile=profile.name, engine="slurm", error=exc.message,
            started_at=started, ended_at=time.time(),
        )  # fmt: skip
        raise
    run.update_status(
        status="starting",
        profile=profile.name,
        engine="slurm",
        model=profile.model,
        slurm_job=job,
        nodes=profile.nodes,
        started_at=started,
        detached=bool(args.detach),
    )
    _say(err, f"submitted slurm job {job} ({profile.nodes} nodes) · run {run.path.name}")
    timeout = float(getattr(args, "startup_timeout", 1800.0))
    outcome = _follow_start(job, run, profile.nodes, timeout, err)
    if outcome is not None:
        return outcome
    url = str(run.status.get("url"))
    if args.detach:
        run.update_status(status="detached")
        _say(err, f"ready: {url} · follow: sglaunch attach --url {url}")
        _say(err, f"stop: sglaunch runs stop {run.path.name} (cancels slurm job {job})")
        return int(ExitCode.OK)
    return _monitor(job, run, url, err)


def _follow_start(job: str, run: RunDir, nodes: int, timeout: float, err: TextIO) -> int | None:
    """Until the head answers /health: None then; else the exit code (the job is recorded)."""
    deadline = time.monotonic() + timeout
    said_state = ""
    phases: dict[int, str] = {}
    url: str | None = None
    interrupted = _Interrupt()
    with interrupted:
        while True:
            state = slurmjob.job_state(job)
            text = _state_text(state)
            if text != said_state:
                _say(err, f"slurm job {job}: {text}")
                said_state = text
            for rank in range(nodes):
                phase = slurmjob.node_phase(run.path / f"node-{rank}.log")
                if phase and phases.get(rank) != phase:
                    phases[rank] = phase
                    _say(err, f"node {rank}: {phase}")
            if url is None:
                url = slurmjob.head_url(run.path / "batch.log", HEAD_MARK)
                if url:
                    run.update_status(url=url)
            if url and state.running and _healthy(url):
                run.update_status(status="ready", ready_at=time.time())
                _say(err, f"ready: the head answers at {url}")
                return None
            if state.ended or state.state is None:
                why = f"slurm job {job} ended ({state.state or 'unknown to Slurm'}) before the head was ready"
                _record_end(run, "failed", why)
                _say(err, why)
                for rank in range(nodes):
                    _say(err, f"  node {rank} log: {run.path / f'node-{rank}.log'}")
                return int(ExitCode.START_FAILED)
            if interrupted.fired or time.monotonic() >= deadline:
                why = "interrupted" if interrupted.fired else f"not ready after {timeout:g} s"
                _say(err, f"{why}: cancelling slurm job {job}")
                _cancel(job, run, err)
                code = ExitCode.INTERRUPTED if interrupted.fired else ExitCode.START_FAILED
                return int(code)
            interrupted.sleep(POLL_S)


def _monitor(job: str, run: RunDir, url: str, err: TextIO) -> int:
    """The usual monitor on the head (as `attach --url`) while the job runs; Ctrl-C cancels."""
    watcher = Watcher(resolve_attach_target(url=url, check=False))
    events: queue.Queue[Any] = watcher.events()
    watcher.start()
    interrupted = _Interrupt(events)
    next_check = 0.0
    try:
        with interrupted:
            while True:
                try:
                    item = events.get(timeout=POLL_S)
                except queue.Empty:
                    item = None
                if item is _INTERRUPT:
                    _say(err, f"interrupted: cancelling slurm job {job}")
                    _cancel(job, run, err)
                    return int(ExitCode.INTERRUPTED)
                if item is not None and item.kind is not EventKind.GPU and item.message:
                    _say(err, str(item.message))
                if time.monotonic() >= next_check:
                    next_check = time.monotonic() + POLL_S
                    state = slurmjob.job_state(job)
                    if state.ended or state.state is None:
                        ok = state.state in slurmjob.ENDED_OK
                        why = f"slurm job {job} ended: {state.state or 'gone'}"
                        _record_end(run, "stopped" if ok else "died", why)
                        _say(err, why)
                        return int(ExitCode.OK if ok else ExitCode.DIED)
    finally:
        watcher.stop()


def _cancel(job: str, run: RunDir, err: TextIO) -> None:
    run.update_status(status="stopping", stop_requested_at=time.time())
    gone = slurmjob.cancel(job)
    _record_end(run, "stopped", "cancelled", stopped_by="sglaunch")
    if not gone:
        _say(err, f"! slurm job {job} still lists tasks; check with `squeue -j {job}`")


def _record_end(run: RunDir, status: str, why: str, **extra: Any) -> None:
    with contextlib.suppress(OSError):
        run.update_status(status=status, ended_at=time.time(), error=why, **extra)


def _state_text(state: JobState) -> str:
    if state.state is None:
        return "not known to Slurm"
    if state.queued:
        return f"queued ({state.state.lower()})"
    if state.running:
        return f"running on {state.nodes}" if state.nodes else "running"
    return state.state.lower()


def _healthy(url: str) -> bool:
    try:
        # straight to the head: a proxy from the environment cannot reach a cluster node
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"{url}/health", timeout=5) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


class _Interrupt:
    """Ctrl-C/SIGTERM as a flag (and an item on `events`), so the job is cancelled, not left."""

    def __init__(self, events: queue.Queue[Any] | None = None) -> None:
        self.fired = False
        self._events = events
        self._wake = threading.Event()
        self._previous: dict[signal.Signals, Any] = {}

    def _handler(self, *_: Any) -> None:
        self.fired = True
        self._wake.set()
        if self._events is not None:
            self._events.put(_INTERRUPT)

    def sleep(self, seconds: float) -> None:
        self._wake.wait(seconds)

    def __enter__(self) -> _Interrupt:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handler)
        return self

    def __exit__(self, *_: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


# --- Kubernetes LeaderWorkerSet and SkyPilot ----------------------------------------------


def _k8s_or_sky(profile: Profile, target: str, args: argparse.Namespace, err: TextIO) -> int:
    python = getattr(args, "sglang_python", None)
    text = (
        to_lws(profile, python=python) if target == "lws" else to_skypilot(profile, python=python)
    )
    # beside the runs, not among them: `runs list` reads every folder there as a run
    folder = data_dir() / "engine-files"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{profile.name}.{target}.yaml"
    atomic_write(path, text.encode("utf-8"))
    if target == "lws":
        command = ["kubectl", "apply", "-f", str(path)]
        ready, why = _kubectl_ready()
    else:
        # each secret from the caller's environment, as the file's header says
        command = ["sky", "launch", "-y", "-c", _cluster(profile.name), *secret_args(profile)]
        command.append(str(path))
        ready = shutil.which("sky") is not None
        why = "" if ready else "SkyPilot's `sky` is not installed here"
    shown = " ".join(shlex.quote(c) for c in command)
    if not ready:
        _say(err, f"wrote {path}")
        _say(err, f"{why}; to launch, run where it is:")
        print(shown)
        return int(ExitCode.OK)
    _say(err, f"running: {shown}")
    proc = subprocess.run(command, check=False, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        _say(err, f"{command[0]} failed (exit {proc.returncode}); the file is {path}")
        return int(ExitCode.START_FAILED)
    if target == "lws":
        name = dns_name(profile.name)
        _say(
            err,
            f"applied; follow with `kubectl get pods -l leaderworkerset.sigs.k8s.io/name={name}`, "
            f"then `kubectl port-forward svc/{name}-leader 30000` and `sglaunch attach --url "
            "http://127.0.0.1:30000`",
        )
    else:
        _say(
            err,
            "launched; `sky status --ip` names the head: `sglaunch attach --url http://IP:PORT`",
        )
    return int(ExitCode.OK)


def _kubectl_ready() -> tuple[bool, str]:
    if shutil.which("kubectl") is None:
        return False, "kubectl is not installed here"
    try:
        proc = subprocess.run(
            ["kubectl", "cluster-info"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (subprocess.TimeoutExpired, OSError):
        return False, "kubectl reaches no cluster (`kubectl cluster-info` did not answer)"
    if proc.returncode != 0:
        return False, "kubectl reaches no cluster (`kubectl cluster-info` failed)"
    return True, ""


def _cluster(name: str) -> str:
    return dns_name(name, 30)
