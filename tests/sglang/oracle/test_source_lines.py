"""The line each rule cites, in each release: `validators/sourcelines_table.py` against the source.

The table was made by scripts/sglang_lines.py from the five releases' wheels; this
runs the same search on the releases installed here (the CPU environments `make
test` builds) and demands the same lines, so a regenerated or hand-edited table
that no longer matches a release fails.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from sglaunch.validators.engine import all_rules
from sglaunch.validators.sourcelines import ref_at
from sglaunch.validators.sourcelines_table import LINES
from tests.releases import release_pythons

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.oracle


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "sglang_lines", ROOT / "scripts" / "sglang_lines.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _site(python: str) -> Path:
    code = "import importlib.util as u, os; print(os.path.dirname(os.path.dirname(u.find_spec('sglang').origin)))"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip())


@pytest.mark.parametrize("release", [v for v in release_pythons() if v != "0.5.23"] or ["none"])
def test_the_table_matches_the_installed_release(release: str) -> None:
    pythons = release_pythons()
    assert "0.5.23" in pythons and release in pythons, sorted(pythons)
    script = _script()
    roots = {"0.5.23": _site(pythons["0.5.23"]), release: _site(pythons[release])}
    found = script.table(roots, script.cited())
    want = {ref: row[release] for ref, row in LINES.items() if release in row}
    got = {ref: row[release] for ref, row in found.items() if release in row}
    assert got == want


def test_the_search_covers_every_line_a_rule_cites() -> None:
    """The script cites what the rules cite: nothing a rule names is left out of the search."""
    script = _script()
    cited = {f"{rel}:{line}" for rel, line in script.cited()}
    for r in all_rules():
        # a rule cites a line, or a span or several lines (FILE:1270-1380, FILE:183/189)
        for rel, first, more in script.REF.findall(r.ref):
            lines = [first, *(n for n in re.split(r"[-/]", more) if n)]
            for line in lines:
                assert f"{rel}:{line}" in cited, (r.code, r.ref)


def test_refs_move_to_each_release() -> None:
    assert ref_at("srt/arg_groups/model_overrides/minicpm.py:18", "0.5.20") == (
        "srt/arg_groups/model_overrides/minicpm.py:21"
    )
    assert (
        ref_at("srt/arg_groups/parallel_hook.py:326", "0.5.21")
        == "srt/arg_groups/parallel_hook.py:261"
    )
    assert ref_at("srt/arg_groups/validation_hook.py:179 (check_server_args)", "0.5.19") == (
        "srt/arg_groups/validation_hook.py:34 (check_server_args)"
    )
    assert ref_at("srt/models/llama.py:183/189/193", "0.5.22") == "srt/models/llama.py:176/182/186"
    assert ref_at("srt/arg_groups/model_overrides/minicpm.py:18", "0.5.23") == (
        "srt/arg_groups/model_overrides/minicpm.py:18"
    )
