"""The run directories sglaunch left behind, read back: which server is running, which ended how.

    runs = scan()                      # every run, oldest first; a corrupt one is a RunInfo too
    run = load_run(resolve_run("2026"))  # by name, unique prefix, or path (UserError otherwise)
    run.state, run.running, run.log_tail
    running_by_profile()               # {"sala": [RunInfo, ...]}: for a profile picker

A run's state comes from what its run.json recorded and from whether the process
it names is still that server (identity.py): a server whose record says it is
up but whose process is gone died while nobody watched (`crashed`, with the
tail of its log). Nothing here stops or starts anything (runstop.py does).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from sglaunch.errors import UserError
from sglaunch.facts.model import source_for_path
from sglaunch.paths import runs_dir
from sglaunch.runtime.failures import exit_text
from sglaunch.runtime.identity import Liveness, Verdict, check, is_pid
from sglaunch.runtime.rundir import LOG_NAME, STATUS_NAME
from sglaunch.runtime.slurmjob import ENDED_OK, job_state
from sglaunch.safeio import InputError, parse_json

MAX_RECORD_BYTES = 1 << 20  # a run.json is a few hundred bytes
TAIL_LINES = 8
_TAIL_BYTES = 64 << 10


class RunState(StrEnum):
    STARTING = "starting"
    READY = "ready"
    UNHEALTHY = "unhealthy"
    STOPPING = "stopping"
    EXITED = "exited"  # ended and recorded: stopped, or exited on its own cleanly
    FAILED = "failed"  # ended before it was ready (recorded)
    DIED = "died"  # ended after it was ready, while sglaunch watched (recorded)
    CRASHED = "crashed"  # its process is gone and nobody recorded how it ended
    REMOTE = "remote"  # recorded on another machine
    UNKNOWN = "unknown"  # alive, but not provably the recorded server
    CORRUPT = "corrupt"  # run.json missing, unreadable or nonsensical

    @property
    def running(self) -> bool:
        return self in (RunState.STARTING, RunState.READY, RunState.UNHEALTHY, RunState.STOPPING)

    @property
    def final(self) -> bool:
        return self in (RunState.EXITED, RunState.FAILED, RunState.DIED, RunState.CRASHED)


@dataclass(frozen=True)
class RunInfo:
    name: str
    path: Path
    state: RunState
    note: str = ""  # one line: how it ended, why it is corrupt, whose pid it is now
    profile: str | None = None
    model: str | None = None
    url: str | None = None
    pid: int | None = None
    started_at: float | None = None
    ready_at: float | None = None
    ended_at: float | None = None
    returncode: int | None = None
    detached: bool = False
    host: str | None = None
    unwatched: bool = False  # it ended with nobody watching
    command: tuple[str, ...] = ()  # masked, as argv.json recorded it
    diagnosis: Mapping[str, Any] | None = None
    log_tail: tuple[str, ...] = ()
    record: Mapping[str, Any] = field(default_factory=dict, repr=False)

    @property
    def running(self) -> bool:
        return self.state.running

    @property
    def port(self) -> int | None:
        if not self.url:
            return None
        try:
            return urlsplit(self.url).port
        except ValueError:
            return None

    @property
    def log_path(self) -> Path:
        if isinstance(self.record.get("slurm_job"), str):
            return self.path / SLURM_HEAD_LOG  # the head node's log (profiles/slurm.py)
        return self.path / LOG_NAME

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": str(self.path),
            "state": str(self.state),
            "note": self.note,
            "profile": self.profile,
            "model": self.model,
            "url": self.url,
            "port": self.port,
            "pid": self.pid,
            "started_at": self.started_at,
            "ready_at": self.ready_at,
            "ended_at": self.ended_at,
            "returncode": self.returncode,
            "detached": self.detached,
            "host": self.host,
            "unwatched": self.unwatched,
            "command": list(self.command),
            "diagnosis": dict(self.diagnosis) if self.diagnosis else None,
            "log_tail": list(self.log_tail),
        }


def runs_root() -> Path:
    return runs_dir()


# -- reading -------------------------------------------------------------------


def _read_json(path: Path) -> tuple[Any, str]:
    """(the parsed file or None, '' or why it cannot be used)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_RECORD_BYTES + 1)
    except FileNotFoundError:
        return None, f"no {path.name}"
    except OSError as exc:
        return None, f"cannot read {path.name}: {exc.strerror or exc}"
    if len(data) > MAX_RECORD_BYTES:
        return None, f"{path.name} is over {MAX_RECORD_BYTES >> 20} MiB: not a run record"

    try:
        return parse_json(data, label=path.name, what="run record"), ""
    except InputError as exc:  # not text, not JSON, nested too deep, a number beyond 64 bits
        return None, exc.message


