"""`ServiceOracle.submit`: the question leaves at once, the answer is read later, and it is
the answer `resolve` gives; an unread answer never becomes the next request's."""

from __future__ import annotations

import os
import time
from pathlib import Path

from sglaunch.oracle.service_client import ServiceOracle
from tests.support.service import H100X2


def _started(python: str, folder: Path) -> ServiceOracle:
    oracle = ServiceOracle(python, folder=folder, start_timeout=20.0)
    assert oracle.start().available, oracle.status.reason
    return oracle


def test_the_answer_is_worked_out_while_the_caller_works(fake_python: str, folder: Path) -> None:
    oracle = _started(fake_python, folder)
    try:
        env = {"FAKE_WORKER_SLEEP": "0.5", "FAKE_WORKER_SHOW": "FAKE_WORKER_SLEEP"}
        t0 = time.monotonic()
        read = oracle.submit(["--early"], env, H100X2)
        assert time.monotonic() - t0 < 0.4  # sent, not waited for
        time.sleep(0.5)  # the caller's own work, while the worker sleeps
        t1 = time.monotonic()
        early = read()
        assert time.monotonic() - t1 < 0.4  # already there
        later = oracle.resolve(["--early"], env, H100X2)
        assert early.ok and early.resolved is not None
        assert early.resolved["argv"] == ["--early"]
        assert early.resolved["cwd"] == os.getcwd()
        assert (early.resolved, early.changed, early.ok) == (
            later.resolved,
            later.changed,
            later.ok,
        )
    finally:
        oracle.close()


def test_an_unread_answer_never_answers_the_next_request(fake_python: str, folder: Path) -> None:
    oracle = _started(fake_python, folder)
    try:
        first = oracle.submit(["--first"], {}, H100X2)
        second = oracle.resolve(["--second"], {}, H100X2)  # before `first` was read
        assert second.resolved is not None and second.resolved["argv"] == ["--second"]
        third = oracle.submit(["--third"], {}, H100X2)
        fourth = oracle.submit(["--fourth"], {}, H100X2)
        answers = [read().resolved for read in (first, third, fourth)]
        assert [a["argv"] if a else None for a in answers] == [
            ["--first"],
            ["--third"],
            ["--fourth"],
        ]
    finally:
        oracle.close()


def test_submit_before_start_starts_the_service(fake_python: str, folder: Path) -> None:
    oracle = ServiceOracle(fake_python, folder=folder, start_timeout=20.0)
    try:
        answer = oracle.submit(["--cold"], {}, H100X2)()
        assert answer.ok and answer.resolved is not None
        assert answer.resolved["argv"] == ["--cold"]
    finally:
        oracle.close()
