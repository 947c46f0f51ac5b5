"""Fixtures for the oracle-service tests: a private folder per test, a fake and the real sglang."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sglaunch.oracle.interpreter import ENV_VAR
from sglaunch.oracle.service_admin import stop_services

FAKE_WORKER = Path(__file__).resolve().parents[2] / "support" / "fake_worker.py"


@pytest.fixture
def folder() -> Iterator[Path]:
    """A private service folder with a short path (a socket path has at most 107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="sgl-svc-"))  # mkdtemp makes it 0700
    yield path
    if path.exists():
        path.chmod(0o700)
        stop_services(folder=path, wait=5.0)
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def fake_python(tmp_path: Path) -> str:
    """An "sglang interpreter" whose worker is tests/support/fake_worker.py."""
    script = tmp_path / "fake-sglang-python"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_WORKER}" "$@"\n')
    script.chmod(0o755)
    return str(script)


@pytest.fixture(scope="session")
def sglang_python() -> str:
    path = os.environ.get(ENV_VAR)
    if not path or not os.access(path, os.X_OK):
        pytest.fail(
            f"{ENV_VAR} must name the CPU sglang interpreter (make test sets it): "
            "these tests run sglang's real resolution through the service",
            pytrace=False,
        )
    return os.path.abspath(path)
