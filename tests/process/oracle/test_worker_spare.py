"""The oracle worker forks each request's child ahead of the request (a spare), and the
spare keeps the isolation of a child forked for the request: one request, one process.

The worker module is standard library only; its `resolve` is replaced here by one that
reports which process answered, so these run without sglang.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from sglaunch.in_sglang import oracle_worker as worker


def _who_answers(request: dict[str, Any]) -> dict[str, Any]:
    if request.get("hang"):
        time.sleep(60)
    seen = os.environ.get("SPARE_TEST_SEEN")  # what an earlier request left behind
    os.environ["SPARE_TEST_SEEN"] = str(request["n"])
    return {"ok": True, "pid": os.getpid(), "n": request["n"], "seen": seen}


@pytest.fixture(autouse=True)
def fake_resolution(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(worker, "resolve", _who_answers)
    monkeypatch.delenv("SPARE_TEST_SEEN", raising=False)
    yield
    worker._reap()


def _exited(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return True  # reaped already
        if done:
            return True
        time.sleep(0.02)
    return False


def test_each_request_is_answered_by_its_own_spare() -> None:
    answers = []
    spares = []
    for n in range(3):
        spare = worker.fork_spare()
        spares.append(spare.pid)
        answers.append(worker.answer_in_child({"n": n}, 10.0, spare))
    assert [a["pid"] for a in answers] == spares
    assert len(set(spares)) == 3 and os.getpid() not in spares
    assert [a["n"] for a in answers] == [0, 1, 2]
    # nothing one request did reaches the next: each spare is a fresh copy of the parent
    assert [a["seen"] for a in answers] == [None, None, None]
    assert all(_exited(pid) for pid in spares)


def test_a_dead_spare_gives_way_to_a_child_forked_for_the_request() -> None:
    spare = worker.fork_spare()
    os.kill(spare.pid, signal.SIGKILL)
    while os.path.exists(f"/proc/{spare.pid}/fd/0"):  # until its pipe ends are closed
        time.sleep(0.01)
    answer = worker.answer_in_child({"n": 7}, 10.0, spare)
    assert answer["n"] == 7 and answer["pid"] not in (spare.pid, os.getpid())


def test_a_hanging_spare_is_killed_at_the_timeout() -> None:
    spare = worker.fork_spare()
    answer = worker.answer_in_child({"n": 1, "hang": True}, 0.5, spare)
    assert answer["timed_out"] and not answer["ok"]
    assert answer["fault"] == "sglang's resolution did not finish within 0.5 s"
    assert not os.path.exists(f"/proc/{spare.pid}")  # killed and reaped


def test_a_spare_that_gets_no_request_exits() -> None:
    """The worker exiting closes the spare's request pipe: the spare must not linger."""
    spare = worker.fork_spare()
    os.close(spare.request_fd)
    assert _exited(spare.pid)
    assert os.read(spare.answer_fd, 100) == b""  # no answer was made up
    os.close(spare.answer_fd)


def test_the_spare_does_not_hold_the_protocol_stream() -> None:
    """A spare holding the worker's stdout copy would keep its reader from seeing EOF."""
    read_fd, write_fd = os.pipe()
    spare = worker.fork_spare((write_fd,))
    os.close(write_fd)
    try:
        assert os.read(read_fd, 10) == b""  # EOF: the only other writer is the spare
    finally:
        os.close(read_fd)
        spare.discard()
