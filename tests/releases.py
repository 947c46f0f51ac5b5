"""The sglang interpreters the differential tests run on, one per release.

SGLAUNCH_SGLANG_PYTHON names the newest (0.5.23); SGLAUNCH_SGLANG_PYTHONS, space-separated,
the older ones `make test` builds (.venv-sglang-0.5.19 and .venv-sglang-0.5.21).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from sglaunch.oracle.interpreter import ENV_VAR

RELEASES_VAR = "SGLAUNCH_SGLANG_PYTHONS"
ROOT = Path(__file__).resolve().parent.parent
# the releases the differential tests must run on (at least these)
REQUIRED_RELEASES = ("0.5.19", "0.5.21", "0.5.23")


@functools.cache
def release_pythons() -> dict[str, str]:
    """sglang version -> interpreter, for every interpreter the environment names."""
    from sglaunch.oracle.interpreter import probe_sglang_version

    paths = [os.environ.get(ENV_VAR, ""), *os.environ.get(RELEASES_VAR, "").split()]
    out: dict[str, str] = {}
    for path in filter(None, paths):
        full = os.path.abspath(path)
        version, _why = probe_sglang_version(full)
        out.setdefault(version or f"unusable:{full}", full)
    return dict(sorted(out.items()))


def use_the_built_environments() -> None:
    """Point the sglang variables at the environments `make test` builds, unless set.

    So `pytest tests/sglang` (or one folder of it) runs by itself in a checkout where
    `make test` or `make envs` has run; without them the tests fail with the way out."""
    newest = ROOT / ".venv-sglang" / "bin" / "python"
    if not os.environ.get(ENV_VAR) and (ROOT / ".venv-sglang" / ".installed").is_file():
        os.environ[ENV_VAR] = str(newest)
    older = sorted(ROOT.glob(".venv-sglang-*/bin/python"))
    if not os.environ.get(RELEASES_VAR) and older:
        os.environ[RELEASES_VAR] = " ".join(
            str(p) for p in older if p.parent.parent.joinpath(".installed").is_file()
        )
