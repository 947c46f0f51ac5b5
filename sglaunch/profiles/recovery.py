"""Unsaved edits kept when the terminal goes away.

A closed window or a dropped SSH session leaves nobody to answer "quit with unsaved
changes?", so the launch being edited is saved as a new profile, `unsaved-<time>`, and
named in a marker the next TUI start reads once and reports. The loaded profile itself is
never overwritten: the edits were not meant for it yet. A typed secret stays out, as in
every profile (a reference to its variable is kept).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from sglaunch.atomic import atomic_write
from sglaunch.errors import UserError
from sglaunch.profiles.profile import validate_name
from sglaunch.profiles.store import ConflictError
from sglaunch.safeio import InputError, path_stat, read_bytes

if TYPE_CHECKING:
    from pathlib import Path

    from sglaunch.profiles.profile import Profile
    from sglaunch.profiles.store import ProfileStore

PREFIX = "unsaved-"
MARKER = ".recovered"
# a marker holds a few names; anything longer was not written by this module
_MARKER_LIMIT = 64 << 10
_MAX_SAME_SECOND = 100


def _marker(store: ProfileStore) -> Path:
    return store.root / MARKER


def keep_unsaved(
    store: ProfileStore,
    as_profile: Callable[[str], Profile],
    *,
    now: datetime | None = None,
) -> str:
    """Save `as_profile(name)` (the launch being edited) as a new `unsaved-…` profile and
    note it for the next start; its name. Raises UserError when the store refuses."""
    base = f"{PREFIX}{(now or datetime.now()):%Y%m%d-%H%M%S}"
    for n in range(1, _MAX_SAME_SECOND + 1):
        name = base if n == 1 else f"{base}-{n}"
        if store.exists(name):
            continue
        try:
            store.save(as_profile(name))
        except ConflictError:
            continue  # another sglaunch, hung up in the same second, took the name
        with store.locked():  # two at once must not drop each other's name
            kept = [*_read_marker(store), name]
            atomic_write(_marker(store), "".join(f"{k}\n" for k in kept).encode())
        return name
    raise UserError(f"too many profiles named {base}-*: delete some (sglaunch profiles list)")


def _read_marker(store: ProfileStore) -> list[str]:
    path = _marker(store)
    try:
        if path_stat(path) is None:
            return []
        text = read_bytes(path, limit=_MARKER_LIMIT).decode("utf-8", "replace")
    except (InputError, OSError):
        return []
    names = []
    for line in text.splitlines():
        try:
            names.append(validate_name(line.strip()))
        except UserError:
            continue  # not a name this module wrote: ignored, never quoted
    return names


def take_recovered(store: ProfileStore) -> list[str]:
    """The profiles kept at earlier hang-ups that still exist; each is reported once."""
    if not _read_marker(store):
        return []  # the common case: nothing kept, and no folder or lock to make
    with store.locked():
        names = _read_marker(store)
        with contextlib.suppress(OSError):  # none, or a folder it cannot write: nothing to forget
            _marker(store).unlink()
    return [n for n in names if store.exists(n)]
