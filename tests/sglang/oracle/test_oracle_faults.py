"""Every way the oracle can fail gives one line, never a traceback, and no orphans."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sglaunch.oracle import Oracle, oracle_findings
from sglaunch.validators.facts import GpuFacts
from sglaunch.validators.findings import Severity
from tests.support.oracle_models import dead_within, fake_python

HANG = {"SGLAUNCH_ORACLE_TEST_HANG": "1"}


def _one_line(text: str) -> bool:
    return bool(text) and "\n" not in text and "Traceback" not in text


def test_a_missing_interpreter_is_one_line() -> None:
    oracle = Oracle("/nonexistent/bin/python")
    status = oracle.start()
    assert not status.available
    assert status.reason == "--sglang-python /nonexistent/bin/python: no such file"


def test_no_sglang_in_the_interpreter(tmp_path: Path, h100x1: GpuFacts) -> None:
    # this test process's own Python: a real interpreter without sglang
    python = fake_python(tmp_path, "python", f'exec "{sys.executable}" "$@"')
    with Oracle(python) as oracle:
        assert not oracle.status.available
        assert (
            oracle.status.reason
            == f"sglang is not installed in {python}; run `sglaunch oracle setup`"
        )
        answer = oracle.resolve(["--model-path", "x"], {}, h100x1)
    assert not answer.ok and not answer.answered
    assert answer.fault == oracle.status.reason
    [finding] = oracle_findings(answer)
    assert finding.severity is Severity.WARNING
    assert finding.code == "oracle-fault"


def test_a_release_before_the_range(tmp_path: Path) -> None:
    hello = '{"event": "hello", "protocol": 1, "sglang_version": "0.5.18"}'
    python = fake_python(tmp_path, "python", f"echo '{hello}'; sleep 30")
    t0 = time.monotonic()
    with Oracle(python) as oracle:
        assert not oracle.status.available
        assert oracle.status.reason == (
            "sglang 0.5.18 found; the sglang check needs sglang 0.5.19 or later (sglaunch "
            "mirrors 0.5.19–0.5.23): before 0.5.19 sglang has no resolution pipeline to ask"
        )
        assert oracle.status.sglang_version == "0.5.18"
    assert time.monotonic() - t0 < 25  # the fake was killed, not waited for


def test_an_interpreter_that_dies_at_once(tmp_path: Path) -> None:
    python = fake_python(
        tmp_path, "python", "echo 'libpython3.11.so: cannot open shared object' >&2; exit 127"
    )
    status = Oracle(python).start()
    assert not status.available
    assert _one_line(status.reason)
    assert status.reason.endswith(
        "exited before the oracle was ready (status 127): libpython3.11.so: cannot open shared object"
    )


def test_a_broken_environment(tmp_path: Path, sglang_python: str) -> None:
    """sglang is installed but cannot be imported: here, torch is broken."""
    broken = tmp_path / "shadow" / "torch"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text('raise ImportError("torch is broken in this test")\n')
    python = fake_python(
        tmp_path, "python", f'PYTHONPATH="{broken.parent}" exec "{sglang_python}" "$@"'
    )
    status = Oracle(python).start()
    assert not status.available
    assert status.sglang_version == "0.5.23"
    assert status.reason == "importing sglang failed: ImportError: torch is broken in this test"


@pytest.fixture(scope="module")
def short_oracle(sglang_python: str) -> Iterator[Oracle]:
    with Oracle(sglang_python, timeout=2.0) as o:
        assert o.status.available, o.status.reason
        yield o


@pytest.mark.oracle
def test_a_hanging_resolution_times_out_and_the_worker_stays(
    short_oracle: Oracle, h100x1: GpuFacts, tmp_path: Path
) -> None:
    pid = short_oracle.worker_pid
    answer = short_oracle.resolve(["--model-path", "x"], HANG, h100x1)
    assert answer.timed_out and not answer.worker_died
    assert answer.fault == "sglang's resolution did not finish within 2 s"
    assert short_oracle.worker_pid == pid
    after = short_oracle.resolve(["--tp-size", "x"], {}, h100x1)
    assert after.error is not None and after.error.exit_code == 2


@pytest.mark.oracle
def test_a_crashing_resolution_is_reported(short_oracle: Oracle, h100x1: GpuFacts) -> None:
    pid = short_oracle.worker_pid
    answer = short_oracle.resolve(
        ["--model-path", "x"], {"SGLAUNCH_ORACLE_TEST_CRASH": "1"}, h100x1
    )
    assert answer.fault == "the resolving process died without an answer (killed by signal 9)"
    assert short_oracle.worker_pid == pid


@pytest.mark.oracle
def test_a_killed_worker_is_restarted(short_oracle: Oracle, h100x1: GpuFacts) -> None:
    short_oracle.timeout = 60.0
    pid = short_oracle.worker_pid
    assert pid is not None
    killer = threading.Timer(1.0, os.kill, (pid, signal.SIGKILL))
    killer.start()
    try:
        answer = short_oracle.resolve(["--model-path", "x"], HANG, h100x1)
    finally:
        killer.cancel()
        short_oracle.timeout = 2.0
    assert answer.worker_died and not answer.ok
    assert answer.fault == "the oracle worker died; it restarts on the next request"
    after = short_oracle.resolve(["--tp-size", "x"], {}, h100x1)
    assert after.answered, after.fault
    assert short_oracle.worker_pid not in (None, pid)


@pytest.mark.oracle
def test_close_kills_the_worker_and_its_children(sglang_python: str, h100x1: GpuFacts) -> None:
    oracle = Oracle(sglang_python, timeout=60.0)
    assert oracle.start().available
    pid = oracle.worker_pid
    assert pid is not None
    # leave a resolving child hanging
    worker = threading.Thread(target=oracle.resolve, args=(["--model-path", "x"], HANG, h100x1))
    worker.start()
    time.sleep(1.0)
    children = _children(pid)
    assert children, "the hanging request should have a resolving child"
    oracle.close()  # from another thread than the one whose request is in flight
    worker.join(timeout=10)
    assert not worker.is_alive()
    for p in [pid, *children]:
        assert dead_within(p), f"process {p} outlived close()"


@pytest.mark.oracle
def test_the_worker_dies_with_its_client(sglang_python: str, tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import os, sys
        from sglaunch.oracle import Oracle
        o = Oracle({sglang_python!r})
        status = o.start()
        print(o.worker_pid if status.available else "unavailable: " + status.reason, flush=True)
        os._exit(0)  # no close(), no atexit: as if the client were killed
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    pid = int(done.stdout.strip())
    assert dead_within(pid), "the oracle worker outlived its client"


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as fh:
                fields = fh.read().rsplit(") ", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(entry))
    return out


@pytest.mark.oracle
def test_a_worker_started_from_a_thread_outlives_that_thread(
    sglang_python: str, h100x1: GpuFacts
) -> None:
    """PR_SET_PDEATHSIG fires when the forking *thread* exits: a TUI worker thread
    that starts the oracle and ends must not take the worker with it."""
    oracle = Oracle(sglang_python)
    starter = threading.Thread(target=oracle.start)
    starter.start()
    starter.join(timeout=180)
    assert oracle.status.available, oracle.status.reason
    pid = oracle.worker_pid
    time.sleep(1.0)
    try:
        answer = oracle.resolve(["--tp-size", "x"], {}, h100x1)
        assert answer.answered, answer.fault
        assert oracle.worker_pid == pid
    finally:
        oracle.close()
    assert dead_within(pid)


def test_a_failed_start_is_retried_by_start_not_by_each_request(
    tmp_path: Path, h100x1: GpuFacts
) -> None:
    launches = tmp_path / "launches"
    python = fake_python(tmp_path, "python", f"echo run >> '{launches}'; exit 1")

    def count() -> int:
        return len(launches.read_text().split()) if launches.exists() else 0

    lazy = Oracle(python)
    first = lazy.resolve(["--model-path", "x"], {}, h100x1)  # never started: starts now
    assert first.fault and count() == 1
    again = lazy.resolve(["--model-path", "x"], {}, h100x1)  # failed once: not retried
    assert again.fault == first.fault and count() == 1
    assert not lazy.start().available and count() == 2  # start() retries
    lazy.close()
