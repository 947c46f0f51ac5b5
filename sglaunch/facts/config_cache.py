"""transformers' view of a model config, kept on disk so a repeat check skips importing it.

Importing transformers costs ~1.5 s of a ~1.8 s `check` for the common models
(Llama, Qwen, DeepSeek). What `AutoConfig` makes of a config depends only on the
config's bytes, the folder it sits in (the name transformers records and quotes
in its errors) and transformers' version, so its answer, a JSON dict or the
error it raised, is stored under `cache_dir()/model-config/`, keyed by all of
those plus FORMAT. An entry is checked field by field before it is used: a
damaged or foreign one is ignored and rewritten. JSON only, never pickle: the
cache folder is only as trusted as the user's home.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sglaunch.paths import cache_dir
from sglaunch.safeio import InputError, read_bytes

# bump when what is stored, or what the facts read from it, changes meaning
FORMAT = 1
_FOLDER = "model-config"
# a config.json is a few KB; the reader refuses anything over 8 MB before this runs
_MAX_ENTRY_BYTES = 32 * 1024 * 1024


class TransformersRejected(Exception):
    """transformers refused the config (now or, for these same bytes, before): `str()` is
    "TypeName: message", as the facts report it."""


def _transformers_version() -> str | None:
    """transformers' installed version and where it lives, without importing it (~1.5 s).

    The version comes from the dist-info folder beside the package, which any pip
    install writes; an unusual layout falls back to importlib.metadata.
    """
    try:
        spec = importlib.util.find_spec("transformers")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    package = Path(spec.origin).parent
    infos = list(package.parent.glob("transformers-*.dist-info"))
    if len(infos) == 1:
        version = infos[0].name[len("transformers-") : -len(".dist-info")]
    else:
        # deferred: importlib.metadata loads the email package (~12 ms of every check)
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as dist_version

        try:
            version = dist_version("transformers")
        except PackageNotFoundError:
            return None
    return f"{version} {package}"


def _key(model_dir: Path, config: bytes, transformers: str) -> dict[str, Any]:
    return {
        "format": FORMAT,
        "transformers": transformers,
        "folder": os.fspath(model_dir),
        "config_sha256": hashlib.sha256(config).hexdigest(),
    }


def _entry_path(key: dict[str, Any]) -> Path:
    name = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:32]
    return cache_dir() / _FOLDER / f"{name}.json"


def _read(path: Path, key: dict[str, Any]) -> dict[str, Any] | None:
    """The stored entry for `key`, or None when missing, damaged or another key's."""
    try:
        # a FIFO or device planted there is refused, not waited on
        raw = read_bytes(path, limit=_MAX_ENTRY_BYTES, noun="a cache entry")
        entry = json.loads(raw)
    except (InputError, OSError, ValueError, RecursionError):
        return None  # missing, unreadable or damaged
    if not isinstance(entry, dict) or entry.get("key") != key:
        return None
    data, error = entry.get("data"), entry.get("error")
    if isinstance(data, dict) and error is None:
        return entry
    if data is None and isinstance(error, str) and error:
        return entry
    return None


def _write(path: Path, entry: dict[str, Any]) -> None:
    """Store `entry` atomically (a reader sees the old file or the new one, never half);
    a cache it cannot write only costs the next check the import."""
    try:
        text = json.dumps(entry, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        return  # something JSON cannot hold: not cached, still answered
    import tempfile  # only when writing: a repeat check never needs it

    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def autoconfig_view(model_dir: Path, load: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
    """`load(model_dir)` (transformers' dict of the config), from the cache when it holds
    this config's answer.

    Raises ImportError when transformers is missing and TransformersRejected when it
    refuses the config (the refusal is cached too: the same bytes fail the same way).
    """
    version = _transformers_version()
    try:
        config = (model_dir / "config.json").read_bytes()
    except OSError:
        config = None
    if version is None or config is None:
        return _load(model_dir, load)
    key = _key(model_dir, config, version)
    path = _entry_path(key)
    entry = _read(path, key)
    if entry is not None:
        if entry["error"] is not None:
            raise TransformersRejected(entry["error"])
        data: dict[str, Any] = entry["data"]
        return data
    try:
        data = _load(model_dir, load)
    except TransformersRejected as exc:
        _write(path, {"key": key, "data": None, "error": str(exc)})
        raise
    _write(path, {"key": key, "data": data, "error": None})
    return data


def _load(model_dir: Path, load: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
    try:
        return load(model_dir)
    except ImportError:
        raise
    except Exception as exc:  # transformers rejects the config: so would sglang
        raise TransformersRejected(f"{type(exc).__name__}: {exc}") from exc
