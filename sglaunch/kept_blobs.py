"""A file of blobs by key that one process keeps for the next, as Python keeps bytecode.

sglaunch's two start-up caches are one of these: the dataclass methods' code
(sglaunch/cli/dataclass_cache.py) and Textual's parsed CSS (tui/css_cache.py). The file is
read whole, once; what a process added is written back atomically (a reader sees the old
file or the new, whole) and only then. Nothing to write to, as in a read-only install, is no
error: every process then makes its blobs, as without the file.
"""

from __future__ import annotations

import contextlib
import marshal
import os


class KeptBlobs:
    """Blobs by key, read from `path` once; what was added (`new`) is written back by `write`."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.entries = _read(path)
        self.new: dict[str, bytes] = {}
        self.used: set[str] = set()  # the keys this process read back

    def find(self, key: str) -> bytes | None:
        return self.new.get(key) or self.entries.get(key)

    def write(self, limit: int) -> None:
        """Write back what was added. Past `limit` blobs (other versions', other programs')
        the file keeps only what this process used or added: every process reads it whole."""
        if not self.new:
            return
        entries = {**self.entries, **self.new}
        if len(entries) > limit:
            entries = {k: v for k, v in entries.items() if k in self.used or k in self.new}
        tmp = f"{self.path}.{os.getpid()}.tmp"
        try:
            with open(tmp, "wb") as fh:
                fh.write(marshal.dumps(entries))
            os.replace(tmp, self.path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            return
        self.entries, self.new = entries, {}


def _read(path: str) -> dict[str, bytes]:
    try:
        with open(path, "rb") as fh:
            data = marshal.loads(fh.read())
    except (OSError, EOFError, ValueError, TypeError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, bytes)}