def read_tail(path: Path, lines: int = TAIL_LINES) -> tuple[str, ...]:
    """The last `lines` lines of a log, printable (control characters dropped)."""
    if lines <= 0:
        return ()
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(size - _TAIL_BYTES, 0))
            data = fh.read(_TAIL_BYTES)
    except OSError:
        return ()
    text = data.decode("utf-8", errors="replace")
    kept = [printable(ln) for ln in text.splitlines() if ln.strip()]
    return tuple(kept[-lines:])


def printable(text: str, limit: int = 300) -> str:
    """One safe display line: no escape sequences, no line breaks, bounded."""
    out = "".join(ch if ch.isprintable() else " " for ch in text).strip()
    return out if len(out) <= limit else out[: limit - 1] + "…"


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if value == value and abs(value) < 1e11 else None


def _model_from(argv_record: Any) -> tuple[str | None, tuple[str, ...]]:
    if not isinstance(argv_record, Mapping):
        return None, ()
    command = argv_record.get("command")
    cmd = tuple(str(c) for c in command) if isinstance(command, list) else ()
    argv = argv_record.get("argv")
    model = None
    if isinstance(argv, list):
        tokens = [str(a) for a in argv]
        for i, tok in enumerate(tokens):
            if tok in ("--model-path", "--model") and i + 1 < len(tokens):
                model = tokens[i + 1]
            elif tok.startswith(("--model-path=", "--model=")):
                model = tok.split("=", 1)[1]
    if model:
        model = source_for_path(model)
    return model, cmd


def load_run(path: Path, *, tail: int = TAIL_LINES) -> RunInfo:
    """What `path` holds, never raising: an unusable record is a CORRUPT RunInfo."""
    name = printable(path.name)
    record, problem = _read_json(path / STATUS_NAME)
    if problem and not (path / STATUS_NAME).exists() and (path / LOG_NAME).exists():
        problem = "no run.json: sglaunch stopped before it recorded the server"
    if not problem and not isinstance(record, Mapping):
        problem = "run.json is not a JSON object"
    if problem:
        return RunInfo(
            name,
            path,
            RunState.CORRUPT,
            printable(problem),
            log_tail=read_tail(path / LOG_NAME, tail),
        )
    assert isinstance(record, Mapping)
    pid = record.get("pid")
    if pid is not None and not is_pid(pid):
        return RunInfo(
            name,
            path,
            RunState.CORRUPT,
            printable(f"run.json: pid {pid!r} is not a process id"),
            record=record,
        )
    argv_record, _ = _read_json(path / "argv.json")
    model, command = _model_from(argv_record)
    if model is None and isinstance(record.get("model"), str):
        model = record["model"]  # an engine's run (Slurm) records it: no server argv here
    proc = record.get("process")
    identity = proc if isinstance(proc, Mapping) else {}
    profile = record.get("profile")
    url = record.get("url")
    rc = record.get("returncode")
    diagnosis = record.get("diagnosis")
    info = RunInfo(
        name,
        path,
        RunState.CORRUPT,
        profile=printable(profile) if isinstance(profile, str) else None,
        model=printable(model) if model else None,
        url=printable(url) if isinstance(url, str) else None,
        pid=pid,
        started_at=_num(record.get("started_at")),
        ready_at=_num(record.get("ready_at")),
        ended_at=_num(record.get("ended_at")),
        returncode=rc if isinstance(rc, int) and not isinstance(rc, bool) else None,
        detached=record.get("detached") is True,
        host=printable(identity["host"]) if isinstance(identity.get("host"), str) else None,
        command=command,
        diagnosis=diagnosis if isinstance(diagnosis, Mapping) else None,
        record=record,
    )
    if isinstance(record.get("slurm_job"), str):
        # a Slurm job: Slurm says whether it runs, not a local pid
        state, note = slurm_state(record)
        return replace(
            info,
            state=state,
            note=note,
            log_tail=read_tail(info.log_path, tail) if state.final else (),
        )
    verdict = check(identity, pid) if pid is not None else None
    state, note, unwatched = derive_state(record, verdict)
    tail_lines = (
        read_tail(path / LOG_NAME, tail) if state.final or state is RunState.CORRUPT else ()
    )
    return replace(info, state=state, note=note, unwatched=unwatched, log_tail=tail_lines)


