"""The xdist groups of the sglang tier: one worker per sglang module and release.

The tests of one module and release share one warm sglang worker (a module fixture) whose
start costs seconds of sglang's imports, and the differential corpora answer thousands of
launches inside that fixture: split over two xdist workers, each would run it again.
"""

from __future__ import annotations

from pathlib import Path

import pytest


def add_release_groups(items: list[pytest.Item], root: Path, tier: str = "sglang") -> None:
    """Mark each test under `root/tier` with the group `PATH:RELEASE` (its `release` param)."""
    for item in items:
        parts = item.path.relative_to(root).parts if item.path.is_relative_to(root) else ()
        if parts[:1] != (tier,):
            continue
        callspec = getattr(item, "callspec", None)
        release = callspec.params.get("release", "") if callspec is not None else ""
        item.add_marker(pytest.mark.xdist_group(f"{'/'.join(parts)}:{release}"))
