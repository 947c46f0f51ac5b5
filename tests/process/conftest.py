"""The process tier: tests that start servers, services and process trees.

Most run on both cores beside the other tiers; those that cannot share the machine (below:
`serial`) run after them, one at a time. Some start the CPU sglang environment; unset, the
environments `make test` builds are used.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.releases import use_the_built_environments

use_the_built_environments()


# What cannot share the machine with another test: the monitors of the stand-in server (their
# phases and samples are timed), the TUI on a real pty, the one Slurm test cluster, and the
# watchers of runs and their process trees. The rest (the oracle service, `--apply`, the
# engines' stand-ins, the host collectors, the hostile inputs under their limits) runs on
# both cores; `make test` runs the two groups one after the other.
SERIAL_FOLDERS = frozenset({"runtime", "tui", "slurm", "runs"})
HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if not item.path.is_relative_to(HERE):
            continue
        if item.path.relative_to(HERE).parts[0] in SERIAL_FOLDERS:
            item.add_marker(pytest.mark.serial)