_RECORDED_END = {"stopped": RunState.EXITED, "failed": RunState.FAILED, "died": RunState.DIED}
_RECORDED_LIVE = {
    "starting": RunState.STARTING,
    "ready": RunState.READY,
    "detached": RunState.READY,
    "unhealthy": RunState.UNHEALTHY,
    "stopping": RunState.STOPPING,
}


def _ending(record: Mapping[str, Any]) -> str:
    rc = record.get("returncode")
    if record.get("stopped_by"):
        return f"stopped by {printable(str(record['stopped_by']))}"
    if isinstance(rc, int) and not isinstance(rc, bool):
        return exit_text(rc)
    if isinstance(record.get("error"), str):
        return printable(record["error"])
    return "status unknown"


SLURM_HEAD_LOG = "node-0.log"


def slurm_state(record: Mapping[str, Any]) -> tuple[RunState, str]:
    """A Slurm run's state: its recorded end, else what Slurm says of the job now."""
    job = str(record["slurm_job"])
    status = record.get("status")
    if status in _RECORDED_END:
        why = record.get("error")
        note = f"slurm job {job}: " + (printable(why) if isinstance(why, str) else str(status))
        return _RECORDED_END[str(status)], note
    try:
        now = job_state(job)
    except UserError as exc:
        return RunState.UNKNOWN, printable(f"slurm job {job}: {exc.message}")
    if now.queued:
        return RunState.STARTING, f"slurm job {job}: queued"
    if now.running:
        where = f" on {printable(now.nodes)}" if now.nodes else ""
        if status == "stopping":
            return RunState.STOPPING, f"slurm job {job}: cancelling{where}"
        ready = status in ("ready", "detached") and record.get("ready_at") is not None
        return (RunState.READY if ready else RunState.STARTING), f"slurm job {job}{where}"
    if now.state in ENDED_OK:
        return RunState.EXITED, f"slurm job {job}: {now.state.lower()}"
    if now.state is None:
        return RunState.CRASHED, f"slurm job {job}: Slurm no longer knows it"
    was_ready = record.get("ready_at") is not None
    state = RunState.DIED if was_ready else RunState.FAILED
    return state, f"slurm job {job}: {now.state.lower()}"


def derive_state(record: Mapping[str, Any], verdict: Verdict | None) -> tuple[RunState, str, bool]:
    """(state, note, ended unwatched) from a run.json and the pid's verdict (None: no pid)."""
    status = record.get("status")
    if status in _RECORDED_END:
        state = _RECORDED_END[str(status)]
        diag = record.get("diagnosis")
        title = diag.get("title") if isinstance(diag, Mapping) else None
        note = _ending(record) + (f": {printable(str(title))}" if title else "")
        return state, note, False
    if status not in _RECORDED_LIVE:
        error = record.get("error")
        if verdict is None and isinstance(error, str):
            return RunState.FAILED, printable(error), False
        return RunState.CORRUPT, printable(f"run.json: unknown status {status!r}"), False
    if verdict is None:
        return (
            RunState.CORRUPT,
            "run.json names no pid for a server it says is " + str(status),
            False,
        )
    if verdict.liveness is Liveness.REMOTE:
        return RunState.REMOTE, verdict.why, False
    if verdict.liveness is Liveness.UNVERIFIABLE:
        return RunState.UNKNOWN, verdict.why, False
    if verdict.liveness is Liveness.ALIVE:
        state = _RECORDED_LIVE[str(status)]
        if state is RunState.READY and record.get("ready_at") is None:
            state = RunState.STARTING
        return state, "", False
    pid = record.get("pid")
    if status == "stopping":
        return RunState.EXITED, "stopped; its end was not recorded", True
    if verdict.liveness is Liveness.REUSED:
        return RunState.CRASHED, f"ended unwatched ({verdict.why})", True
    return RunState.CRASHED, f"ended unwatched: pid {pid} is gone and nobody recorded how", True


