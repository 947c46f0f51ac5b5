"""Lay the source out as it installs, for the tools that read source by import name.

`validators/` and `tui/` install as `sglaunch.validators` and `sglaunch.tui` (setuptools
`package-dir`), which mypy and import-linter cannot map. This script makes
`build/src/sglaunch/` from symbolic links — every entry of `sglaunch/`, plus `validators`
and `tui` under their installed names — so both see the real files under the real names.
It reads the mapping from pyproject.toml, so a new package there needs nothing here.

    python scripts/source_tree.py [--out build/src]   prints the folder it made
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def package_dirs(root: Path = ROOT) -> dict[str, Path]:
    """{import name: source folder} from [tool.setuptools] package-dir."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    mapping = config["tool"]["setuptools"]["package-dir"]
    return {name: root / folder for name, folder in mapping.items()}


def build(out: Path, root: Path = ROOT) -> Path:
    if out.exists():
        shutil.rmtree(out)
    mapping = package_dirs(root)
    # outer packages first: an inner one (sglaunch.tui) is a link inside the outer's folder
    for name in sorted(mapping, key=lambda n: n.count(".")):
        target = out.joinpath(*name.split("."))
        source = mapping[name]
        if "." not in name:
            target.mkdir(parents=True)
            for entry in sorted(source.iterdir()):
                if entry.name != "__pycache__":
                    (target / entry.name).symlink_to(entry)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_symlink() or target.exists():
                target.unlink()
            target.symlink_to(source, target_is_directory=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "src")
    args = parser.parse_args(argv)
    print(os.fspath(build(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
