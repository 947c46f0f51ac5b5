"""Catalogue every error sglang's argument resolution can raise, from its source.

For each `raise X("message")` and `assert test, "message"` in `srt/server_args.py` and
`srt/arg_groups/` of each release: the message as a pattern (formatted values become
wildcards), the exception type, file:line, the function it sits in, the source lines around
it, the guarding conditions and the flags they read. Parsed with `ast`, never imported, so any
release's source works (an unpacked wheel is enough).

    python scripts/sglang_errors.py -o sglaunch/catalogue/data/errors.json.gz \
        --src 0.5.23=/path/to/site-packages --src 0.5.22=...

Sites are merged across releases by (file, function, type, message); each keeps the line it
has in every release that has it, and the source and conditions of the newest one.
"""

from __future__ import annotations

import argparse
import ast
import gzip
import json
import re
import sys
from pathlib import Path
from typing import Any

WILD = None  # a wildcard segment in a message pattern
# the names sglang binds its arguments to in resolution code (ServerArgs, hook views)
ARG_BASES = frozenset({"self", "server_args", "view", "cfg", "args", "sa", "resolved"})
SCHEMA_DIR = Path(__file__).resolve().parent.parent / "sglaunch" / "flags" / "data"
CONTEXT_BEFORE = 6  # source lines shown above the raise, at most
MAX_LINES = 16


def _vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def dests_of(version: str) -> dict[str, str]:
    """Flag dest -> its first option, from the bundled flag schema of `version`."""
    path = SCHEMA_DIR / f"schema-{version}.json"
    data = json.loads(path.read_text())
    return {f["dest"]: f["options"][0] for f in data["flags"] if f.get("options")}


# --- messages -------------------------------------------------------------------------


def _percent(text: str) -> list[str | None]:
    out: list[str | None] = []
    for i, part in enumerate(re.split(r"%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[sdrifgxoeEc%]", text)):
        if i:
            out.append(WILD)
        out.append(part)
    return out


def _brace(text: str) -> list[str | None]:
    out: list[str | None] = []
    for i, part in enumerate(re.split(r"\{[^{}]*\}", text)):
        if i:
            out.append(WILD)
        out.append(part.replace("{{", "{").replace("}}", "}"))
    return out


def segments(node: ast.expr) -> list[str | None]:
    """The message as literal strings and wildcards (None)."""
    if isinstance(node, ast.Constant):
        return [node.value] if isinstance(node.value, str) else [WILD]
    if isinstance(node, ast.JoinedStr):
        out: list[str | None] = []
        for v in node.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                out.append(v.value)
            else:
                out.append(WILD)
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return segments(node.left) + segments(node.right)
    if (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Mod)
        and isinstance(node.left, ast.Constant)
        and isinstance(node.left.value, str)
    ):
        return _percent(node.left.value)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "format"
    ):
        inner = node.func.value
        if isinstance(inner, ast.Constant) and isinstance(inner.value, str):
            return _brace(inner.value)
        if isinstance(inner, ast.BinOp | ast.JoinedStr):
            return [p for s in segments(inner) for p in (_brace(s) if isinstance(s, str) else [s])]
    return [WILD]


def normalise(segs: list[str | None]) -> list[str | None]:
    """Adjacent literals joined, adjacent wildcards merged, empty literals dropped."""
    out: list[str | None] = []
    for s in segs:
        if s == "":
            continue
        if s is WILD and out and out[-1] is WILD:
            continue
        if isinstance(s, str) and out and isinstance(out[-1], str):
            out[-1] = out[-1] + s
            continue
        out.append(s)
    return out


def display(segs: list[str | None]) -> str:
    return "".join("…" if s is None else s for s in segs).strip()


# --- conditions -----------------------------------------------------------------------


def flag_reads(node: ast.AST, dests: dict[str, str]) -> list[str]:
    seen: list[str] = []
    for n in ast.walk(node):
        if (
            isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name)
            and n.value.id in ARG_BASES
            and n.attr in dests
            and n.attr not in seen
        ):
            seen.append(n.attr)
    return seen


def flag_values(node: ast.AST, dests: dict[str, str]) -> dict[str, list[Any]]:
    """Literal values a flag is compared with (== != in `not in`) in a condition."""
    out: dict[str, list[Any]] = {}
    for n in ast.walk(node):
        if not isinstance(n, ast.Compare) or len(n.ops) != 1:
            continue
        left, right = n.left, n.comparators[0]
        if not (
            isinstance(left, ast.Attribute)
            and isinstance(left.value, ast.Name)
            and left.value.id in ARG_BASES
            and left.attr in dests
        ):
            continue
        vals: list[Any] = []
        if isinstance(right, ast.Constant):
            vals = [right.value]
        elif isinstance(right, ast.List | ast.Tuple | ast.Set):
            vals = [e.value for e in right.elts if isinstance(e, ast.Constant)]
        for v in vals:
            if isinstance(v, str | int | float | bool) and v not in out.setdefault(left.attr, []):
                out[left.attr].append(v)
    return out


class _Site:
    def __init__(self, **kw: Any) -> None:
        self.__dict__.update(kw)


def _qualname(stack: list[ast.AST]) -> str:
    names = [
        n.name
        for n in stack
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    ]
    return ".".join(names) or "<module>"


def _hook(stack: list[ast.AST]) -> str:
    """How the function is registered (its decorator's name), if it is."""
    for n in reversed(stack):
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef):
            for d in n.decorator_list:
                target = d.func if isinstance(d, ast.Call) else d
                if isinstance(target, ast.Name):
                    return target.id
                if isinstance(target, ast.Attribute):
                    return target.attr
            return ""
    return ""


