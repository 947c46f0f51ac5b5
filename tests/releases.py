"""The sglang interpreters the differential tests run on, one per release.

SGLAUNCH_SGLANG_PYTHON names the newest (0.5.23); SGLAUNCH_SGLANG_PYTHONS, space-separated,
the older ones `make test` builds (.venv-sglang-0.5.19 and .venv-sglang-0.5.21).
"""

from __future__ import annotations

import functools
import os

from sglaunch.oracle.interpreter import ENV_VAR

RELEASES_VAR = "SGLAUNCH_SGLANG_PYTHONS"
# the releases the differential tests must run on (the "at least")
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
