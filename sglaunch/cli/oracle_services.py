"""`sglaunch oracle status [--check] [--json]` and `sglaunch oracle stop`: the shared services."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

from sglaunch.errors import UserError
from sglaunch.exitcodes import ExitCode
from sglaunch.oracle.interpreter import find_sglang_python
from sglaunch.oracle.ipc import ServiceRefused, service_key
from sglaunch.oracle.service_admin import list_services, stop_services
from sglaunch.oracle.service_client import connect


def duration(seconds: float | None) -> str:
    """12s, 4m05s, 2h03m."""
    if seconds is None:
        return "?"
    s = int(max(seconds, 0))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def describe(info: Any) -> str:
    """One line for one service."""
    if info.state == "stale":
        return f"stale socket {info.socket} ({info.note})"
    who = f"pid {info.pid}" if info.pid else "pid ?"
    version = f"sglang {info.sglang_version}" if info.sglang_version else "sglang ?"
    if info.state != "ready":
        use = info.state + (f": {info.note}" if info.note else "")
    elif info.clients:
        use = f"in use by {info.clients} client{'s' if info.clients != 1 else ''}"
    else:
        use = f"idle {duration(info.idle_s)} (exits after {duration(info.idle_timeout)})"
    return f"{who} · {version} · {info.python or '?'} · {use} · {info.requests} requests"


def _services(python: str | None) -> list[Any]:
    try:
        found = list_services()
    except ServiceRefused as exc:
        raise UserError(str(exc)) from None
    if python is None:
        return found

    path = find_sglang_python(python).path
    key = service_key(path) if path else ""
    return [s for s in found if f"oracle-{key}." in s.socket]


def _check(args: argparse.Namespace) -> dict[str, Any]:
    with connect(args.sglang_python, use_service=not args.no_oracle_service) as oracle:
        st = oracle.status
    return {
        "available": st.available,
        "reason": st.reason,
        "sglang_version": st.sglang_version,
        "python": st.python,
        "start_s": st.start_s,
        "service": not args.no_oracle_service,
    }


def _print_check(check: dict[str, Any], err: TextIO) -> None:
    if check["available"]:
        where = "through the shared service" if check["service"] else "in this process"
        print(
            f"sglang check available: sglang {check['sglang_version']} at {check['python']} "
            f"({where}, ready in {check['start_s'] or 0:.1f} s)",
            file=err,
        )
    else:
        print(f"sglang check unavailable: {check['reason']}", file=err)


def status(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    check = _check(args) if args.check else None
    services = _services(args.sglang_python)
    if args.json:
        data: dict[str, Any] = {"services": [s.to_json() for s in services]}
        if check is not None:
            data["check"] = check
        print(json.dumps(data), file=out)
    else:
        if check is not None:
            _print_check(check, err)
        if not services:
            print("no oracle service is running (the next sglang check starts one)", file=err)
        for s in services:
            print(f"oracle service {describe(s)}", file=err)
    if check is not None and not check["available"]:
        return int(ExitCode.VALIDATION)
    return int(ExitCode.OK)


def stop(args: argparse.Namespace, err: TextIO) -> int:
    python = find_sglang_python(args.sglang_python).path if args.sglang_python else None
    try:
        done = stop_services(python)
    except ServiceRefused as exc:
        raise UserError(str(exc)) from None
    if not done:
        print("no oracle service is running", file=err)
    failed = False
    for info, outcome in done:
        print(
            f"oracle service pid {info.pid or '?'} ({info.python or info.socket}): {outcome}",
            file=err,
        )
        failed = failed or outcome not in ("stopped", "killed", "removed its stale socket")
    return int(ExitCode.VALIDATION if failed else ExitCode.OK)


def services_command(
    args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    if args.command == "stop":
        return stop(args, err)
    return status(args, out, err)
