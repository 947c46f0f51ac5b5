"""The real worker keeps the next request's child forked and waiting, and still answers
every request in a process of its own (a fresh spare each time)."""

from __future__ import annotations

import os
import time

import pytest

from sglaunch.oracle import Oracle
from sglaunch.validators.facts import GpuFacts


def _live_children(pid: int) -> set[int]:
    out = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as fh:
                fields = fh.read().rsplit(") ", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.add(int(entry))
    return out


def _one_waiting_child(pid: int, other_than: list[int] | None = None) -> int:
    """The worker's one child, waiting for a request (within 30 s: a loaded machine reaps an
    answered child late); with `other_than`, one that is none of those."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        kids = _live_children(pid) - set(other_than or ())
        if len(kids) == 1 and not (_live_children(pid) & set(other_than or ())):
            return kids.pop()
        time.sleep(0.05)
    raise AssertionError(f"the worker has children {_live_children(pid)}, not one new spare")


@pytest.mark.oracle
def test_a_spare_waits_for_each_request(sglang_python: str, h100x1: GpuFacts) -> None:
    with Oracle(sglang_python, timeout=60.0) as oracle:
        assert oracle.status.available, oracle.status.reason
        pid = oracle.worker_pid
        assert pid is not None
        spares = []
        for _ in range(2):
            spares.append(_one_waiting_child(pid, other_than=spares))
            answer = oracle.resolve(["--tp-size", "x"], {}, h100x1)
            assert answer.error is not None and answer.error.exit_code == 2
        assert spares[0] != spares[1]
        # the spare that answered exits as the next one is forked: wait until only the new
        # one is left (bounded), then it must be neither of the two that answered
        assert _one_waiting_child(pid, other_than=spares) not in spares
