"""Which Python has sglang: the interpreter the oracle and the flag schema run under.

Order: an explicit path (`--sglang-python`), then `SGLAUNCH_SGLANG_PYTHON`, then
this interpreter when it has sglang (found, never imported: importing it here
would load torch into sglaunch), then the newest environment `sglaunch oracle setup`
manages, then none.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from sglaunch import SGLANG_VERSION
from sglaunch.paths import data_dir
from sglaunch.release_range import oracle_refusal
from sglaunch.validators.release_spans import SUPPORTED, key

ENV_VAR = "SGLAUNCH_SGLANG_PYTHON"
NOT_INSTALLED = "sglang is not installed; run `sglaunch oracle setup`"


@dataclass(frozen=True)
class SglangPython:
    """An interpreter to run sglang under; `path` is None when there is none, and `reason` says why."""

    path: str | None
    source: str  # "flag", "env", "current", "managed" or "none"
    reason: str = ""


def managed_env_dir(version: str = SGLANG_VERSION) -> Path:
    """Where `sglaunch oracle setup [--version V]` puts its CPU-only sglang environment."""
    return data_dir() / f"sglang-cpu-{version}"


def managed_python() -> Path | None:
    """The newest release's managed environment that exists."""
    for version in reversed(SUPPORTED):
        python = venv_python(managed_env_dir(version))
        if _usable(str(python)):
            return python
    return None


def venv_python(env_dir: Path) -> Path:
    return env_dir / "bin" / "python"


def _usable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _given(path: str, source: str, shown: str) -> SglangPython:
    # abspath, not realpath: a venv's bin/python is a symlink to the base
    # interpreter, and following it would leave the venv behind.
    full = os.path.abspath(os.path.expanduser(path))
    if not _usable(full):
        why = "no such file" if not os.path.exists(full) else "not an executable file"
        return SglangPython(None, source, f"{shown}: {why}")
    return SglangPython(full, source)


def find_sglang_python(explicit: str | None = None) -> SglangPython:
    """The interpreter to use, by the order in this module's docstring."""
    if explicit:
        return _given(explicit, "flag", f"--sglang-python {explicit}")
    from_env = os.environ.get(ENV_VAR)
    if from_env:
        return _given(from_env, "env", f"{ENV_VAR}={from_env}")
    try:
        here = importlib.util.find_spec("sglang") is not None
    except (ImportError, ValueError):
        here = False
    if here:
        return SglangPython(sys.executable, "current")
    managed = managed_python()
    if managed is not None:
        return SglangPython(str(managed), "managed")
    return SglangPython(None, "none", NOT_INSTALLED)


def cache_key_path(python: str) -> str:
    """The interpreter's identity for caches: symlinked folders resolved, the venv kept."""
    return os.path.join(os.path.realpath(os.path.dirname(python)), os.path.basename(python))


_VERSION_PROBE = (
    "import importlib.metadata as m\n"
    "try:\n    print(m.version('sglang'))\n"
    "except m.PackageNotFoundError:\n    print('')\n"
)


# One answer per interpreter for a short while: `check` asks from the release choice, the
# schema cache and the oracle's refusal, and an interpreter that hangs would cost each ask
# the whole timeout. Short, so a long-lived TUI sees an `oracle setup` done meanwhile.
_PROBED: dict[tuple[str, int, int], tuple[float, tuple[str | None, str]]] = {}
PROBE_MEMO_S = 30.0


def probe_sglang_version(python: str, timeout: float = 10.0) -> tuple[str | None, str]:
    """(sglang's version in that interpreter or None, a one-line reason when None)."""
    try:
        st = os.stat(python)
    except OSError:
        return _probe_sglang_version(python, timeout)
    memo = (cache_key_path(python), st.st_ino, st.st_mtime_ns)
    now = time.monotonic()
    hit = _PROBED.get(memo)
    if hit is not None and now - hit[0] < PROBE_MEMO_S:
        return hit[1]
    answer = _probe_sglang_version(python, timeout)
    _PROBED[memo] = (now, answer)
    return answer


def _probe_sglang_version(python: str, timeout: float) -> tuple[str | None, str]:
    import subprocess  # only to probe: a check with a warm service knows the version

    try:
        done = subprocess.run(
            [python, "-c", _VERSION_PROBE],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return None, f"{python} did not answer within {timeout:g} s"
    except OSError as exc:
        return None, f"cannot run {python}: {exc.strerror or exc}"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return None, f"{python} failed: {last}"
    version = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if not version:
        return None, f"sglang is not installed in {python}; run `sglaunch oracle setup`"
    if not key(version) or len(version) > 40:
        return None, f"{python} did not report an sglang version (it said {version[:40]!r})"
    return version, ""


def oracle_refused(python: str) -> tuple[str, str] | None:
    """(sglang's version, why) when `python`'s sglang is one the oracle cannot run, so that
    no service or worker is started for it; None when it may be tried (or says nothing)."""
    version, _ = probe_sglang_version(python)
    if version is None:
        return None  # the worker finds out, and says so in its own words
    why = oracle_refusal(version)
    return (version, why) if why else None
