"""Fixtures for the oracle tests: the sglang interpreter, tiny model folders, warm oracles.

The tests that run sglang find it through SGLAUNCH_SGLANG_PYTHON (CI points it
at `.venv-sglang/bin/python`). Without it they fail with the way out; they are
never skipped, so a green run means sglang's own resolution really ran.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sglaunch.facts.presets import parse_gpu_spec
from sglaunch.oracle import Oracle
from sglaunch.validators.facts import GpuFacts
from tests.releases import RELEASES_VAR, REQUIRED_RELEASES, release_pythons  # noqa: F401
from tests.support.oracle_models import MINICPM, MINICPM_SALA, write_model


@pytest.fixture(scope="session")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("models")
    return {
        "minicpm": write_model(root / "minicpm", MINICPM),
        "sala": write_model(root / "sala", MINICPM_SALA),
    }


@pytest.fixture(scope="session")
def h100x2() -> GpuFacts:
    return parse_gpu_spec("H100x2")


@pytest.fixture(scope="session")
def b200x1() -> GpuFacts:
    return parse_gpu_spec("B200x1")


@pytest.fixture(scope="session")
def h100x1() -> GpuFacts:
    return parse_gpu_spec("H100x1")


@pytest.fixture(scope="module")
def oracle(sglang_python: str) -> Iterator[Oracle]:
    """One warm worker for a whole test module."""
    with Oracle(sglang_python, timeout=60.0) as o:
        assert o.status.available, o.status.reason
        yield o
