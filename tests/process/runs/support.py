"""Helpers for the runs tests: detached launches of the stand-in, and the CLI as a process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.process.launch.test_apply import apply, detached_pid, save
from tests.support.processes import tree_of, wait_for


def runs_cli(home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sglaunch", "runs", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "SGLAUNCH_HOME": str(home), "NO_COLOR": "1"},
    )


def listed(home: Path) -> list[dict]:
    res = runs_cli(home, "list", "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def detach(home: Path, wrapper: Path, name: str, **env: str) -> tuple[int, str, set[int]]:
    """A detached stand-in server for profile `name`: (pid, run name, its process tree)."""
    save(name, wrapper, {})
    res = apply(home, "--profile", name, "--apply", "--detach", "--no-oracle", **env)
    assert res.returncode == 0, res.stderr
    pid = detached_pid(res)
    run = Path(res.stdout.split()[1]).name
    # the stand-in's scheduler and detokenizer, as sglang's
    assert wait_for(lambda: len(tree_of(pid)) >= 3)
    return pid, run, tree_of(pid)


def relay_of(run_dir: str) -> list[int]:
    """The log relay of a detached run (its command line names the run's log)."""
    import psutil

    return [
        p.pid
        for p in psutil.process_iter(["cmdline", "status"])
        if p.info["status"] != psutil.STATUS_ZOMBIE
        and "sglaunch.runtime.relay" in (p.info["cmdline"] or [])
        and any(run_dir in a for a in p.info["cmdline"] or [])
    ]
