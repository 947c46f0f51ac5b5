"""Who a recorded PID is now: the server sglaunch started, gone, someone else, or elsewhere.

PIDs are reused, so a run directory's `pid` alone proves nothing. At spawn the
run records the process's start time (the kernel's start ticks on Linux, which
with the boot id name one process for ever; psutil's create time elsewhere) and
the machine; once the server is ready, a digest of its command line as the
kernel shows it (secrets masked first, so the digest cannot be brute-forced
back into an API key). A PID is trusted only when all of that still matches.
"""

from __future__ import annotations

import contextlib
import hashlib
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sglaunch.secrets import mask_argv

CREATE_TIME_SLACK_S = 1.0  # psutil's create time moves with the boot-time estimate
MAX_PID = 1 << 22  # Linux's pid_max ceiling


class Liveness(StrEnum):
    ALIVE = "alive"  # the recorded process, still running
    GONE = "gone"  # no such process (or a zombie)
    REUSED = "reused"  # the pid now belongs to another process
    REMOTE = "remote"  # recorded on another machine: nothing here can tell
    UNVERIFIABLE = "unverifiable"  # alive, but the record has no identity to compare


@dataclass(frozen=True)
class Verdict:
    liveness: Liveness
    why: str = ""  # one line for REUSED / REMOTE / UNVERIFIABLE


def hostname() -> str:
    return socket.gethostname()


def boot_id() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            return fh.read(64).strip() or None
    except OSError:
        return None


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state letter, start ticks) from /proc/PID/stat, or None off Linux / when gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read(4096)
    except OSError:
        return None
    # the command name may hold spaces and parentheses: split after the last ')'
    fields = data.rpartition(b")")[2].split()
    try:
        return fields[0].decode(), int(fields[19])
    except (IndexError, ValueError):
        return None


def _psutil_process(pid: int) -> Any:
    import psutil  # psutil (~40 ms): only when a process is looked at

    try:
        return psutil.Process(pid)
    except (psutil.Error, ValueError):
        return None


def is_pid(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < MAX_PID


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            data = fh.read(1 << 20)
        return [a.decode(errors="surrogateescape") for a in data.split(b"\0")[:-1]]
    except FileNotFoundError:
        return []
    except OSError:
        pass
    proc = _psutil_process(pid)
    try:
        return list(proc.cmdline()) if proc is not None else []
    except Exception:
        return []


def cmdline_digest(pid: int) -> str | None:
    """sha256 of the process's masked command line, or None when it cannot be read."""
    argv = _cmdline(pid)
    if not argv:
        return None
    return hashlib.sha256("\0".join(mask_argv(argv)).encode(errors="surrogateescape")).hexdigest()


def identify(pid: int) -> dict[str, Any]:
    """What to record about a process just spawned (JSON-ready)."""
    out: dict[str, Any] = {"pid": pid, "host": hostname(), "boot_id": boot_id()}
    stat = _proc_stat(pid)
    if stat is not None:
        out["start_ticks"] = stat[1]
        return out
    proc = _psutil_process(pid)
    if proc is not None:
        with contextlib.suppress(Exception):
            out["create_time"] = proc.create_time()
    return out


def _alive_state(pid: int) -> tuple[bool, int | None]:
    """(alive and not a zombie, its start ticks when known)."""
    stat = _proc_stat(pid)
    if stat is not None:
        return stat[0] != "Z", stat[1]
    proc = _psutil_process(pid)
    if proc is None:
        return False, None
    try:
        import psutil  # psutil (~40 ms): only when a process is looked at

        return proc.status() != psutil.STATUS_ZOMBIE, None
    except Exception:
        return False, None


def _started_differently(pid: int, recorded: Mapping[str, Any], ticks: int | None) -> str:
    """Why the live `pid` is not the recorded process by its start time ('' when it is)."""
    want_ticks = recorded.get("start_ticks")
    if isinstance(want_ticks, int) and ticks is not None:
        return "" if ticks == want_ticks else "it started at another time"
    want_time = recorded.get("create_time")
    proc = _psutil_process(pid)
    if isinstance(want_time, int | float) and proc is not None:
        try:
            now = proc.create_time()
        except Exception:
            return "its start time cannot be read"
        return "" if abs(now - want_time) <= CREATE_TIME_SLACK_S else "it started at another time"
    return "no start time was recorded"


def check(recorded: Mapping[str, Any] | None, pid: int) -> Verdict:
    """Is `pid` still the process `recorded` (identify()'s dict, plus cmdline_sha256)?"""
    rec = recorded if isinstance(recorded, Mapping) else {}
    host = rec.get("host")
    if isinstance(host, str) and host and host != hostname():
        return Verdict(Liveness.REMOTE, f"it runs on {host}, not on this machine ({hostname()})")
    alive, ticks = _alive_state(pid)
    if not alive:
        return Verdict(Liveness.GONE)
    boot = rec.get("boot_id")
    if isinstance(boot, str) and boot and boot != boot_id():
        return Verdict(Liveness.REUSED, "the machine has rebooted since")
    why = _started_differently(pid, rec, ticks)
    if why == "no start time was recorded":
        return Verdict(Liveness.UNVERIFIABLE, f"pid {pid} is alive, but {why} to confirm it")
    if why:
        return Verdict(Liveness.REUSED, f"pid {pid} was reused: {why} than the server")
    digest = rec.get("cmdline_sha256")
    if isinstance(digest, str) and digest:
        now = cmdline_digest(pid)
        if now is not None and now != digest:
            return Verdict(
                Liveness.REUSED, f"pid {pid} now runs another command line than the server"
            )
    return Verdict(Liveness.ALIVE)
