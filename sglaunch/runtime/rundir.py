"""A run directory: `runs/DATE-PROFILE/` with server.log, argv.json, resolved.json, run.json.

Every JSON file is written whole (profiles.atomic: temporary file, fsync, rename, fsync
of the directory), so a crash leaves the previous version, never half of one. server.log
is appended as lines arrive.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import IO, Any

from sglaunch.paths import runs_dir
from sglaunch.profiles.atomic import atomic_write

LOG_NAME = "server.log"
STATUS_NAME = "run.json"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "adhoc"


class RunDir:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._status: dict[str, Any] = {}
        self._log: IO[str] | None = None

    @classmethod
    def create(cls, profile: str, root: Path | None = None) -> RunDir:
        root = root or runs_dir()
        root.mkdir(parents=True, exist_ok=True)
        stem = f"{time.strftime('%Y%m%d-%H%M%S')}-{_slug(profile)}"
        for n in range(1, 1000):
            path = root / (stem if n == 1 else f"{stem}-{n}")
            try:
                path.mkdir()
            except FileExistsError:
                continue
            return cls(path)
        raise OSError(f"cannot create a run directory under {root}")

    @property
    def log_path(self) -> Path:
        return self.path / LOG_NAME

    def write_json(self, name: str, data: Any) -> None:
        text = json.dumps(data, indent=2, default=str) + "\n"
        atomic_write(self.path / name, text.encode("utf-8"))

    def update_status(self, **fields: Any) -> None:
        self._status.update(fields)
        self.write_json(STATUS_NAME, self._status)

    @property
    def status(self) -> dict[str, Any]:
        return dict(self._status)

    def open_log(self) -> IO[str]:
        if self._log is None:
            self._log = open(self.log_path, "a", encoding="utf-8", buffering=1 << 16)  # noqa: SIM115
        return self._log

    def close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
