"""No server process outlives sglaunch: SIGTERM, SIGINT and SIGKILL to sglaunch itself.

sglaunch runs `run_headless` in a child process here (headless_child.py); the tests
collect every pid of the server tree while it runs and check each is gone afterwards.
Also: the headless exit codes, detach, and the human-readable card.
"""

from __future__ import annotations

import io
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from sglaunch.exitcodes import ExitCode
from sglaunch.runtime import LaunchSpec, run_headless
from sglaunch.runtime.probe import Endpoint, request
from sglaunch.validators.cards import runtime as rc
from tests.support.processes import alive, fake_spec, free_tcp_port, wait_for, wait_gone, wait_tree

CHILD = Path(__file__).resolve().parents[2] / "support" / "headless_child.py"


class Child:
    """sglaunch headless in a subprocess, its JSON events read as they come."""

    def __init__(self, *args: str, json_lines: bool = True) -> None:
        self.port = free_tcp_port()
        cmd = [
            sys.executable,
            str(CHILD),
            str(self.port),
            *(["--json"] if json_lines else []),
            *args,
        ]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.events: list[dict[str, Any]] = []
        self.stdout: list[str] = []
        self._q: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._q.put(line)
        self._q.put(None)

    def wait_event(self, kind: str, timeout: float = 20.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._q.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                break
            if line is None:
                break
            self.stdout.append(line)
            with_json = line.strip().startswith("{")
            event = json.loads(line) if with_json else {"event": "text", "text": line}
            self.events.append(event)
            if event["event"] == kind:
                return event
        raise AssertionError(f"no {kind!r} event; got {[e['event'] for e in self.events]}")

    def finish(self, timeout: float = 30.0) -> int:
        code = self.proc.wait(timeout)
        while True:
            try:
                line = self._q.get(timeout=1.0)
            except queue.Empty:
                break
            if line is None:
                break
            self.stdout.append(line)
            if line.strip().startswith("{"):
                self.events.append(json.loads(line))
        return code

    def stderr(self) -> str:
        assert self.proc.stderr is not None
        return self.proc.stderr.read()


@pytest.fixture
def children() -> Any:
    made: list[Child] = []
    yield made
    for c in made:
        if c.proc.poll() is None:
            c.proc.kill()
            c.proc.wait()


def _ready_tree(child: Child) -> tuple[int, set[int]]:
    pid = child.wait_event("spawned")["pid"]
    child.wait_event("ready")
    tree = wait_tree(pid, 3)
    assert len(tree) == 3, tree
    return pid, tree


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_to_sglaunch_stops_the_server_tree(
    children: list[Child], sig: signal.Signals
) -> None:
    child = Child()
    children.append(child)
    _, tree = _ready_tree(child)
    child.proc.send_signal(sig)
    assert child.finish() == ExitCode.INTERRUPTED
    assert child.events[-1]["event"] == "interrupted"
    assert any(e["event"] == "exited" and e["stop_requested"] for e in child.events)
    assert not wait_gone(tree)


def test_sigkill_to_sglaunch_kills_the_server_tree_by_pdeathsig(children: list[Child]) -> None:
    child = Child()
    children.append(child)
    _, tree = _ready_tree(child)
    child.proc.kill()  # no handler, no atexit: only PR_SET_PDEATHSIG is left
    child.proc.wait()
    assert not wait_gone(tree)


def test_sigkill_to_sglaunch_while_loading(children: list[Child]) -> None:
    child = Child("--scenario", "hang_loading")
    children.append(child)
    pid = child.wait_event("spawned")["pid"]
    tree = wait_tree(pid, 3)
    while child.wait_event("phase")["phase"] != "loading_weights":
        pass
    child.proc.kill()
    child.proc.wait()
    assert not wait_gone(tree)


def test_server_stopped_from_outside_exits_zero(children: list[Child]) -> None:
    child = Child()
    children.append(child)
    pid, tree = _ready_tree(child)
    os.kill(pid, signal.SIGTERM)  # someone else stops the server: it drains and exits 0
    assert child.finish() == ExitCode.OK
    assert next(e for e in child.events if e["event"] == "exited")["status"] == "stopped"
    assert not wait_gone(tree)


def test_crash_after_ready_exits_four(children: list[Child]) -> None:
    child = Child("--scenario", "runtime_crash", "--env", "FAKE_SGLANG_CRASH_AFTER=3")
    children.append(child)
    _, tree = _ready_tree(child)
    assert child.finish() == ExitCode.DIED
    card = [e for e in child.events if e["event"] == "card"]
    assert card and card[0]["code"] == rc.CRASH
    assert not wait_gone(tree)


def test_startup_timeout_exits_three_with_a_card(children: list[Child]) -> None:
    child = Child("--scenario", "hang_loading", "--startup-timeout", "1")
    children.append(child)
    pid = child.wait_event("spawned")["pid"]
    tree = wait_tree(pid, 3)
    assert child.finish() == ExitCode.START_FAILED
    card = [e for e in child.events if e["event"] == "card"]
    assert card and card[0]["code"] == rc.STARTUP_TIMEOUT
    assert not wait_gone(tree)


def test_detach_leaves_the_server_running_with_a_masked_log(children: list[Child]) -> None:
    secret = "sk-detach-0123456789"
    child = Child("--detach", "--", "--api-key", secret, json_lines=False)
    children.append(child)
    assert child.finish() == ExitCode.OK
    pid_text, run_dir = child.stdout[-1].split()
    pid = int(pid_text)
    try:
        assert alive(pid)
        tree = wait_tree(pid, 3)
        assert request(Endpoint("127.0.0.1", child.port), "/ready").status == 200
        status = json.loads((Path(run_dir) / "run.json").read_text())
        assert status["status"] == "detached" and status["pid"] == pid
        log = Path(run_dir) / "server.log"
        assert "The server is fired up and ready to roll!" in log.read_text()
        # the relay keeps writing the log after sglaunch has gone
        assert request(Endpoint("127.0.0.1", child.port, secret), "/v1/models").status == 200
        assert wait_for(lambda: '"GET /v1/models HTTP/1.1" 200 OK' in log.read_text(), 30)
        assert secret not in log.read_text()
    finally:
        os.kill(pid, signal.SIGTERM)
    assert not wait_gone(tree)


def test_port_taken_before_launch_exits_three(sglaunch_home: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        out = io.StringIO()
        code = run_headless(fake_spec(port=busy.getsockname()[1]), out=out, gpu_interval=None)
    assert code == ExitCode.START_FAILED
    text = out.getvalue()
    assert f"error [{rc.PORT_IN_USE}]" in text and "fix: Launch on free port" in text


def test_human_output_shows_the_card_and_its_fixes(sglaunch_home: Path) -> None:
    out = io.StringIO()
    code = run_headless(
        fake_spec(scenario="oom_cuda_graph"),
        out=out,
        gpu_interval=None,
        probe_interval=0.1,
        stop_grace=5.0,
    )
    assert code == ExitCode.START_FAILED
    text = out.getvalue()
    assert "sglaunch: capturing CUDA graphs" in text
    assert f"error [{rc.GRAPH_OOM}] Out of memory while capturing CUDA graphs" in text
    assert "fix: Lower --mem-fraction-static to 0.78" in text
    assert "fix: Capture decode graphs up to batch 16" in text
    assert "server.log" in text


def test_unmatched_failure_shows_the_last_traceback(sglaunch_home: Path) -> None:
    script = "import sys; print('[2025-06-01 12:00:00] starting', file=sys.stderr); raise ValueError('boom')"
    spec = LaunchSpec(
        argv=("--model-path", "m", "--port", str(free_tcp_port())),
        command_prefix=(sys.executable, "-c", script),
    )
    out = io.StringIO()
    assert (
        run_headless(spec, out=out, gpu_interval=None, probe_interval=0.1) == ExitCode.START_FAILED
    )
    text = out.getvalue()
    assert f"error [{rc.STARTUP_EXIT}]" in text
    assert "ValueError: boom" in text and "last traceback in the log:" in text


_EXIT_SCRIPT = """
import json, sys, time
from sglaunch.runtime import LaunchSpec, Monitor
spec = LaunchSpec(
    argv=("--model-path", "m", "--port", sys.argv[1]),
    command_prefix=(sys.executable, sys.argv[2]),
    env={"FAKE_SGLANG_TIME_SCALE": "0.02"},
)
monitor = Monitor(spec, probe_interval=0.1, gpu_interval=None)
monitor.start()
assert monitor.wait_ready(60)
while len(monitor.tree_pids()) < 3:
    time.sleep(0.02)
print(json.dumps(sorted(monitor.tree_pids())), flush=True)
if sys.argv[3] == "raise":
    raise RuntimeError("sglaunch crashed")
"""


@pytest.mark.parametrize("ending", ["return", "raise"])
def test_sglaunch_exiting_or_crashing_stops_the_server(ending: str) -> None:
    fake = Path(__file__).resolve().parents[2] / "fake_sglang_server.py"
    proc = subprocess.run(
        [sys.executable, "-c", _EXIT_SCRIPT, str(free_tcp_port()), str(fake), ending],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == (0 if ending == "return" else 1), proc.stderr
    tree = set(json.loads(proc.stdout.splitlines()[0]))
    assert len(tree) == 3
    assert not wait_gone(tree)
