"""Find, in each supported sglang release, the line every built-in rule and card points at.

    python scripts/sglang_lines.py --src 0.5.19=DIR ... --src 0.5.23=DIR [-o validators/sourcelines_table.py]

Each DIR holds the `sglang` package (a venv's site-packages, or an unzipped
wheel). The rules and cards cite sglang 0.5.23's source as `srt/FILE.py:LINE`;
for every such citation this finds the same statement in each other release
(by its syntax tree, not its text, so reformatting and moved code are found)
and writes the lines that differ. A statement a release lacks is recorded as
absent. Where a release says the same thing in different code (the attention-DP
checks before 0.5.22), `ALTERNATIVES` names that code. Standard library only;
`tests/sglang/oracle/test_source_lines.py` runs the same search on the installed
releases and compares it with the table.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASE = "0.5.23"
REF = re.compile(r"(srt/[\w/]+\.py):(\d+)((?:[-/]\d+)*)")

# (file, 0.5.23 line) -> statements that older releases use for the same check
ALTERNATIVES: dict[tuple[str, int], tuple[str, ...]] = {
    # attn-dp-divides-tp: before 0.5.22 attention DP is --enable-dp-attention --dp-size N,
    # checked in handle_data_parallelism
    ("srt/arg_groups/parallel_hook.py", 326): ("assert cfg.tp_size % cfg.dp_size == 0",),
    # multinode-dp-replicas: before 0.5.22 the check exempts DP attention
    ("srt/arg_groups/validation_hook.py", 199): (
        "assert not (cfg.dp_size > 1 and cfg.nnodes != 1 and not cfg.enable_dp_attention), 'x'",
    ),
    # minicpm-dp-attention: the test before the raise changed; the raise did not
    ("srt/arg_groups/model_overrides/minicpm.py", 17): ("if cfg.enable_dp_attention:\n    pass",),
}


def _signature(node: ast.AST) -> str:
    """What identifies a statement: an assert by its test, a raise by what it raises,
    a compound statement by its header, anything else by its whole tree."""
    if isinstance(node, ast.Assert):
        return "assert:" + ast.dump(node.test)
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return f"{type(node).__name__}:{node.name}"
    if isinstance(node, ast.If | ast.While):
        return f"{type(node).__name__}:" + ast.dump(node.test)
    if isinstance(node, ast.For | ast.AsyncFor):
        return "for:" + ast.dump(node.target) + ast.dump(node.iter)
    if isinstance(node, ast.With | ast.AsyncWith):
        return "with:" + "".join(ast.dump(i) for i in node.items)
    if isinstance(node, ast.Try):
        return "try:" + (ast.dump(node.body[0]) if node.body else "")
    return ast.dump(node)


def _statements(tree: ast.AST) -> list[ast.stmt]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]


def _parse(path: Path) -> tuple[ast.AST, int] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    return ast.parse(text, str(path)), len(text.splitlines()) or 1


def _at(tree: ast.AST, line: int) -> ast.stmt | None:
    """The innermost statement that starts on `line`, else the innermost one containing it."""
    starting = [s for s in _statements(tree) if s.lineno == line]
    if starting:
        return max(starting, key=lambda s: s.col_offset)
    containing = [s for s in _statements(tree) if s.lineno <= line <= (s.end_lineno or s.lineno)]
    return max(containing, key=lambda s: s.lineno) if containing else None


def _nearest(candidates: list[ast.stmt], share: float, length: int) -> int | None:
    if not candidates:
        return None
    return min(candidates, key=lambda s: abs(s.lineno / length - share)).lineno


def find_line(base_root: Path, root: Path, rel: str, line: int) -> int | None:
    """The line in `root`'s sglang of the statement at `rel:line` in `base_root`'s; None if absent."""
    base = _parse(base_root / "sglang" / rel)
    other = _parse(root / "sglang" / rel)
    if base is None or other is None:
        return None
    (base_tree, base_len), (tree, length) = base, other
    node = _at(base_tree, line)
    if node is None:
        return None
    offset = line - node.lineno  # a citation inside a statement keeps its place in it
    share = line / base_len
    statements = _statements(tree)
    # the whole statement first (an assert with its message), then what identifies it
    exact = ast.dump(node)
    found = _nearest([s for s in statements if ast.dump(s) == exact], share, length)
    if found is None:
        wanted = {_signature(node)}
        for text in ALTERNATIVES.get((rel, line), ()):
            wanted.update(_signature(s) for s in ast.parse(text).body)
        found = _nearest([s for s in statements if _signature(s) in wanted], share, length)
    return None if found is None else found + offset


def refs_in(paths: Iterable[Path]) -> set[tuple[str, int]]:
    """Every `srt/FILE.py:LINE` the given Python files cite (module constants resolved)."""
    out: set[tuple[str, int]] = set()
    for path in paths:
        text = path.read_text(encoding="utf-8")
        consts = dict(re.findall(r'^([A-Z_]+) = "(?:sglang/)?(srt/[\w/]+\.py)"', text, re.M))
        for name, rel in consts.items():
            for m in re.finditer(r"\{" + name + r"\}:(\d+)", text):
                out.add((rel, int(m.group(1))))
        for m in REF.finditer(text):
            for n in [m.group(2), *re.findall(r"\d+", m.group(3))]:
                out.add((m.group(1), int(n)))
    return out


def cited() -> set[tuple[str, int]]:
    refs = refs_in(sorted((ROOT / "validators").rglob("*.py")))
    # the alternatives' anchors are cited by the rules that use them
    return refs | set(ALTERNATIVES)


def table(roots: dict[str, Path], refs: set[tuple[str, int]]) -> dict[str, dict[str, int | None]]:
    """{"FILE:LINE": {version: line or None}} for the versions whose line differs from BASE's."""
    base_root = roots[BASE]
    out: dict[str, dict[str, int | None]] = {}
    for rel, line in sorted(refs):
        if not (base_root / "sglang" / rel).exists():
            continue
        row = {}
        for version, root in sorted(roots.items()):
            if version == BASE:
                continue
            found = find_line(base_root, root, rel, line)
            if found != line:
                row[version] = found
        if row:
            out[f"{rel}:{line}"] = row
    return out


def render(data: dict[str, dict[str, int | None]], versions: list[str]) -> str:
    lines = [
        '"""Where each cited line of sglang 0.5.23 sits in the other supported releases.',
        "",
        f"Generated by scripts/sglang_lines.py from the sources of {', '.join(versions)};",
        "do not edit. None: that release does not have the statement.",
        '"""',
        "",
        "LINES: dict[str, dict[str, int | None]] = {",
    ]
    for ref, row in data.items():
        cells = ", ".join(f'"{v}": {n}' for v, n in row.items())
        lines.append(f'    "{ref}": {{{cells}}},')
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", action="append", required=True, metavar="VERSION=DIR")
    ap.add_argument("-o", "--output", type=Path)
    args = ap.parse_args(argv)
    roots = {}
    for item in args.src:
        version, _, folder = item.partition("=")
        roots[version] = Path(os.path.expanduser(folder))
    if BASE not in roots:
        ap.error(f"--src {BASE}=DIR is required: the rules cite its lines")
    text = render(table(roots, cited()), sorted(roots))
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
