"""The sglang tier: tests that run sglang's own code in the CPU sglang environments.

They find sglang through SGLAUNCH_SGLANG_PYTHON (and SGLAUNCH_SGLANG_PYTHONS for the older
releases); unset, the environments `make test` builds beside the checkout are used. Without
either they fail with the way out; they are never skipped, so a green run means sglang's own
code really ran.
"""

from __future__ import annotations

import os

import pytest

from sglaunch.oracle.interpreter import ENV_VAR
from tests.releases import use_the_built_environments

use_the_built_environments()


def require_sglang_python() -> str:
    path = os.environ.get(ENV_VAR)
    if not path:
        pytest.fail(
            f"{ENV_VAR} is not set and no .venv-sglang was built: these tests run sglang's own "
            "code. Run `make envs` (it builds the CPU sglang environments) or set "
            f"{ENV_VAR}=PATH/TO/sglang/python",
            pytrace=False,
        )
    full = os.path.abspath(path)
    if not os.access(full, os.X_OK):
        pytest.fail(f"{ENV_VAR}={path} is not an executable file", pytrace=False)
    return full


@pytest.fixture(scope="session")
def sglang_python() -> str:
    return require_sglang_python()