# -- finding runs ------------------------------------------------------------------


def _run_dirs(root: Path) -> list[Path]:
    try:
        entries = sorted(root.iterdir())
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise UserError(f"cannot read the runs folder {root}: {exc.strerror or exc}") from None
    return [p for p in entries if p.is_dir() and not p.is_symlink()]


def scan(root: Path | None = None, *, tail: int = TAIL_LINES) -> list[RunInfo]:
    """Every run under `root` (the data folder's runs/), oldest first."""
    return [load_run(p, tail=tail) for p in _run_dirs(root or runs_root())]


def is_run_dir(path: Path) -> bool:
    return any((path / n).exists() for n in (STATUS_NAME, "argv.json", LOG_NAME))


def resolve_run(spec: str, root: Path | None = None) -> Path:
    """RUN as a directory name, a unique prefix of one, or a path to a run directory."""
    if not spec or not spec.strip():
        raise UserError("give a run: its directory name, a unique prefix, or its path")
    root = root or runs_root()
    looks_like_path = "/" in spec or spec in (".", "..") or spec.startswith("~")
    if looks_like_path:
        path = Path(spec).expanduser()
        if not path.is_dir():
            raise UserError(f"{spec}: no such run directory")
        if not is_run_dir(path):
            raise UserError(
                f"{spec} is not a run directory (it has no {STATUS_NAME}, argv.json or {LOG_NAME})"
            )
        return path.absolute()
    dirs = _run_dirs(root)
    exact = [p for p in dirs if p.name == spec]
    if exact:
        return exact[0]
    matches = [p for p in dirs if p.name.startswith(spec)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise UserError(f"no run is named {printable(spec)!r} (see `sglaunch runs list`)")
    shown = ", ".join(p.name for p in matches[-3:])
    raise UserError(
        f"{printable(spec)!r} matches {len(matches)} runs ({'…, ' if len(matches) > 3 else ''}{shown}); "
        "give more of the name"
    )


def running_by_profile(root: Path | None = None) -> dict[str, list[RunInfo]]:
    """Profile name -> its runs whose server is running here (for the TUI's profile picker)."""
    out: dict[str, list[RunInfo]] = {}
    for run in scan(root, tail=0):
        if run.running and run.profile:
            out.setdefault(run.profile, []).append(run)
    return out


# -- pruning -----------------------------------------------------------------------


@dataclass(frozen=True)
class PruneResult:
    removed: tuple[RunInfo, ...]
    kept_running: int
    kept_recent: int
    unreadable: tuple[RunInfo, ...]  # corrupt or unknown: left for a person to judge
    failed: tuple[tuple[RunInfo, str], ...] = ()


def prune(root: Path | None = None, *, keep: int = 0, dry_run: bool = False) -> PruneResult:
    """Remove the directories of runs that have ended, the newest `keep` of them excepted."""
    runs = scan(root, tail=0)
    final = [r for r in runs if r.state.final]
    doomed = final[: max(len(final) - max(keep, 0), 0)]
    failed: list[tuple[RunInfo, str]] = []
    removed: list[RunInfo] = []
    for run in doomed:
        if not dry_run:
            try:
                shutil.rmtree(run.path)  # never follows a symlink inside
            except OSError as exc:
                failed.append((run, str(exc.strerror or exc)))
                continue
        removed.append(run)
    return PruneResult(
        removed=tuple(removed),
        kept_running=sum(1 for r in runs if r.running or r.state is RunState.REMOTE),
        kept_recent=len(final) - len(doomed),
        unreadable=tuple(r for r in runs if r.state in (RunState.CORRUPT, RunState.UNKNOWN)),
        failed=tuple(failed),
    )