def sites_in(path: Path, rel: str, dests: dict[str, str]) -> list[dict[str, Any]]:
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    out: list[dict[str, Any]] = []

    def visit(node: ast.AST, stack: list[ast.AST], conds: list[tuple[ast.expr, bool, int]]) -> None:
        msg: ast.expr | None = None
        exc_type = ""
        own: tuple[ast.expr, bool, int] | None = None
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
            f = node.exc.func
            exc_type = (
                f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            )
            msg = node.exc.args[0]
        elif isinstance(node, ast.Assert) and node.msg is not None:
            exc_type, msg = "AssertionError", node.msg
            own = (node.test, False, node.lineno)
        if msg is not None and exc_type:
            segs = normalise(segments(msg))
            literal = "".join(s for s in segs if isinstance(s, str)).strip()
            if len(literal) >= 4:
                all_conds = [*conds, *([own] if own else [])]
                flags: list[str] = []
                values: dict[str, list[Any]] = {}
                for test, _, _ in all_conds:
                    for d in flag_reads(test, dests):
                        if d not in flags:
                            flags.append(d)
                    for d, vs in flag_values(test, dests).items():
                        values.setdefault(d, [])
                        values[d] += [v for v in vs if v not in values[d]]
                # from the outermost guarding `if` that fits, so the conditions show
                floor = max(node.lineno - MAX_LINES + 1, 1)
                fits = [c[2] for c in conds if c[2] >= floor]
                start = max(min([node.lineno - CONTEXT_BEFORE, *fits]), floor)
                end = node.end_lineno or node.lineno
                out.append(
                    {
                        "file": rel,
                        "line": node.lineno,
                        "type": exc_type,
                        "segments": segs,
                        "function": _qualname(stack),
                        "hook": _hook(stack),
                        "conditions": [
                            {"test": ast.unparse(t), "holds": holds, "flags": flag_reads(t, dests)}
                            for t, holds, _ in all_conds
                        ],
                        "flags": flags,
                        "values": values,
                        "source_start": start,
                        "source": lines[start - 1 : end],
                    }
                )
        if isinstance(node, ast.If):
            body(node.body, stack, [*conds, (node.test, True, node.lineno)])
            body(node.orelse, stack, [*conds, (node.test, False, node.lineno)])
            return
        inner = (
            [*stack, node]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            else stack
        )
        # a new function starts its own conditions
        inner_conds = [] if inner is not stack and not isinstance(node, ast.ClassDef) else conds
        stmts = getattr(node, "body", None)
        if isinstance(stmts, list) and not isinstance(node, ast.Module | ast.ClassDef):
            body(stmts, inner, inner_conds)
            for name in ("orelse", "finalbody", "handlers"):
                body(getattr(node, name, None) or [], inner, inner_conds)
            return
        for child in ast.iter_child_nodes(node):
            visit(child, inner, inner_conds)

    def body(
        stmts: list[Any], stack: list[ast.AST], conds: list[tuple[ast.expr, bool, int]]
    ) -> None:
        # `if not X: return` guards every statement after it: they run only when X holds
        for stmt in stmts:
            visit(stmt, stack, conds)
            if (
                isinstance(stmt, ast.If)
                and not stmt.orelse
                and stmt.body
                and isinstance(stmt.body[-1], ast.Return)
            ):
                conds = [*conds, (stmt.test, False, stmt.lineno)]

    visit(tree, [], [])
    return out


def release_sites(root: Path, dests: dict[str, str]) -> list[dict[str, Any]]:
    srt = root / "sglang" / "srt"
    files = [srt / "server_args.py", *sorted((srt / "arg_groups").rglob("*.py"))]
    out: list[dict[str, Any]] = []
    for path in files:
        if path.exists():
            out += sites_in(path, path.relative_to(root / "sglang").as_posix(), dests)
    return out


def slug(segs: list[str | None]) -> str:
    words = re.findall(r"[a-z0-9]+", " ".join(s for s in segs if isinstance(s, str)).lower())
    text = "-".join(words[:7])[:48].strip("-")
    return f"sglang-{text or 'error'}"


def merge(per_release: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    for version in sorted(per_release, key=_vkey, reverse=True):
        counts: dict[tuple[Any, ...], int] = {}
        for site in per_release[version]:
            base = (site["file"], site["function"], site["type"], json.dumps(site["segments"]))
            counts[base] = counts.get(base, 0) + 1
            key = (*base, counts[base])
            if key not in merged:
                merged[key] = {**site, "releases": {}}
            merged[key]["releases"][version] = site["line"]
    sites = sorted(merged.values(), key=lambda s: (s["file"], s["line"]))
    used = {"sglang-error", "sglang-override"}
    for s in sites:
        code = base = slug(s["segments"])
        n = 1
        while code in used:
            n += 1
            code = f"{base}-{n}"
        used.add(code)
        s["code"] = code
        s["message"] = display(s["segments"])
    return sites


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--src", action="append", default=[], metavar="VERSION=SITE_PACKAGES")
    args = p.parse_args(argv)
    per_release: dict[str, list[dict[str, Any]]] = {}
    for spec in args.src:
        version, _, root = spec.partition("=")
        per_release[version] = release_sites(Path(root), dests_of(version))
    sites = merge(per_release)
    data = {
        "schema_version": 1,
        "releases": sorted(per_release, key=_vkey),
        "counts": {v: len(s) for v, s in sorted(per_release.items(), key=lambda kv: _vkey(kv[0]))},
        "sites": sites,
    }
    raw = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    # mtime=0: the same source gives the same bytes
    out.write_bytes(gzip.compress(raw, mtime=0) if out.suffix == ".gz" else raw)
    print(f"{len(sites)} sites ({data['counts']}) -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
