"""No import cycle anywhere in sglaunch, imports inside functions counted (blocks under
`TYPE_CHECKING` aside: they never run). The layers contracts order the packages; this
catches a loop inside one package or between siblings a contract lets import each other."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# modules grimp sees that are never imported by name (a bundled checkpoint's own code)
NOT_CODE = ".examples."
# grimp reads the source by import name: validators/ and tui/ laid out as installed
GRAPH = (
    "import grimp, json\n"
    "g = grimp.build_graph('sglaunch', exclude_type_checking_imports=True, cache_dir=None)\n"
    "print(json.dumps({m: sorted(g.find_modules_directly_imported_by(m)) for m in g.modules}))\n"
)


def _imports(tmp: Path) -> dict[str, list[str]]:
    """{module: the sglaunch modules it imports}, imports inside functions included."""
    tree = tmp / "src"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "source_tree.py"), "--out", str(tree)],
        check=True,
        capture_output=True,
    )
    done = subprocess.run(
        [sys.executable, "-c", GRAPH],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    graph: dict[str, list[str]] = json.loads(done.stdout)
    return graph


def _cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    modules = sorted(m for m in graph if NOT_CODE not in m)
    known = set(modules)
    edges = {m: sorted(set(graph[m]) & known) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            children = edges[node]
            if i < len(children):
                work.append((node, i + 1))
                child = children[i]
                if child not in index:
                    work.append((child, 0))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return found


def test_no_import_cycle(tmp_path: Path) -> None:
    graph = _imports(tmp_path)
    assert "sglaunch.validators.engine" in graph and "sglaunch.tui.app" in graph
    cycles = _cycles(graph)
    assert cycles == [], "import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_a_cycle_is_found() -> None:
    graph = {"p": [], "p.a": ["p.b"], "p.b": ["p.c"], "p.c": ["p.a"], "p.d": ["p.a"]}
    assert _cycles(graph) == [["p.a", "p.b", "p.c"]]
