"""Create the CPU-only sglang environment the oracle runs in, for any supported release.

    python -m sglaunch.oracle.setup_env [--version 0.5.20] [--dir DIR] [--torch-index-url URL]

Three pip steps in a new venv: torch==2.13.0 (alone, so pip can never resolve an
unpinned torch into a multi-GB CUDA build), sglang==VERSION with --no-deps (its
GPU dependencies are not needed to resolve arguments) together with the release's
own list `sglang-cpu-VERSION.txt` (also --no-deps: xgrammar for 0.5.19 and 0.5.20,
whose own dependencies would pull triton), then the pinned list every release
shares, `sglang-cpu.txt`. Idempotent: a DIR whose Python already imports that
sglang is left alone. Standard library and sglaunch's own light modules only.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

from sglaunch.exitcodes import ExitCode
from sglaunch.oracle.interpreter import managed_env_dir, venv_python
from sglaunch.safeio import escape_controls
from sglaunch.validators.release_spans import NEWEST, SUPPORTED

TORCH = "torch==2.13.0"


class SetupError(Exception):
    """A step failed; the message is one line."""


def requirements_text() -> str:
    """The pinned requirement list every supported release shares, shipped as package data."""
    return resources.files("sglaunch.oracle").joinpath("sglang-cpu.txt").read_text("utf-8")


def release_requirements_text(version: str) -> str:
    """What one release needs beside sglang, installed with it under --no-deps."""
    if version not in SUPPORTED:
        raise SetupError(
            f"sglang {version} is not a release sglaunch mirrors; choose one of {', '.join(SUPPORTED)}"
        )
    name = f"sglang-cpu-{version}.txt"
    return resources.files("sglaunch.oracle").joinpath(name).read_text("utf-8")


def release_pins(version: str) -> list[str]:
    return [
        ln.split("#", 1)[0].strip()
        for ln in release_requirements_text(version).splitlines()
        if ln.split("#", 1)[0].strip()
    ]


def _probe_script() -> str:
    # sglang only imports on a CPU box through sglaunch's import shims, which
    # are loaded by path so this works in an environment without sglaunch.
    shim = Path(__file__).resolve().parent.parent / "in_sglang" / "sglang_import.py"
    return (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('_sglaunch_sglang_import', {str(shim)!r})\n"
        "m = importlib.util.module_from_spec(spec); sys.modules[spec.name] = m\n"
        "spec.loader.exec_module(m); m.prepare()\n"
        "import logging; logging.disable(logging.WARNING)\n"
        "from sglang.srt.server_args import prepare_server_args\n"
        "print(m.sglang_version())\n"
    )


def ready_version(python: Path) -> str | None:
    """sglang's version when `python` imports its resolution code, else None."""
    if not python.exists():
        return None
    try:
        done = subprocess.run(
            [str(python), "-c", _probe_script()],
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.strip().splitlines()
    return lines[-1].strip() if done.returncode == 0 and lines else None


# Lines of a failed step's output shown: pip ends with the reason it stopped.
TAIL_LINES = 15


def execute(cmd: list[str]) -> tuple[int, str]:
    """Run one step, its output captured: pip's resolver complains at length about the GPU
    dependencies this environment leaves out on purpose, and none of that is news."""
    done = subprocess.run(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
    )
    return done.returncode, done.stdout or ""


def _run(step: str, cmd: list[str]) -> None:
    print(f"sglaunch: {step}", file=sys.stderr, flush=True)
    try:
        code, output = execute(cmd)
    except OSError as exc:
        raise SetupError(f"{step} failed: cannot run {cmd[0]}: {exc.strerror or exc}") from exc
    if code != 0:
        tail = [escape_controls(ln) for ln in output.rstrip().splitlines()[-TAIL_LINES:]]
        for line in tail:
            print(f"  {line}", file=sys.stderr)
        raise SetupError(
            f"{step} failed (exit {code})" + ("; the end of its output is above" if tail else "")
        )


def setup(
    env_dir: Path,
    *,
    version: str = NEWEST,
    base_python: str = sys.executable,
    torch_index_url: str | None = None,
    force: bool = False,
) -> Path:
    """Create or complete the environment; returns its Python. Raises SetupError."""
    pins = release_pins(version)  # an unsupported version fails before anything is made
    env_dir = Path(os.path.abspath(os.path.expanduser(str(env_dir))))
    python = venv_python(env_dir)
    if not force and ready_version(python) == version:
        print(f"sglaunch: sglang {version} is already set up in {env_dir}", file=sys.stderr)
        return python
    if env_dir.exists() and not python.exists() and any(env_dir.iterdir()):
        raise SetupError(f"{env_dir} exists and is not a Python environment; choose another --dir")
    if not python.exists():
        _run(
            f"creating a virtual environment in {env_dir}",
            [base_python, "-m", "venv", str(env_dir)],
        )
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check"]
    torch_cmd = [*pip, TORCH]
    if torch_index_url:
        torch_cmd += ["--index-url", torch_index_url]
    _run(f"installing {TORCH}", torch_cmd)
    sglang = f"sglang=={version}"
    _run(
        f"installing {' '.join([sglang, *pins])} without their GPU dependencies",
        [*pip, "--no-deps", sglang, *pins],
    )
    reqs = env_dir / "sglaunch-sglang-cpu.txt"
    reqs.write_text(requirements_text(), encoding="utf-8")
    _run("installing what sglang's argument resolution needs", [*pip, "-r", str(reqs)])
    print("sglaunch: checking that sglang's argument resolution imports", file=sys.stderr)
    found = ready_version(python)
    if found != version:
        raise SetupError(
            f"{python} still cannot import sglang's resolution code after installing; "
            "run it with the probe in sglaunch/oracle/setup_env.py to see why"
        )
    return python


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="sglaunch oracle setup",
        description="Create the CPU-only sglang environment that sglaunch's oracle runs in.",
    )
    ap.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="where to create it (default: sglaunch's data folder)",
    )
    ap.add_argument(
        "--torch-index-url",
        default=None,
        help="index for torch only; on Linux PyPI's torch is the CUDA build (GBs): "
        "https://download.pytorch.org/whl/cpu has the CPU one",
    )
    ap.add_argument("--force", action="store_true", help="reinstall even when it looks ready")
    ap.add_argument(
        "--version",
        default=NEWEST,
        choices=SUPPORTED,
        help=f"the sglang release to install (default {NEWEST})",
    )
    args = ap.parse_args(argv)
    env_dir = args.dir if args.dir is not None else managed_env_dir(args.version)
    try:
        python = setup(
            env_dir, version=args.version, torch_index_url=args.torch_index_url, force=args.force
        )
    except SetupError as exc:
        print(f"sglaunch: {exc}", file=sys.stderr)
        # USAGE, the contract's "bad usage or input": a setup fails on what the
        # user can change (--dir, the network or index, the base Python), and
        # VALIDATION (1) would read as "the launch line has errors"
        return int(ExitCode.USAGE)
    except KeyboardInterrupt:
        print("sglaunch: interrupted; run the same command again to finish", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    print(python)
    print(
        f"ready: sglang {args.version} at {python} (a CPU build: for checks, not for serving)",
        file=sys.stderr,
    )
    return int(ExitCode.OK)


if __name__ == "__main__":
    sys.exit(main())
