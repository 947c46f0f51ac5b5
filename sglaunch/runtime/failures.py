"""Why the server failed: the log's last error, matched to a runtime card, with fixes."""

from __future__ import annotations

import re
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sglaunch.runtime.logparse import strip_prefix
from sglaunch.validators.cards import Card
from sglaunch.validators.cards import runtime as rc
from sglaunch.validators.findings import Fix
from sglaunch.validators.registry import get_card

_EXCEPTION = re.compile(
    r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Interrupt|Exit|Warning)?: "
)
TB_HEAD = "Traceback (most recent call last):"
MAX_TB_LINES = 80
# Cards the monitor raises itself, from live evidence rather than from a dead server's log.
_LIVE_ONLY = {rc.HEALTH, rc.STARTUP_TIMEOUT, rc.HEADROOM_LOW, rc.HEADROOM_HIGH, rc.METRICS_OFF}
# Generic cards chosen by context when nothing specific matched.
_FALLBACKS = {rc.CRASH, rc.SCHEDULER_EXCEPTION, rc.STARTUP_EXIT}


@dataclass(frozen=True)
class Diagnosis:
    code: str
    title: str
    message: str  # sglang's words: the matched line or the exception's last line
    fixes: tuple[Fix, ...] = ()
    traceback: str = ""  # the last traceback in the log, for anything unmatched
    returncode: int | None = None
    detail: str = ""
    card: Card | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "title": self.title,
            "message": self.message,
            "fixes": [f.to_json() for f in self.fixes],
            "traceback": self.traceback,
            "returncode": self.returncode,
            "detail": self.detail,
        }


def last_traceback(lines: Sequence[str]) -> str:
    """The last Python traceback in the log, from its header to the exception text."""
    start = None
    for i in range(len(lines) - 1, -1, -1):
        if TB_HEAD in lines[i]:
            start = i
            break
    if start is None:
        return ""
    head = lines[start]
    out = [head[head.index(TB_HEAD) :]]
    seen_exception = False
    for line in lines[start + 1 : start + 1 + MAX_TB_LINES]:
        if line.startswith("["):
            break  # the next log record
        if seen_exception and line.startswith("  File "):
            break
        out.append(line)
        if not line.startswith(" ") and _EXCEPTION.match(line):
            seen_exception = True
    return "\n".join(out)


def exception_line(traceback: str) -> str:
    """`RuntimeError: ...`: the first line after the frames."""
    for line in traceback.splitlines()[1:]:
        if not line.startswith(" ") and _EXCEPTION.match(line):
            return line
    return ""


def _find(card: Card, lines: Sequence[str]) -> int | None:
    for i in range(len(lines) - 1, -1, -1):
        if card.matches(lines[i]):
            return i
    return None


def _message_at(lines: Sequence[str], i: int) -> str:
    text = strip_prefix(lines[i])
    if text.endswith(TB_HEAD):
        tail = last_traceback(lines[i:])
        return exception_line(tail) or text
    return text


def diagnosis_for(
    code: str,
    message: str,
    flags: Mapping[str, Any],
    *,
    traceback: str = "",
    returncode: int | None = None,
    detail: str = "",
    free_port: int | None = None,
) -> Diagnosis:
    card = get_card(code)
    return Diagnosis(
        code=code,
        title=card.title if card else code,
        message=message,
        fixes=rc.runtime_fixes(code, message, flags, free_port=free_port),
        traceback=traceback,
        returncode=returncode,
        detail=detail,
        card=card,
    )


def diagnose(
    lines: Sequence[str],
    *,
    ready: bool,
    returncode: int | None,
    flags: Mapping[str, Any],
    free_port: Callable[[], int | None] | None = None,
) -> Diagnosis:
    """The card for a server that exited on its own, from the tail of its log."""
    tb = last_traceback(lines)
    for card in rc.runtime_cards():
        if card.code in _LIVE_ONLY or card.code in _FALLBACKS:
            continue
        i = _find(card, lines)
        if i is None:
            continue
        port = free_port() if card.code == rc.PORT_IN_USE and free_port else None
        return diagnosis_for(
            card.code,
            _message_at(lines, i),
            flags,
            traceback=tb,
            returncode=returncode,
            free_port=port,
        )
    exc = exception_line(tb) if tb else ""
    status = exit_text(returncode)
    if ready:
        return diagnosis_for(
            rc.CRASH,
            exc or f"the server exited ({status})",
            flags,
            traceback=tb,
            returncode=returncode,
        )
    sched = get_card(rc.SCHEDULER_EXCEPTION)
    if sched is not None and _find(sched, lines) is not None:
        return diagnosis_for(
            rc.SCHEDULER_EXCEPTION,
            exc or "a scheduler raised",
            flags,
            traceback=tb,
            returncode=returncode,
        )
    return diagnosis_for(
        rc.STARTUP_EXIT,
        exc or f"the server exited during start-up ({status})",
        flags,
        traceback=tb,
        returncode=returncode,
    )


def exit_text(returncode: int | None) -> str:
    """How a process ended, in words: `exit code 1`, `killed by SIGKILL`."""
    if returncode is None:
        return "status unknown"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}"
