"""Under `pytest -n 2`, the sglang tier's module fixtures are set up once per release: the
tests of one module and release run on one xdist worker."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]

PROBE = """
    import os
    import pytest

    @pytest.fixture(scope="module", params=["0.5.19", "0.5.21", "0.5.23"])
    def release(request):
        return request.param

    @pytest.fixture(scope="module")
    def corpus(release):
        with open(os.environ["SETUPS"], "a") as fh:
            fh.write(release + "\\n")
        return release

    def test_one(corpus): pass
    def test_two(corpus): pass
    def test_three(corpus): pass
"""

CONFTEST = """
    from pathlib import Path
    import pytest
    from tests.support.xdist_groups import add_release_groups

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(config, items):
        add_release_groups(items, Path(__file__).parent)
"""


def test_each_release_is_set_up_once_across_two_workers(tmp_path: Path) -> None:
    tier = tmp_path / "sglang"
    tier.mkdir()
    (tier / "test_probe.py").write_text(textwrap.dedent(PROBE))
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    setups = tmp_path / "setups.txt"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(tier),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**__import__("os").environ, "SETUPS": str(setups), "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(setups.read_text().split()) == ["0.5.19", "0.5.21", "0.5.23"], (
        "a release's module fixture was set up on more than one worker: " + setups.read_text()
    )
