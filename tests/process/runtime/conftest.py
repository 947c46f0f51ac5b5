"""Fixtures for the runtime tests: an isolated SGLAUNCH_HOME, monitors that are always stopped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sglaunch.runtime import Monitor
from tests.support.processes import wait_gone


@pytest.fixture(autouse=True)
def sglaunch_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("SGLAUNCH_HOME", str(home))
    return home


@pytest.fixture
def monitors() -> Iterator[list[Monitor]]:
    """Monitors to stop after the test, whatever happened; their trees must be gone."""
    made: list[Monitor] = []
    yield made
    pids: set[int] = set()
    for m in made:
        pids |= m.tree_pids()
        m.stop(grace=1.0)
    assert not wait_gone(pids), "server processes outlived the test"
