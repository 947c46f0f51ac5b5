"""The stand-in server's multi-node mode on loopback: it rendezvouses and fails as sglang does.

The ranks run as separate processes on 127.0.0.1 with their own HTTP ports; the Slurm tests
run the same mode across two real nodes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from tests.support.processes import FAKE, MODEL, free_tcp_port

TP = 4  # two schedulers per node: the prefixes show global TP numbers


def start(
    rank: int, nnodes: int, dist: int, port: int, timeout: int = 300
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(FAKE), "--model-path", MODEL, "--tp", str(TP),
         "--nnodes", str(nnodes), "--node-rank", str(rank), "--dist-init-addr", f"127.0.0.1:{dist}",
         "--dist-timeout", str(timeout), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        env={**os.environ, "FAKE_SGLANG_TIME_SCALE": "0.02", "FAKE_SGLANG_SCENARIO": "ok"},
    )  # fmt: skip


def status(port: int, path: str = "/health") -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as res:
            return int(res.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def wait_status(port: int, want: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while status(port) != want:
        assert time.monotonic() < deadline, f"port {port} never answered {want}"
        time.sleep(0.1)


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=10)


def finish(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[int, str]:
    out, _ = proc.communicate(timeout=timeout)
    return proc.returncode, out


def test_rank_zero_serves_only_after_every_node_joined(procs: list[subprocess.Popen[str]]) -> None:
    dist, port0, port1 = free_tcp_port(), free_tcp_port(), free_tcp_port()
    procs.append(start(0, 2, dist, port0))
    time.sleep(2.0)  # longer than a lone node takes to load at this time scale
    assert status(port0) == 0, "node 0 served before node 1 joined"
    procs.append(start(1, 2, dist, port1))
    wait_status(port0, 200)
    # node 1 serves health only: no API, no model info
    assert status(port1) == 200
    assert status(port1, "/model_info") == 404
    # rank 0's exit ends the others: its shutdown reaches node 1, which only logs SIGTERM
    os.kill(procs[1].pid, signal.SIGTERM)
    time.sleep(0.5)
    assert procs[1].poll() is None, "node >= 1 must wait for rank 0's shutdown, not exit on SIGTERM"
    os.kill(procs[0].pid, signal.SIGTERM)
    finish(procs[0])
    code1, out1 = finish(procs[1])
    assert code1 == 0
    assert "SIGTERM received on node_rank 1; waiting for the rank-0 ShutdownReq broadcast" in out1
    assert "[" in out1 and " TP2] Init parallel ends." in out1 and " TP0]" not in out1
    assert "Dummy health check server started in background thread at 127.0.0.1:" in out1


def test_killed_rank_zero_ends_the_others(procs: list[subprocess.Popen[str]]) -> None:
    dist, port0, port1 = free_tcp_port(), free_tcp_port(), free_tcp_port()
    procs += [start(0, 2, dist, port0), start(1, 2, dist, port1)]
    wait_status(port0, 200)
    wait_status(port1, 200)
    os.killpg(procs[0].pid, signal.SIGKILL)
    code, out = finish(procs[1], timeout=30)
    assert code != 0
    assert "node_rank 0 is gone" in out


def test_rank_outside_the_nodes_fails(procs: list[subprocess.Popen[str]]) -> None:
    dist, port0, port1 = free_tcp_port(), free_tcp_port(), free_tcp_port()
    procs += [start(0, 2, dist, port0), start(2, 2, dist, port1)]
    code2, out2 = finish(procs[1])
    code0, out0 = finish(procs[0])
    assert code2 != 0 and code0 != 0
    for out in (out0, out2):
        assert "node_rank 2 is out of range for --nnodes 2" in out
        assert "Scheduler hit an exception: Traceback" in out


def test_two_nodes_with_the_same_rank_fail(procs: list[subprocess.Popen[str]]) -> None:
    dist = free_tcp_port()
    procs += [start(0, 3, dist, free_tcp_port())]
    procs += [start(1, 3, dist, free_tcp_port()), start(1, 3, dist, free_tcp_port())]
    results = [finish(p) for p in procs]
    assert all(code != 0 for code, _ in results)
    assert any(
        "node_rank 1 joined the rendezvous at" in out and "twice" in out for _, out in results
    )


def test_rank_zero_alone_times_out_with_torchs_message(procs: list[subprocess.Popen[str]]) -> None:
    # --dist-timeout 100 at time scale 0.02: two seconds
    procs.append(start(0, 2, free_tcp_port(), free_tcp_port(), timeout=100))
    t0 = time.monotonic()
    code, out = finish(procs[0])
    assert code != 0
    assert time.monotonic() - t0 < 30
    assert "Timed out after 101 seconds waiting for clients. 2/4 clients joined." in out


def test_worker_without_rank_zero_gives_up(procs: list[subprocess.Popen[str]]) -> None:
    procs.append(start(1, 2, free_tcp_port(), free_tcp_port(), timeout=100))
    code, out = finish(procs[0])
    assert code != 0
    assert (
        "The client socket has timed out after 100s while trying to connect to (127.0.0.1," in out
    )
