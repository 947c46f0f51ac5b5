"""`sglaunch attach RUN | --url URL [--json]`: watch a running server without owning it.

Without `--json` the TUI opens on the monitor screen; leaving it, or quitting, leaves the
server running. With `--json` the monitoring events go to stdout as JSON lines until
Ctrl-C (exit 130) or until the server ends (0 stopped cleanly, 3 failed to start, 4 died).
"""

from __future__ import annotations

import json
import os
import queue
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any, TextIO

from sglaunch.cli.args import Parser
from sglaunch.cli.tui_entry import open_tui
from sglaunch.errors import UserError
from sglaunch.exitcodes import ExitCode
from sglaunch.runtime.attach_target import resolve_attach_target
from sglaunch.runtime.state import EventKind, Status
from sglaunch.runtime.watch import Watcher

_INTERRUPT = object()


def parser() -> Parser:
    p = Parser(
        prog="sglaunch attach",
        description=(
            "Watch a running sglang server — one sglaunch started (a run: its directory name, "
            "a unique prefix, or its path; see `sglaunch runs list`) or any at --url — without "
            "owning it: leaving stops the watching, never the server."
        ),
    )
    p.add_argument("run", metavar="RUN", nargs="?", help="a run directory (sglaunch runs list)")
    p.add_argument("--url", help="a server's address instead, e.g. http://10.0.0.5:30000")
    p.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="the environment variable holding the server's --api-key (for /v1/loads)",
    )
    p.add_argument("--json", action="store_true", help="monitoring events as JSON lines on stdout")
    return p


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise UserError(
                f"--api-key-env {args.api_key_env}: that variable is not set; export it and retry"
            )
    target = resolve_attach_target(args.run, args.url, api_key=api_key)
    if not args.json:
        return open_tui(attach=target)
    return follow_json(target, sys.stdout)


def follow_json(target: Any, out: TextIO) -> int:
    """Every event as a JSON line until interrupted or the server ends."""
    watcher = Watcher(target)
    events: queue.Queue[Any] = watcher.events()
    previous: dict[signal.Signals, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, lambda *_: events.put(_INTERRUPT))
    watcher.start()
    try:
        while True:
            item = events.get()
            if item is _INTERRUPT:
                out.write(json.dumps({"event": "detached", "url": target.url}) + "\n")
                out.flush()
                return int(ExitCode.INTERRUPTED)
            out.write(json.dumps(item.to_json(), default=str) + "\n")
            out.flush()
            if item.kind is EventKind.EXITED:
                status = watcher.snapshot().status
                if status is Status.FAILED:
                    return int(ExitCode.START_FAILED)
                return int(ExitCode.DIED if status is Status.DIED else ExitCode.OK)
    finally:
        watcher.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
