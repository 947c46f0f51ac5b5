"""The calibration store: start-up costs measured on this machine, per (GPU name, driver, TP size).

A small JSON file in the user data directory (`sglaunch.paths.data_dir()`,
`memory-calibration.json`), written atomically like profiles. The next plan on
the same GPU, driver and TP size uses the measured cost instead of the estimate,
and says so in its assumptions. A file that does not parse is reported once and
never overwritten by a partial write; a value outside (0, GPU total) is ignored.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sglaunch.atomic import atomic_write
from sglaunch.errors import UserError
from sglaunch.paths import data_dir
from sglaunch.safeio import InputError, parse_json, read_text

FILE_NAME = "memory-calibration.json"
SCHEMA = 1
MAX_BYTES = 1 << 20  # a store with thousands of entries is still a few hundred KB
MAX_ENTRIES = 2000


@dataclass(frozen=True)
class Calibration:
    gpu_name: str
    driver: str
    tp_size: int
    startup_cost_bytes: int
    samples: int
    measured_at: float
    source: str  # the run it came from (run directory name), for the assumption line


def store_path() -> Path:
    return data_dir() / FILE_NAME


def _key(gpu_name: str, driver: str, tp_size: int) -> str:
    return f"{gpu_name}|{driver}|tp{int(tp_size)}"


def load(path: Path | None = None) -> dict[str, Calibration]:
    """Every stored calibration; {} when there is no store. A corrupt store raises UserError."""
    path = path or store_path()
    try:
        if not path.is_file():
            return {}
        text = read_text(path, limit=MAX_BYTES, label=str(path), noun="a calibration store")
        data = parse_json(text, label=str(path), what="calibration store")
    except OSError:
        return {}
    except InputError as exc:
        raise UserError(f"{exc.message}; remove it to recalibrate") from None
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        raise UserError(f"{path} has no 'entries' object; remove it to recalibrate")
    out: dict[str, Calibration] = {}
    for key, raw in entries.items():
        cal = _entry(raw)
        if cal is not None and key == _key(cal.gpu_name, cal.driver, cal.tp_size):
            out[key] = cal
    return out


def _entry(raw: Any) -> Calibration | None:
    if not isinstance(raw, dict):
        return None
    try:
        cal = Calibration(
            gpu_name=str(raw["gpu_name"]),
            driver=str(raw["driver"]),
            tp_size=int(raw["tp_size"]),
            startup_cost_bytes=int(raw["startup_cost_bytes"]),
            samples=int(raw.get("samples", 1)),
            measured_at=float(raw.get("measured_at", 0.0)),
            source=str(raw.get("source", "")),
        )
    except (KeyError, TypeError, ValueError, OverflowError):
        return None
    if cal.tp_size < 1 or not 0 < cal.startup_cost_bytes < (1 << 44):
        return None
    return cal


_CACHE: dict[str, tuple[tuple[int, int], dict[str, Calibration]]] = {}


def _cached_load(path: Path) -> dict[str, Calibration]:
    """load(), re-read only when the file changed: the TUI re-plans on every keystroke."""
    try:
        st = path.stat()
    except OSError:
        return {}
    stamp = (st.st_mtime_ns, st.st_size)
    hit = _CACHE.get(str(path))
    if hit is not None and hit[0] == stamp:
        return hit[1]
    entries = load(path)
    _CACHE[str(path)] = (stamp, entries)
    return entries


def costs_for(gpu_name: str, driver: str, path: Path | None = None) -> tuple[dict[int, int], str]:
    """{tp_size: startup cost} measured on this GPU and driver, and where they came from."""
    path = path or store_path()
    try:
        entries = _cached_load(path)
    except UserError:
        return {}, ""
    costs = {
        c.tp_size: c.startup_cost_bytes
        for c in entries.values()
        if c.gpu_name == gpu_name and c.driver == driver
    }
    where = str(path)
    return costs, (f"calibrated from earlier launches, {where}" if costs else "")


def record(
    gpu_name: str,
    driver: str,
    tp_size: int,
    startup_cost_bytes: int,
    *,
    source: str = "",
    path: Path | None = None,
) -> Calibration:
    """Store a measured cost (a running mean over launches); returns the stored entry."""
    path = path or store_path()
    if tp_size < 1 or not 0 < startup_cost_bytes < (1 << 44):
        raise UserError(
            f"a start-up cost of {startup_cost_bytes} bytes at TP {tp_size} is not plausible"
        )
    entries = load(path)
    key = _key(gpu_name, driver, tp_size)
    old = entries.get(key)
    samples = (old.samples + 1) if old else 1
    mean = (
        startup_cost_bytes
        if old is None
        else (old.startup_cost_bytes * old.samples + startup_cost_bytes) // samples
    )
    cal = Calibration(gpu_name, driver, int(tp_size), int(mean), samples, time.time(), source)
    entries[key] = cal
    if len(entries) > MAX_ENTRIES:
        for stale in sorted(entries, key=lambda k: entries[k].measured_at)[
            : len(entries) - MAX_ENTRIES
        ]:
            del entries[stale]
    payload = {
        "schema_version": SCHEMA,
        "entries": {k: vars(v) for k, v in sorted(entries.items())},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, (json.dumps(payload, indent=2) + "\n").encode())
    return cal
