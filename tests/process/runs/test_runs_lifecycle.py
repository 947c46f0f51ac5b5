"""`sglaunch runs` against detached stand-in servers: list, show, logs, stop, and a server
killed from outside, all as processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from sglaunch.runtime.attach_target import resolve_attach_target
from tests.process.runs.support import detach, listed, relay_of, runs_cli
from tests.support.processes import wait_for, wait_gone


def test_detach_list_show_logs_stop(home: Path, wrapper: Path) -> None:
    pid, run, tree = detach(home, wrapper, "sala")
    [entry] = listed(home)
    assert entry["name"] == run and entry["state"] == "ready" and entry["pid"] == pid
    # the launch names the repo the example mirrors: the model sglang was started with
    assert entry["model"] == "openbmb/MiniCPM-SALA" and entry["profile"] == "sala"
    assert entry["port"] and entry["detached"] is True

    table = runs_cli(home, "list")
    assert table.stdout.splitlines()[0].split() == [
        "RUN", "STATE", "MODEL", "PORT", "PROFILE", "STARTED"
    ]  # fmt: skip
    assert f"{run}  ready" in table.stdout

    shown = runs_cli(home, "show", run[:12])  # a unique prefix
    assert shown.returncode == 0, shown.stderr
    assert (
        "state:       ready" in shown.stdout and "http:        /ready answers 200" in shown.stdout
    )

    logs = runs_cli(home, "logs", run)
    assert "The server is fired up and ready to roll!" in logs.stdout

    # attach resolves the live run: this machine, its log, its verified pid
    target = resolve_attach_target(run=run, root=home / "data" / "runs")
    assert target.local and target.pid == pid and target.ready is True
    assert target.log_path == home / "data" / "runs" / run / "server.log"

    follower = subprocess.Popen(
        [sys.executable, "-m", "sglaunch", "runs", "logs", run, "--follow", "-n", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "SGLAUNCH_HOME": str(home)},
    )
    relays = relay_of(str(home / "data" / "runs" / run))
    assert relays  # the log relay of the detached server
    stopped = runs_cli(home, "stop", run, "--grace", "10")
    assert stopped.returncode == 0, stopped.stderr
    assert f"stopped run {run} (pid {pid}" in stopped.stderr
    assert wait_gone(tree | set(relays)) == set()  # no process of its tree, nor its relay
    # --follow ends by itself once the server has ended, with its last lines
    out, _ = follower.communicate(timeout=60)
    assert follower.returncode == 0 and "Application shutdown complete." in out

    [after] = listed(home)
    assert after["state"] == "exited" and after["note"] == "stopped by sglaunch runs stop"
    again = runs_cli(home, "stop", run)
    assert again.returncode == 0 and "is not running" in again.stderr


def test_a_server_killed_from_outside_shows_as_crashed_with_its_log(
    home: Path, wrapper: Path
) -> None:
    pid, run, tree = detach(home, wrapper, "victim")
    os.killpg(pid, signal.SIGKILL)  # an OOM killer, a `kill -9` from another terminal
    assert wait_gone(tree) == set()
    assert wait_for(lambda: listed(home)[0]["state"] == "crashed")
    [entry] = listed(home)
    assert entry["unwatched"] is True
    assert f"pid {pid} is gone and nobody recorded how" in entry["note"]
    assert any("ready to roll" in line or "GET /" in line for line in entry["log_tail"])
    table = runs_cli(home, "list").stdout
    assert "crashed (unwatched)" in table and "    │ " in table
    shown = runs_cli(home, "show", run).stdout
    assert "state:       crashed (unwatched)" in shown and "last lines:" in shown
    # nothing to stop, and nothing is signalled
    res = runs_cli(home, "stop", run)
    assert res.returncode == 0 and "is not running (crashed (unwatched))" in res.stderr


def test_runs_list_with_no_runs_and_the_running_filter(home: Path, wrapper: Path) -> None:
    empty = runs_cli(home, "list")
    assert empty.returncode == 0 and empty.stdout == "" and "no runs yet" in empty.stderr
    pid, run, tree = detach(home, wrapper, "one")
    try:
        res = runs_cli(home, "list", "--running", "--json")
        assert [r["name"] for r in json.loads(res.stdout)] == [run]
        assert pid in tree
    finally:
        assert runs_cli(home, "stop", run, "--grace", "5").returncode == 0
    assert wait_gone(tree) == set()
    assert "no runs running" in runs_cli(home, "list", "--running").stderr


def test_stopping_a_watched_run_keeps_the_watchers_record(home: Path, wrapper: Path) -> None:
    """`runs stop` from another terminal on a launch that sglaunch still follows: the
    follower sees the end and records the exit code, which only it can know."""
    from tests.process.launch.test_apply import save

    save("watched", wrapper, {})
    follower = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sglaunch",
            "--profile",
            "watched",
            "--apply",
            "--no-oracle",
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={
            **os.environ,
            "SGLAUNCH_HOME": str(home),
            "FAKE_SGLANG_SCENARIO": "ok",
            "FAKE_SGLANG_TIME_SCALE": "0.02",
        },
    )
    try:
        assert follower.stdout is not None
        for line in follower.stdout:
            if json.loads(line).get("event") == "ready":
                break
        [entry] = listed(home)
        assert entry["state"] == "ready" and entry["detached"] is False
        res = runs_cli(home, "stop", entry["name"], "--grace", "10")
        assert res.returncode == 0, res.stderr
        follower.communicate(timeout=60)
    finally:
        if follower.poll() is None:
            follower.kill()
    assert follower.returncode == 0  # a clean stop is no failure
    [after] = listed(home)
    assert after["state"] == "exited" and isinstance(after["returncode"], int)
