"""`make test` runs the process tier in two parts, most of it on both cores and the tests
marked `serial` alone after: together they are every process test, each exactly once, and
what cannot share the machine (timed monitors, the pty, the Slurm cluster, run watchers) is
in the part that runs alone."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
ALONE = ("runtime", "tui", "slurm", "runs")


def _make_test_marker_expressions() -> list[str]:
    """The `-m` expressions of the pytest runs in the Makefile's `test` recipe."""
    text = (REPO / "Makefile").read_text()
    recipe = text.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"-m '([^']+)'", recipe)


def _collected(*args: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode in (0, 5), out.stdout[-2000:] + out.stderr[-2000:]
    return {line for line in out.stdout.splitlines() if "::" in line}


def test_the_two_runs_cover_the_process_tier_once_and_the_timed_tests_run_alone() -> None:
    expressions = _make_test_marker_expressions()
    assert len(expressions) == 2, f"make test should run pytest twice with -m: {expressions}"
    together, alone = expressions
    with_others = _collected("-m", together, "tests/process")
    by_itself = _collected("-m", alone, "tests/process")
    everything = _collected("-m", "not gpu", "tests/process")
    assert with_others and by_itself
    assert not with_others & by_itself, "a process test runs twice"
    assert with_others | by_itself == everything, "a process test is never run by make test"
    for test in everything:
        folder = test.split("/")[2]
        assert (test in by_itself) == (folder in ALONE), (
            f"{test}: runs {'alone' if test in by_itself else 'beside other tests'}"
        )
