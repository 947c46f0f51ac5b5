"""tui/ and validators/ install as sglaunch.tui and sglaunch.validators, from a wheel too."""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
MAPPING = {"sglaunch": "sglaunch", "sglaunch.validators": "validators", "sglaunch.tui": "tui"}


def declared_packages() -> list[str]:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return data["tool"]["setuptools"]["packages"]


def test_every_package_folder_is_declared() -> None:
    found = set()
    for pkg, folder in MAPPING.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            name = pkg if str(rel) == "." else pkg + "." + ".".join(rel.parts)
            # a nested top-level mapping (sglaunch/validators does not exist) is fine
            found.add(name)
    assert found == set(declared_packages())


def test_console_script_declared() -> None:
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert data["project"]["scripts"]["sglaunch"] == "sglaunch.cli.main:main"


def test_built_wheel_works(tmp_path: Path) -> None:
    out = tmp_path / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        cwd=tmp_path,
    )
    wheel = next(out.glob("sglaunch-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for required in (
        "sglaunch/in_sglang/oracle_worker.py",
        "sglaunch/tui/app.tcss",
        "sglaunch/validators/engine.py",
        "sglaunch/validators/rules/models/minicpm.py",
        "sglaunch/tui/__init__.py",
        "sglaunch/flags/data/schema-0.5.23.json",
        "sglaunch/facts/data/model-types-0.5.23.json",
        "sglaunch/examples/minicpm-sala/config.json",
        "sglaunch/examples/minicpm4-8b/configuration_minicpm.py",
    ):
        assert required in names, required
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = (
        "import sglaunch.validators as v, sglaunch.tui.app, sglaunch.facts.model as m\n"
        "assert len(v.all_rules()) > 10\n"
        "print(m.load_model_facts('example:minicpm-sala').has_lightning_layers)\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "True"
    # and it really came from the wheel, not the checkout
    res = subprocess.run(
        [sys.executable, "-c", "import sglaunch.validators as v; print(v.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
    )
    assert res.stdout.strip().startswith(str(site))
