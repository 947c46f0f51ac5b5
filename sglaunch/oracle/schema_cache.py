"""The flag schema read from the sglang interpreter itself, with help, cached per version.

`in_sglang/extract_flags.py` runs under the sglang interpreter and prints the schema of
its argparse parser; the JSON is cached under `cache_dir()/schema/`, keyed by
the interpreter and its sglang version, so later runs read a file instead of
importing sglang (seconds). Without sglang, the bundled facts-only schema is
used and the reason is kept; when reading the installed sglang's flags fails, the
bundled schema of that release stands in and the lookup says it failed.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from sglaunch.errors import UserError
from sglaunch.flags.schema import FlagSchema, bundled_schema
from sglaunch.in_sglang.sglang_import import sglang_version
from sglaunch.oracle.interpreter import cache_key_path, find_sglang_python, probe_sglang_version
from sglaunch.paths import cache_dir
from sglaunch.release_range import out_of_range_line

EXTRACT = Path(__file__).resolve().parent.parent / "in_sglang" / "extract_flags.py"


@dataclass(frozen=True)
class SchemaLookup:
    schema: FlagSchema
    source: str  # "cache", "extracted" or "bundled"
    reason: str = ""  # why bundled, or a note (another sglang version)
    python: str | None = None
    path: Path | None = None  # the cache file
    version: str | None = None  # the installed sglang's version, when one was found
    # reading the installed sglang's flags failed: the bundled schema stands in
    # for it, and every output says so (never a silent fallback)
    failed: bool = False


def schema_cache_dir() -> Path:
    return cache_dir() / "schema"


def cache_file(python: str, version: str) -> Path:
    key = hashlib.sha256(f"{cache_key_path(python)}\0{version}".encode()).hexdigest()[:16]
    return schema_cache_dir() / f"schema-{version}-{key}.json"


def _bundled(
    reason: str, python: str | None = None, version: str | None = None, *, failed: bool = False
) -> SchemaLookup:
    """The bundled schema of `version` (the nearest supported release's; the newest by default)."""
    return SchemaLookup(
        schema=bundled_schema(version),
        source="bundled",
        reason=reason,
        python=python,
        version=version,
        failed=failed,
    )


def _failed(why: str, python: str, version: str) -> SchemaLookup:
    schema = bundled_schema(version)
    return _bundled(
        f"{why}; checking sglang {version}'s launch against the bundled sglang "
        f"{schema.sglang_version} schema instead",
        python,
        version,
        failed=True,
    )


def _extract(python: str, out: Path, timeout: float) -> str:
    """Run extract_flags.py under `python` into `out`; returns '' or a one-line reason."""
    import subprocess  # only to extract: a check reads the cached schema

    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"cannot create the schema cache {out.parent}: {exc.strerror or exc}"
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    try:
        done = subprocess.run(
            [python, str(EXTRACT), "-o", str(tmp)],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return f"reading sglang's flags took more than {timeout:g} s"
    except OSError as exc:
        return f"cannot run {python}: {exc.strerror or exc}"
    if done.returncode != 0 or not tmp.exists():
        lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
        last = lines[-1].strip() if lines else f"exit status {done.returncode}"
        tmp.unlink(missing_ok=True)
        return f"reading sglang's flags failed: {last}"
    try:
        os.replace(tmp, out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        return f"cannot write the schema cache {out}: {exc.strerror or exc}"
    return ""


def _sglang_version(python: str, source: str) -> tuple[str | None, str]:
    """(sglang's version under `python`, or None and why); `source` as find_sglang_python's."""
    if source == "current":
        # sglang is installed in this very interpreter: its metadata answers in-process
        # (without importing sglang), where a subprocess would cost a Python start-up
        version = sglang_version()
        if version is None:
            return None, f"sglang is not installed in {python}; run `sglaunch oracle setup`"
        return version, ""
    return probe_sglang_version(python)


def load_flag_schema(
    python: str | None = None,
    *,
    refresh: bool = False,
    timeout: float = 180.0,
    version: str | None = None,
) -> SchemaLookup:
    """The schema of the sglang that will parse the launch line, or the bundled one.

    Never raises for a missing or broken sglang or an unusable cache folder:
    the result says why it fell back. A cache file that no longer parses is rebuilt.
    `version`, when the caller knows it (the warm oracle service said), saves the probe.
    """
    found = find_sglang_python(python)
    if found.path is None:
        return _bundled(found.reason)
    version, why = (version, "") if version else _sglang_version(found.path, found.source)
    if version is None:
        return _bundled(why, found.path)
    note = out_of_range_line(version) or ""
    path = cache_file(found.path, version)
    if not refresh:
        try:
            schema = FlagSchema.from_json(json.loads(path.read_text("utf-8")), origin=str(path))
            return SchemaLookup(schema, "cache", note, found.path, path, version)
        except (OSError, ValueError, UserError):
            pass  # missing, unreadable or damaged: (re)built below
    failure = _extract(found.path, path, timeout)
    if failure:
        return _failed(failure, found.path, version)
    try:
        schema = FlagSchema.from_json(json.loads(path.read_text("utf-8")), origin=str(path))
    except (OSError, ValueError, UserError) as exc:
        path.unlink(missing_ok=True)
        return _failed(f"sglang's flag schema was unreadable: {exc}", found.path, version)
    return SchemaLookup(schema, "extracted", note, found.path, path, version)
