"""Every link in the project's documents resolves inside a clone of the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DOCS = ["README.md", "ARCHITECTURE.md", "docs/DESIGN.md"]
# [text](target) and ![alt](target); a target with a scheme is on the web, not in the clone
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _targets(doc: str) -> list[str]:
    text = (ROOT / doc).read_text(encoding="utf-8")
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t) and not t.startswith("#")]


@pytest.mark.parametrize("doc", DOCS)
def test_every_relative_link_resolves_in_the_clone(doc: str) -> None:
    base = (ROOT / doc).parent
    broken = []
    for target in _targets(doc):
        path = (base / target.split("#")[0]).resolve()
        if not path.is_relative_to(ROOT) or not path.exists():
            broken.append(target)
    assert not broken, f"{doc} links to what a clone does not have: {broken}"


@pytest.mark.parametrize("doc", DOCS)
def test_no_document_points_outside_the_repository(doc: str) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    assert "../shared" not in text, f"{doc} names a file outside the repository (../shared)"


def test_the_readme_points_to_the_architecture() -> None:
    assert "(ARCHITECTURE.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
