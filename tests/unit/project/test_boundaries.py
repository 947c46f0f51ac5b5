"""DESIGN.md's import boundaries, proven in fresh interpreters.

- `sglaunch.validators` imports the standard library only (and itself);
- importing it, or running the headless CLI, loads no textual;
- nothing at import time loads torch, sglang or transformers.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("torch", "sglang", "transformers", "textual", "pynvml", "httpx")


def loaded_after(code: str) -> set[str]:
    probe = code + "\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return {m.split(".")[0] for m in json.loads(out.stdout.strip().splitlines()[-1])}


def test_validators_import_only_the_standard_library() -> None:
    stdlib = set(sys.stdlib_module_names)
    offenders = []
    for path in sorted((ROOT / "validators").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top in stdlib or top == "__future__" or name.startswith("sglaunch.validators"):
                    continue
                offenders.append(f"{path.relative_to(ROOT)}: {name}")
    assert offenders == []


def test_validators_import_loads_nothing_heavy() -> None:
    loaded = loaded_after("import sglaunch.validators as v; v.all_rules(); v.all_cards()")
    assert not loaded & set(HEAVY), loaded & set(HEAVY)


@pytest.mark.parametrize(
    "module",
    [
        "sglaunch.cli.main",
        "sglaunch.cli.check",
        "sglaunch.cli.explain",
        "sglaunch.checking",
        "sglaunch.facts.model",
        "sglaunch.facts.gpu",
        "sglaunch.oracle.service_client",
        "sglaunch.oracle.service",
        "sglaunch.cli.runs",
        "sglaunch.runtime.runs",
    ],
)
def test_headless_modules_load_nothing_heavy(module: str) -> None:
    loaded = loaded_after(f"import {module}")
    assert not loaded & set(HEAVY), loaded & set(HEAVY)


def test_check_command_never_imports_textual_torch_or_sglang() -> None:
    code = (
        "import sys\n"
        "from sglaunch.cli.main import main\n"
        "rc = main(['check', '--model', 'example:minicpm-sala', '--gpu', 'H100x8', '--no-oracle', '--', '--tp', '2'])\n"
    )
    loaded = loaded_after(code)
    assert not loaded & {"textual", "torch", "sglang"}
    # SALA is sglang's own type: read as data, so not even transformers is needed
    assert "transformers" not in loaded


def test_code_imports_the_installed_names_only() -> None:
    """`tui/` and `validators/` are sglaunch.tui and sglaunch.validators once installed; a bare
    `import tui` works only from a checkout and would load the modules twice."""
    offenders = []
    for folder in ("sglaunch", "tui", "validators", "tests", "bench", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                offenders += [
                    f"{path.relative_to(ROOT)}: {n}"
                    for n in names
                    if n.split(".")[0] in ("tui", "validators")
                ]
    assert offenders == []


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    tree = root / "build" / "src"
    subprocess.run(
        [sys.executable, str(root / "scripts" / "source_tree.py"), "--out", str(tree)],
        check=True,
        capture_output=True,
    )
    lint = Path(sys.executable).parent / "lint-imports"
    return subprocess.run(
        [str(lint), "--no-cache", str(root / "pyproject.toml")],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        # the rule engine reaching up into the core
        ("validators/engine.py", "import sglaunch.session", "tui over the core"),
        # the core reaching up into the TUI
        ("sglaunch/verdict.py", "import sglaunch.tui.app", "tui over the core"),
        # a low core module reaching up into a high one
        ("sglaunch/safeio.py", "import sglaunch.session", "tui over the core"),
        # the core importing Textual directly
        ("sglaunch/session.py", "import textual.app", "never import Textual"),
        # a rule's definitions reaching up into the registry that imports every rule: a cycle
        (
            "validators/rule.py",
            "import sglaunch.validators.registry",
            "rule engine's layers",
        ),
    ],
)
def test_import_contracts_fail_when_broken(
    tmp_path: Path, module: str, line: str, contract: str
) -> None:
    """`make imports` (in `make test`) keeps DESIGN.md's direction: break it in a copy."""
    import shutil

    for part in ("sglaunch", "validators", "tui", "scripts"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    clean = _lint_imports(tmp_path)
    assert clean.returncode == 0, clean.stdout[-2000:]
    target = tmp_path / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{line}  # noqa\n", encoding="utf-8")
    broken = _lint_imports(tmp_path)
    assert broken.returncode != 0
    assert f"{contract}" in broken.stdout and "BROKEN" in broken.stdout


def _all_modules() -> list[str]:
    import pkgutil

    import sglaunch
    import sglaunch.tui
    import sglaunch.validators

    names: list[str] = []
    for package in (sglaunch, sglaunch.validators, sglaunch.tui):
        prefix = package.__name__ + "."
        names += [m.name for m in pkgutil.walk_packages(package.__path__, prefix)]
    # example checkpoints' own code, and what runs only under the sglang interpreter
    return sorted({n for n in names if ".examples." not in n and not n.endswith("__main__")})


def test_every_module_imports_first_in_a_fresh_interpreter() -> None:
    """An import cycle shows only when a module is the first one imported: try each so (a
    child forked per module from an interpreter that has loaded no sglaunch module)."""
    names = _all_modules()
    assert len(names) > 150, names
    res = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "support" / "import_first.py"), *names],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert res.returncode == 0 and not res.stderr, res.stdout + res.stderr
