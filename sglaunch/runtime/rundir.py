"""A run directory: `runs/DATE-PROFILE/` with server.log, argv.json, resolved.json, run.json.

Every JSON file is written whole (sglaunch.atomic: temporary file, fsync, rename, fsync
of the directory), so a crash leaves the previous version, never half of one. server.log
is appended as lines arrive.

run.json also says who the server is, so that `sglaunch runs` can tell it from a later
process with the same pid (identity.py): `update_status(pid=N)` records the process's
start time, the host and the boot (`process`), and the first status `ready` or
`detached` adds the digest of its command line.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import IO, Any

from sglaunch.atomic import atomic_write
from sglaunch.paths import runs_dir
from sglaunch.runtime.identity import cmdline_digest, identify, is_pid

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

    @classmethod
    def open(cls, path: Path, status: dict[str, Any]) -> RunDir:
        """An existing run directory whose run.json reads `status` (to add to it)."""
        run = cls(path)
        run._status = dict(status)
        return run

    def update_status(self, **fields: Any) -> None:
        self._status.update(fields)
        self._record_identity(fields)
        self.write_json(STATUS_NAME, self._status)

    def _record_identity(self, fields: dict[str, Any]) -> None:
        pid = fields.get("pid")
        proc = self._status.get("process")
        if (
            isinstance(pid, int)
            and is_pid(pid)
            and not (isinstance(proc, dict) and proc.get("pid") == pid)
        ):
            self._status["process"] = proc = identify(pid)
        if (
            fields.get("status") in ("ready", "detached")
            and isinstance(proc, dict)
            and is_pid(proc.get("pid"))
            and "cmdline_sha256" not in proc
        ):
            # by now a wrapper script has exec'd the server: this is its own command line
            digest = cmdline_digest(proc["pid"])
            if digest:
                proc["cmdline_sha256"] = digest

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
