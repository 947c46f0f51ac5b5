"""Run directories as data: corrupt and half-written records, reused pids, other machines,
resolving RUN, pruning, the state table, and attach targets. Nothing here is killed that
the test did not start, and a refusal leaves its process alive."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from sglaunch.errors import UserError
from sglaunch.runtime.attach_target import endpoint_of, is_local, resolve_attach_target
from sglaunch.runtime.identity import Liveness, Verdict, cmdline_digest, hostname, identify
from sglaunch.runtime.runs import (
    RunState,
    derive_state,
    load_run,
    prune,
    resolve_run,
    running_by_profile,
    scan,
)
from sglaunch.runtime.runstop import stop_run, stop_tree
from tests.process.runs.support import runs_cli
from tests.support.processes import alive, free_tcp_port, tree_of, wait_for, wait_gone


@pytest.fixture
def root(home: Path) -> Path:
    path = home / "data" / "runs"
    path.mkdir(parents=True)
    return path


def make_run(
    root: Path,
    name: str,
    record: Any = None,
    *,
    raw: bytes | None = None,
    log: str | None = "line one\nline two\n",
    model: str = "/models/llama",
) -> Path:
    path = root / name
    path.mkdir()
    if raw is not None:
        (path / "run.json").write_bytes(raw)
    elif record is not None:
        (path / "run.json").write_text(json.dumps(record))
    (path / "argv.json").write_text(
        json.dumps({"argv": ["--model-path", model, "--port", "30000"], "command": ["python"]})
    )
    if log is not None:
        (path / "server.log").write_text(log)
    return path


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """A live process sglaunch did not start as a server (a `sleep`)."""
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
    # Popen returns while exec is still setting up: the command line shows a moment later
    assert wait_for(lambda: cmdline_digest(proc.pid) is not None)
    yield proc
    proc.kill()
    proc.wait()


def own_identity(pid: int) -> dict[str, Any]:
    return {**identify(pid), "cmdline_sha256": cmdline_digest(pid)}


def ready_record(pid: int, process: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    record = {
        "profile": "p",
        "status": "detached",
        "pid": pid,
        "url": "http://127.0.0.1:30000",
        "started_at": 1.0e9,
        "ready_at": 1.0e9 + 5,
        "detached": True,
        **extra,
    }
    if process is not None:
        record["process"] = process
    return record


# -- a pid that is no longer the server -------------------------------------------------


@pytest.mark.parametrize(
    ("tamper", "why"),
    [
        (lambda ident: {**ident, "start_ticks": ident["start_ticks"] + 1}, "was reused"),
        (lambda ident: {**ident, "cmdline_sha256": "0" * 64}, "another command line"),
        (lambda ident: {**ident, "boot_id": "another-boot"}, "rebooted"),
        (lambda ident: None, "no start time was recorded"),
        (lambda ident: {"pid": ident["pid"], "host": ident["host"]}, "no start time"),
    ],
)
def test_a_reused_pid_is_refused_and_left_alone(
    root: Path, home: Path, bystander: subprocess.Popen[bytes], tamper: Any, why: str
) -> None:
    process = tamper(own_identity(bystander.pid))
    make_run(root, "20260101-000000-p", ready_record(bystander.pid, process))
    [run] = scan(root)
    assert run.state in (RunState.CRASHED, RunState.UNKNOWN) and why in run.note
    res = runs_cli(home, "stop", "20260101")
    assert res.returncode == 1, res.stderr
    [line] = res.stderr.strip().splitlines()
    assert f"not stopping pid {bystander.pid}" in line and "nothing was stopped" in line
    assert why in line
    assert bystander.poll() is None and alive(bystander.pid)


def test_the_recorded_server_is_recognised(root: Path, bystander: subprocess.Popen[bytes]) -> None:
    make_run(root, "r", ready_record(bystander.pid, own_identity(bystander.pid)))
    [run] = scan(root)
    assert run.state is RunState.READY and run.note == ""
    assert running_by_profile(root) == {"p": [run]}


def test_stop_tree_ends_a_tree_that_ignores_sigterm() -> None:
    # a leader that ignores SIGTERM, with a child: the grace period ends in SIGKILL for both
    proc = subprocess.Popen(["sh", "-c", "trap '' TERM; sleep 300 & wait"], start_new_session=True)
    try:
        assert wait_for(lambda: len(tree_of(proc.pid)) == 2)
        tree = tree_of(proc.pid)
        outcome = stop_tree(proc.pid, grace=0.5)
        assert outcome.processes == 2 and outcome.killed >= 1 and outcome.left == ()
        assert wait_gone(tree) == set()
    finally:
        proc.kill()
        proc.wait()


def test_stop_run_records_the_end(root: Path) -> None:
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        make_run(root, "r", ready_record(proc.pid, own_identity(proc.pid)))
        outcome = stop_run(load_run(root / "r"), grace=5)
        assert outcome is not None and outcome.left == ()
        proc.wait(10)
    finally:
        proc.kill()
    record = json.loads((root / "r" / "run.json").read_text())
    assert record["status"] == "stopped" and record["stopped_by"] == "sglaunch runs stop"
    assert load_run(root / "r").state is RunState.EXITED


def test_stop_run_says_stopping_before_it_signals(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a watcher that sees the process gone must already read the stop: the CI run that
    # found this reported a `runs stop` as a crash (the record came after the signal)
    import sglaunch.runtime.runstop as runstop

    seen: list[tuple[object, RunState]] = []
    real = runstop.stop_tree

    def watched(pid: int, grace: float) -> object:
        record = json.loads((root / "r" / "run.json").read_text())
        seen.append((record.get("stopped_by"), load_run(root / "r").state))
        return real(pid, grace)

    monkeypatch.setattr(runstop, "stop_tree", watched)
    proc = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        make_run(root, "r", ready_record(proc.pid, own_identity(proc.pid)))
        assert stop_run(load_run(root / "r"), grace=5) is not None
        proc.wait(10)
    finally:
        proc.kill()
    assert seen == [("sglaunch runs stop", RunState.STOPPING)]
    # the moment the process is gone and before the end is recorded, it reads as stopped
    record = json.loads((root / "r" / "run.json").read_text())
    record.update(status="stopping", ended_at=None)
    (root / "r" / "run.json").write_text(json.dumps(record))
    assert load_run(root / "r").state is RunState.EXITED


# -- another machine ------------------------------------------------------------------------


def test_a_run_from_another_machine_is_shown_not_touched(
    root: Path, home: Path, bystander: subprocess.Popen[bytes]
) -> None:
    ident = {**own_identity(bystander.pid), "host": "gpu-box-7"}
    make_run(root, "r", ready_record(bystander.pid, ident))
    [run] = scan(root)
    assert run.state is RunState.REMOTE and run.host == "gpu-box-7"
    assert "remote (on gpu-box-7)" in runs_cli(home, "list").stdout
    res = runs_cli(home, "stop", "r")
    assert res.returncode == 2 and "was started on gpu-box-7, not here" in res.stderr
    with pytest.raises(
        UserError, match=r"only its URL works, `sglaunch attach --url http://gpu-box-7:30000`"
    ):
        resolve_attach_target(run="r", root=root)
    assert alive(bystander.pid)


# -- corrupt and half-written records -------------------------------------------------------

CORRUPT = [
    ("no-record", None, None, "no run.json: sglaunch stopped before it recorded the server"),
    ("truncated", None, b'{"status": "ready", "pid"', "run.json is not valid JSON"),
    ("a-list", [1, 2], None, "run.json is not a JSON object"),
    ("pid-text", {"status": "ready", "pid": "abc"}, None, "pid 'abc' is not a process id"),
    ("pid-negative", {"status": "ready", "pid": -5}, None, "pid -5 is not a process id"),
    ("pid-bool", {"status": "ready", "pid": True}, None, "pid True is not a process id"),
    ("pid-huge", {"status": "ready", "pid": 10**12}, None, "is not a process id"),
    ("binary", None, b"\xff\xfe\x00garbage", "run.json is not"),
    ("huge", None, b'{"x": "' + b"a" * (2 << 20) + b'"}', "run.json is over 1 MiB"),
    ("unknown-status", {"status": "exploded"}, None, "unknown status 'exploded'"),
    ("no-pid", {"status": "ready"}, None, "names no pid"),
]


@pytest.mark.parametrize(("name", "record", "raw", "problem"), CORRUPT, ids=[c[0] for c in CORRUPT])
def test_a_corrupt_run_is_one_clear_line_and_nothing_else_breaks(
    root: Path, home: Path, name: str, record: Any, raw: bytes | None, problem: str, dead_pid: int
) -> None:
    make_run(root, "20260101-000000-fine", {"status": "stopped", "pid": dead_pid, "returncode": 0})
    make_run(root, f"20260102-000000-{name}", record, raw=raw)
    runs = {r.name: r for r in scan(root)}
    bad = runs[f"20260102-000000-{name}"]
    assert bad.state is RunState.CORRUPT and problem in bad.note and "\n" not in bad.note
    assert runs["20260101-000000-fine"].state is RunState.EXITED
    table = runs_cli(home, "list")
    assert table.returncode == 0 and "corrupt" in table.stdout and problem[:20] in table.stdout
    shown = runs_cli(home, "show", f"20260102-000000-{name}")
    assert shown.returncode == 0 and "state:       corrupt" in shown.stdout
    stopped = runs_cli(home, "stop", f"20260102-000000-{name}")
    assert stopped.returncode == 2
    assert len(stopped.stderr.strip().splitlines()) == 1 and "nothing was stopped" in stopped.stderr


def test_a_run_json_that_is_a_folder(root: Path) -> None:
    path = make_run(root, "r", None)
    (path / "run.json").mkdir()
    run = load_run(path)
    assert run.state is RunState.CORRUPT and "cannot read run.json" in run.note


def test_escape_sequences_in_a_log_tail_are_not_printed(
    root: Path, home: Path, dead_pid: int
) -> None:
    make_run(
        root,
        "r",
        {"status": "detached", "pid": dead_pid, "ready_at": 1.0},
        log="fine\n\x1b[2J\x1b]0;owned\x07evil\n",
    )
    [run] = scan(root)
    assert run.state is RunState.CRASHED
    assert all("\x1b" not in line and "\x07" not in line for line in run.log_tail)
    assert "\x1b" not in runs_cli(home, "list").stdout


# -- the state table ----------------------------------------------------------------------

ALIVE, GONE = Verdict(Liveness.ALIVE), Verdict(Liveness.GONE)
REUSED = Verdict(Liveness.REUSED, "pid 7 was reused")


@pytest.mark.parametrize(
    ("record", "verdict", "state", "unwatched", "note"),
    [
        ({"status": "starting", "pid": 7}, ALIVE, RunState.STARTING, False, ""),
        ({"status": "ready", "pid": 7, "ready_at": 1}, ALIVE, RunState.READY, False, ""),
        ({"status": "detached", "pid": 7, "ready_at": 1}, ALIVE, RunState.READY, False, ""),
        ({"status": "detached", "pid": 7}, ALIVE, RunState.STARTING, False, ""),
        ({"status": "unhealthy", "pid": 7}, ALIVE, RunState.UNHEALTHY, False, ""),
        ({"status": "stopping", "pid": 7}, ALIVE, RunState.STOPPING, False, ""),
        ({"status": "stopping", "pid": 7}, GONE, RunState.EXITED, True, "not recorded"),
        ({"status": "detached", "pid": 7}, GONE, RunState.CRASHED, True, "pid 7 is gone"),
        ({"status": "ready", "pid": 7}, REUSED, RunState.CRASHED, True, "was reused"),
        (
            {"status": "stopped", "pid": 7, "returncode": 0},
            GONE,
            RunState.EXITED,
            False,
            "exit code 0",
        ),
        (
            {"status": "stopped", "pid": 7, "returncode": -15},
            ALIVE,
            RunState.EXITED,
            False,
            "SIGTERM",
        ),
        (
            {"status": "died", "pid": 7, "returncode": 1, "diagnosis": {"title": "CUDA OOM"}},
            GONE,
            RunState.DIED,
            False,
            "exit code 1: CUDA OOM",
        ),
        (
            {"status": "failed", "pid": 7, "returncode": 3},
            GONE,
            RunState.FAILED,
            False,
            "exit code 3",
        ),
        (
            {"status": "failed", "error": "no such program"},
            None,
            RunState.FAILED,
            False,
            "no such program",
        ),
        (
            {"status": "ready", "pid": 7},
            Verdict(Liveness.REMOTE, "it runs on b"),
            RunState.REMOTE,
            False,
            "runs on b",
        ),
        (
            {"status": "ready", "pid": 7},
            Verdict(Liveness.UNVERIFIABLE, "cannot confirm"),
            RunState.UNKNOWN,
            False,
            "cannot confirm",
        ),
    ],
)
def test_state_from_record_and_pid(
    record: dict[str, Any], verdict: Verdict | None, state: RunState, unwatched: bool, note: str
) -> None:
    got_state, got_note, got_unwatched = derive_state(record, verdict)
    assert (got_state, got_unwatched) == (state, unwatched)
    assert note in got_note


# -- resolving RUN ---------------------------------------------------------------------------


def test_resolving_a_run(root: Path, tmp_path: Path, dead_pid: int) -> None:
    for name in ("20260101-100000-a", "20260101-110000-b", "20260102-090000-a"):
        make_run(root, name, {"status": "stopped", "pid": dead_pid})
    assert resolve_run("20260101-100000-a", root).name == "20260101-100000-a"
    assert resolve_run("20260102", root).name == "20260102-090000-a"
    assert resolve_run(str(root / "20260101-110000-b"), root).name == "20260101-110000-b"
    with pytest.raises(UserError, match=r"'20260101' matches 2 runs .*give more of the name"):
        resolve_run("20260101", root)
    with pytest.raises(UserError, match="no run is named 'zzz'"):
        resolve_run("zzz", root)
    with pytest.raises(UserError, match="give a run"):
        resolve_run("  ", root)
    (tmp_path / "plain").mkdir()
    with pytest.raises(UserError, match="is not a run directory"):
        resolve_run(str(tmp_path / "plain"), root)
    with pytest.raises(UserError, match="no such run directory"):
        resolve_run(str(tmp_path / "missing"), root)


# -- pruning -------------------------------------------------------------------------------


def test_prune_removes_ended_runs_only(
    root: Path, home: Path, bystander: subprocess.Popen[bytes], dead_pid: int
) -> None:
    make_run(root, "20260101-1-old", {"status": "stopped", "pid": dead_pid, "returncode": 0})
    make_run(root, "20260101-2-crashed", {"status": "detached", "pid": dead_pid, "ready_at": 1})
    make_run(root, "20260101-3-new", {"status": "failed", "pid": dead_pid, "returncode": 1})
    make_run(root, "20260101-4-live", ready_record(bystander.pid, own_identity(bystander.pid)))
    make_run(root, "20260101-5-corrupt", None, raw=b"{")
    outside = root.parent / "precious"
    outside.mkdir()
    (root / "20260101-6-link").symlink_to(outside)

    dry = runs_cli(home, "prune", "--dry-run")
    assert dry.returncode == 0 and "would remove 3 ended runs" in dry.stderr
    assert len(list(root.iterdir())) == 6

    kept = prune(root, keep=1)
    assert [r.name for r in kept.removed] == ["20260101-1-old", "20260101-2-crashed"]
    res = runs_cli(home, "prune")
    assert res.returncode == 0 and "removed 20260101-3-new" in res.stderr
    assert "kept 20260101-5-corrupt: run.json is not valid JSON" in res.stderr
    assert sorted(p.name for p in root.iterdir()) == [
        "20260101-4-live",
        "20260101-5-corrupt",
        "20260101-6-link",
    ]
    assert outside.is_dir() and alive(bystander.pid)


# -- attach targets -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("", "give the server's address"),
        ("https://gpu:30000", "plain HTTP"),
        ("ftp://gpu:30000", "plain HTTP"),
        ("http://admin:hunter2@gpu:30000", "leave credentials out of the URL"),
        ("http://gpu", "no port"),
        ("http://:30000", "no host"),
        ("http://gpu:99999", "give http://HOST:PORT"),
        ("http://gpu:port", "give http://HOST:PORT"),
    ],
)
def test_bad_urls_are_one_clear_line(url: str, problem: str) -> None:
    with pytest.raises(UserError, match=problem) as caught:
        endpoint_of(url)
    assert "hunter2" not in caught.value.message and "\n" not in caught.value.message


@pytest.mark.parametrize(
    ("url", "normal"),
    [
        ("http://127.0.0.1:30000", "http://127.0.0.1:30000"),
        ("127.0.0.1:30001/v1/models", "http://127.0.0.1:30001"),
        ("http://[::1]:30000", "http://[::1]:30000"),
        ("http://gpu-box.example:8000", "http://gpu-box.example:8000"),
    ],
)
def test_good_urls(url: str, normal: str) -> None:
    assert endpoint_of(url).url == normal


@pytest.mark.parametrize(
    ("host", "local"),
    [
        ("localhost", True),
        ("127.0.0.1", True),
        ("[::1]", True),
        (socket.gethostname(), True),
        ("gpu-box.example", False),
        ("203.0.113.7", False),
    ],
)
def test_which_hosts_are_this_machine(host: str, local: bool) -> None:
    assert is_local(host) is local


def test_an_unreachable_url_is_one_clear_line() -> None:
    port = free_tcp_port()
    with pytest.raises(
        UserError, match=rf"cannot reach http://127.0.0.1:{port}: .*is the server running"
    ):
        resolve_attach_target(url=f"http://127.0.0.1:{port}")


def test_a_url_that_is_not_sglang() -> None:
    class NotFound(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(404)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(
            UserError, match=r"answers, but not like an sglang server \(/ready 404, /health 404\)"
        ):
            resolve_attach_target(url=f"http://127.0.0.1:{server.server_port}")
    finally:
        server.shutdown()


def test_attach_to_an_ended_run_is_refused(root: Path, dead_pid: int) -> None:
    make_run(root, "done", {"status": "stopped", "pid": dead_pid, "returncode": 0})
    with pytest.raises(UserError, match=r"run done has ended .*`sglaunch runs logs done`"):
        resolve_attach_target(run="done", root=root)
    with pytest.raises(UserError, match=r"give a run .* or an address"):
        resolve_attach_target(run="done", url="http://127.0.0.1:1", root=root)


def test_hostname_is_recorded_by_identify() -> None:
    ident = identify(__import__("os").getpid())
    assert ident["host"] == hostname() and isinstance(ident.get("start_ticks"), int)
    assert sys.platform.startswith("linux")


def test_an_engine_run_without_a_server_argv_shows_the_model_it_recorded(root: Path) -> None:
    # a Slurm run: argv.json holds sbatch's command, the model is in run.json
    path = root / "2026-01-01-tp16"
    path.mkdir()
    (path / "run.json").write_text(
        json.dumps({"status": "stopped", "engine": "slurm", "model": "example:llama-3.1-8b"})
    )
    (path / "argv.json").write_text(json.dumps({"command": ["sbatch", "job.sbatch"], "argv": []}))
    assert load_run(path).model == "example:llama-3.1-8b"
