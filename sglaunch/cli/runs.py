"""`sglaunch runs list | show RUN | logs RUN [--follow] | stop RUN | prune`: the servers sglaunch started.

RUN is a run directory's name (`sglaunch runs list` shows them), a unique prefix
of one, or its path. Data goes to stdout (the table, `--json`, the log); what
happened goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TextIO

from sglaunch.cli.args import Parser
from sglaunch.errors import UserError
from sglaunch.exitcodes import ExitCode
from sglaunch.runtime.attach_target import endpoint_of
from sglaunch.runtime.probe import request
from sglaunch.runtime.runs import RunState, load_run, prune, read_tail, resolve_run, scan
from sglaunch.runtime.runstop import stop_run

if TYPE_CHECKING:
    from sglaunch.runtime.runs import RunInfo

FOLLOW_POLL_S = 0.2


def parser() -> Parser:
    p = Parser(
        prog="sglaunch runs",
        description=(
            "The servers sglaunch started (run directories under its data folder): list them with "
            "their state, show one, read or follow its log, stop it, or remove the ended ones. "
            "RUN is a run's directory name, a unique prefix of it, or its path."
        ),
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    ls = sub.add_parser("list", help="every run with its state, model, port, profile, start time")
    ls.add_argument("--json", action="store_true", help="one JSON array on stdout")
    ls.add_argument("--running", action="store_true", help="only the servers still running")
    show = sub.add_parser("show", help="everything recorded about one run")
    show.add_argument("run", metavar="RUN")
    show.add_argument("--json", action="store_true")
    logs = sub.add_parser("logs", help="a run's server log")
    logs.add_argument("run", metavar="RUN")
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing until it ends")
    logs.add_argument("-n", "--tail", type=int, metavar="N", help="only the last N lines")
    stop = sub.add_parser("stop", help="stop a run's server and every process of its tree")
    stop.add_argument("run", metavar="RUN")
    stop.add_argument(
        "--grace",
        type=float,
        default=25.0,
        metavar="SECONDS",
        help="how long sglang may drain before its tree is killed (default 25)",
    )
    prune = sub.add_parser("prune", help="remove the directories of runs that have ended")
    prune.add_argument("--keep", type=int, default=0, metavar="N", help="keep the newest N")
    prune.add_argument("--dry-run", action="store_true", help="say what would go; remove nothing")
    return p


def when(ts: float | None) -> str:
    if ts is None:
        return "-"
    try:
        return datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):
        return "-"


def state_text(run: RunInfo) -> str:
    state = str(run.state)
    if run.state in (RunState.EXITED, RunState.FAILED, RunState.DIED) and run.note:
        return f"{state} ({run.note.split(':', 1)[0]})"
    if run.state is RunState.REMOTE and run.host:
        return f"remote (on {run.host})"
    if run.state is RunState.CRASHED:
        return "crashed (unwatched)" if run.unwatched else state
    return state


def _list(args: argparse.Namespace, out: TextIO) -> int:
    runs = scan()
    if args.running:
        runs = [r for r in runs if r.running]
    if args.json:
        out.write(json.dumps([r.to_json() for r in runs], indent=2) + "\n")
        return int(ExitCode.OK)
    if not runs:
        print("no runs" + (" running" if args.running else " yet"), file=sys.stderr)
        return int(ExitCode.OK)
    rows = [
        (
            r.name,
            state_text(r),
            r.model or "-",
            str(r.port) if r.port else "-",
            r.profile or "-",
            when(r.started_at),
        )
        for r in runs
    ]
    head = ("RUN", "STATE", "MODEL", "PORT", "PROFILE", "STARTED")
    widths = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    out.write(line.format(*head).rstrip() + "\n")
    for run, row in zip(runs, rows, strict=True):
        out.write(line.format(*row).rstrip() + "\n")
        if run.note and run.state.name in ("CRASHED", "CORRUPT", "UNKNOWN"):
            out.write(f"    {run.note}\n")
        if run.state.name == "CRASHED":
            for tail in run.log_tail[-3:]:
                out.write(f"    │ {tail}\n")
    return int(ExitCode.OK)


def _load(spec: str, tail: int = 10) -> RunInfo:
    return load_run(resolve_run(spec), tail=tail)


def _show(args: argparse.Namespace, out: TextIO) -> int:
    run = _load(args.run)
    probe = _probe(run) if run.running and run.url else None
    if args.json:
        data = run.to_json()
        data["http"] = probe
        out.write(json.dumps(data, indent=2) + "\n")
        return int(ExitCode.OK)
    facts = [
        ("run", run.name),
        ("path", str(run.path)),
        ("state", state_text(run)),
        ("note", run.note),
        ("profile", run.profile or ""),
        ("model", run.model or ""),
        ("url", run.url or ""),
        ("pid", str(run.pid or "")),
        ("host", run.host or ""),
        ("detached", "yes" if run.detached else ""),
        ("started", when(run.started_at) if run.started_at else ""),
        (
            "ready after",
            f"{run.ready_at - run.started_at:.1f} s" if run.ready_at and run.started_at else "",
        ),
        ("ended", when(run.ended_at) if run.ended_at else ""),
        ("http", probe or ""),
        ("command", " ".join(run.command)),
    ]
    if run.diagnosis:
        d = run.diagnosis
        facts.append(("failure", f"[{d.get('code')}] {d.get('title')}: {d.get('message')}"))
    for key, value in facts:
        if value:
            out.write(f"{key + ':':<13}{value}\n")
    if run.log_tail:
        out.write(f"log ({run.log_path}), last lines:\n")
        for line in run.log_tail:
            out.write(f"    {line}\n")
    return int(ExitCode.OK)


def _probe(run: RunInfo) -> str:
    """`/ready` as the server answers it now, in words (it is running on this machine)."""
    try:
        res = request(endpoint_of(run.url or ""), "/ready", timeout=1.0)
    except (OSError, UserError) as exc:
        return f"not answering ({exc})"
    return f"/ready answers {res.status}"


def _logs(args: argparse.Namespace, out: TextIO) -> int:
    run = _load(args.run, tail=0)
    if not run.log_path.is_file():
        raise UserError(f"run {run.name} has no log ({run.log_path} does not exist)")
    if args.tail is not None and args.tail < 0:
        raise UserError("--tail N: give 0 or more lines")
    try:
        with open(run.log_path, "rb") as fh:
            if args.tail is not None:
                for line in read_tail(run.log_path, args.tail):
                    out.write(line + "\n")
                fh.seek(0, 2)
            else:
                _copy(fh, out)
            out.flush()
            if args.follow:
                _follow(run, fh, out)
    except OSError as exc:
        raise UserError(f"cannot read {run.log_path}: {exc.strerror or exc}") from None
    return int(ExitCode.OK)


def _copy(fh: Any, out: TextIO) -> int:
    copied = 0
    while chunk := fh.read(1 << 16):
        out.write(chunk.decode("utf-8", errors="replace"))
        copied += len(chunk)
    return copied


def _follow(run: RunInfo, fh: Any, out: TextIO) -> None:
    """New lines as they come, until the server has ended and its log is quiet (or Ctrl-C)."""
    quiet_since: float | None = None
    while True:
        if _copy(fh, out):
            out.flush()
            quiet_since = None
            continue
        if fh.tell() > run.log_path.stat().st_size:
            fh.seek(0)  # the log was truncated
            continue
        state = load_run(run.path, tail=0).state
        if state is not RunState.REMOTE and not state.running:
            quiet_since = quiet_since or time.monotonic()
            if time.monotonic() - quiet_since > 1.0:  # the relay writes the last lines late
                return
        time.sleep(FOLLOW_POLL_S)


def _stop(args: argparse.Namespace, err: TextIO) -> int:
    run = _load(args.run, tail=0)
    outcome = stop_run(run, grace=args.grace)
    if outcome is None:
        print(
            f"sglaunch: run {run.name} is not running ({state_text(run)}); nothing to stop",
            file=err,
        )
        return int(ExitCode.OK)
    if outcome.left:
        print(
            f"sglaunch: run {run.name}: {len(outcome.left)} processes survived SIGKILL: "
            + ", ".join(map(str, outcome.left)),
            file=err,
        )
        return int(ExitCode.VALIDATION)
    job = run.record.get("slurm_job")
    if isinstance(job, str):
        print(f"sglaunch: cancelled slurm job {job} of run {run.name}; no task is left", file=err)
        return int(ExitCode.OK)
    forced = f", {outcome.killed} killed after {args.grace:g} s" if outcome.killed else ""
    print(
        f"sglaunch: stopped run {run.name} (pid {outcome.pid}, {outcome.processes} processes{forced})",
        file=err,
    )
    return int(ExitCode.OK)


def _prune(args: argparse.Namespace, err: TextIO) -> int:
    if args.keep < 0:
        raise UserError("--keep N: give 0 or more runs to keep")
    result = prune(keep=args.keep, dry_run=args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    for run in result.removed:
        print(f"{verb} {run.name} ({state_text(run)})", file=err)
    for run, why in result.failed:
        print(f"could not remove {run.name}: {why}", file=err)
    for run in result.unreadable:
        print(
            f"kept {run.name}: {run.note} (remove it by hand if it is debris: {run.path})", file=err
        )
    print(
        f"{verb} {len(result.removed)} ended runs; kept {result.kept_running} running"
        + (f", {result.kept_recent} recent" if result.kept_recent else ""),
        file=err,
    )
    return int(ExitCode.VALIDATION if result.failed else ExitCode.OK)


def run(argv: Sequence[str], *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    args = parser().parse_args(list(argv))
    out = out or sys.stdout
    err = err or sys.stderr
    if args.command == "list":
        return _list(args, out)
    if args.command == "show":
        return _show(args, out)
    if args.command == "logs":
        return _logs(args, out)
    if args.command == "stop":
        return _stop(args, err)
    return _prune(args, err)
