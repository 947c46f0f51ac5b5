"""sglang source citations (`srt/FILE.py:LINE`) moved to the line of a given release.

The rules and cards cite sglang 0.5.23's lines; `sourcelines_table.py` (made by
`scripts/sglang_lines.py` from each release's source) says where the same
statement sits in the other supported releases. Standard library only.
"""

from __future__ import annotations

import re
from functools import lru_cache

from sglaunch.validators.release_spans import NEWEST, semantics
from sglaunch.validators.sourcelines_table import LINES

_REF = re.compile(r"(srt/[\w/]+\.py):(\d+(?:[-/]\d+)*)")


def line_in(rel: str, line: int, version: str | None) -> int | None:
    """The line of 0.5.23's `rel:line` in `version` (None: that release lacks it)."""
    release = semantics(version)
    if release == NEWEST:
        return line
    row = LINES.get(f"{rel}:{line}")
    if row is None or release not in row:
        return line
    return row[release]


@lru_cache(maxsize=1024)  # every finding of every check asks it; the rules' refs are few
def ref_at(ref: str, version: str | None) -> str:
    """`ref` with every cited line moved to `version`'s source; unknown citations stay."""
    if not ref or semantics(version) == NEWEST:
        return ref

    def move(m: re.Match[str]) -> str:
        rel = m.group(1)
        numbers = re.split(r"([-/])", m.group(2))
        out = []
        for piece in numbers:
            if piece.isdigit():
                moved = line_in(rel, int(piece), version)
                out.append(str(moved) if moved is not None else piece)
            else:
                out.append(piece)
        return f"{rel}:{''.join(out)}"

    return _REF.sub(move, ref)
