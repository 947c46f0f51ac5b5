"""Class "traversal": a Hugging Face cache entry cannot lead sglaunch out of its own
snapshots/ folder (refs/main of `../../..` read a config from anywhere)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.hostile import EXAMPLE_CONFIG, Case, check, run_case

REPO = "org/model"


def _cache(ref: str, *, link_out: bool = False) -> object:
    def make(tmp: Path) -> list[str]:
        outside = tmp / "outside"
        outside.mkdir()
        (outside / "config.json").write_text(EXAMPLE_CONFIG.read_text())
        entry = tmp / "hub" / "models--org--model"
        (entry / "refs").mkdir(parents=True)
        (entry / "snapshots").mkdir()
        if link_out:
            (entry / "snapshots" / "abc123").symlink_to(outside)
        else:
            (entry / "snapshots" / "abc123").mkdir()
            (entry / "snapshots" / "abc123" / "config.json").write_text(EXAMPLE_CONFIG.read_text())
        (entry / "refs" / "main").write_text(ref)
        return check(REPO)

    return make


def _hub(tmp: Path) -> dict[str, str]:
    return {"HF_HUB_CACHE": str(tmp / "hub")}


CASES = [
    Case(
        "ref-dot-dot",
        _cache("../../../outside"),
        2,
        "refs/main points outside its snapshots folder",
        _hub,
    ),
    Case(
        "ref-absolute",
        _cache(str(Path("/tmp"))),
        2,
        "refs/main points outside its snapshots folder",
        _hub,
    ),
    Case("ref-through-a-subfolder", _cache("abc123/../../../outside"), 2, "points outside", _hub),
    Case("snapshot-linked-outside", _cache("abc123", link_out=True), 2, "points outside", _hub),
    Case("ref-newline-junk", _cache("abc123\n../x"), 2, "points outside", _hub),
    # the control: an honest entry is found
    Case("honest-entry", _cache("abc123\n"), 1, "trust-remote-code", _hub),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_hf_cache_entry_stays_inside(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)
