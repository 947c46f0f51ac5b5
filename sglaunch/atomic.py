"""Write a file so that a crash leaves either the old content or the new, never a mix.

The recipe: write a temporary file in the same directory (so the rename stays on
one filesystem), flush and fsync it, `os.replace` it over the target, then fsync
the directory so the rename itself survives a power cut.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from sglaunch.safeio import writable_target

# Tests set this to widen the window between writing and renaming, then SIGKILL
# the process inside it; nothing else should touch it.
_pause_hook: Callable[[str], None] | None = None


def _pause(stage: str) -> None:
    if _pause_hook is not None:
        _pause_hook(stage)


# Room in a file name (255 bytes on every common file system) for ".", the
# random part and ".tmp" after the target's name.
_TEMP_NAME_ROOM = 200


def temp_prefix(path: Path) -> str:
    """Temporary files for `path` start with this: hidden, never named *.toml, and short
    enough that a long target name still leaves room for the rest."""
    return f".{path.name[:_TEMP_NAME_ROOM]}."


def fsync_dir(directory: Path) -> None:
    # Not every platform can open a directory (Windows); there the rename is all we get.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Replace `path` with `data` atomically; the directory must exist.

    Only a regular file or a new path is replaced (a symlink to a regular file is
    followed): never a FIFO, a device, or a /proc/self/fd link (safeio.writable_target).
    """
    path = writable_target(path)
    directory = path.parent
    tmp = directory / f"{temp_prefix(path)}{os.urandom(4).hex()}.tmp"
    # 0o666 under the umask, as open() would; `mode` (e.g. 0o755 for a script) is set exactly
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            _pause("opened")
            f.write(data)
            _pause("written")
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        _pause("synced")
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _pause("replaced")
    fsync_dir(directory)


def remove_stale_temps(path: Path) -> None:
    """Delete temporary files a killed writer of `path` left behind (call under its lock)."""
    prefix = temp_prefix(path)
    with contextlib.suppress(OSError):
        for entry in path.parent.iterdir():
            if entry.name.startswith(prefix) and entry.name.endswith(".tmp"):
                with contextlib.suppress(OSError):
                    entry.unlink()
