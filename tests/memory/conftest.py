"""The sglang interpreter for the memory differential test (the oracle tests' convention:
SGLAUNCH_SGLANG_PYTHON points at it; without it the test fails with the way out, never skips)."""

from __future__ import annotations

import os

import pytest

from sglaunch.oracle.interpreter import ENV_VAR


@pytest.fixture(scope="session")
def sglang_python() -> str:
    path = os.environ.get(ENV_VAR)
    if not path or not os.access(os.path.abspath(path), os.X_OK):
        pytest.fail(
            f"{ENV_VAR} must name the CPU sglang environment's python: the memory differential "
            f"runs sglang's own pool code (`{ENV_VAR}=.venv-sglang/bin/python pytest tests/memory`)",
            pytrace=False,
        )
    return os.path.abspath(path)
