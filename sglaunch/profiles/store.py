"""Profiles on disk: one TOML file each, under `profiles_dir()` (SGLAUNCH_HOME moves it).

Files next to `NAME.toml`:
- `NAME.toml.bak`  the version before the last save (or the deleted profile);
- `.lock` (one for the folder) the lock every save and delete takes (`flock`): one
  file, not one per profile left beside each;
- `.NAME.toml.*.tmp` a save in progress; one left by a killed process is removed
  by the next save of NAME.

Guarantees:
- a save is atomic (`atomic_write`): a crash leaves the old file or the new one;
- a file that does not parse is reported, never overwritten;
- two processes saving the same profile lose nothing silently: a profile carries
  the revision (hash of the bytes) it was loaded from, and `save` refuses with
  ConflictError when the file changed since, unless told to force.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sglaunch.atomic import atomic_write, fsync_dir, remove_stale_temps
from sglaunch.errors import UserError
from sglaunch.flags.schema import FlagSchema, bundled_schema
from sglaunch.paths import profiles_dir
from sglaunch.profiles.profile import Profile, validate_name
from sglaunch.profiles.tomlform import profile_from_toml, profile_to_toml
from sglaunch.safeio import MAX_TEXT_BYTES, InputError, open_lock, path_stat, read_bytes, shown

try:
    import fcntl
except ImportError:  # Windows: no flock; saves there rely on the revision check alone
    fcntl = None  # type: ignore[assignment]

SUFFIX = ".toml"


class ConflictError(UserError):
    """The profile on disk is not the one the caller loaded: saving would lose someone's change."""


@dataclass(frozen=True)
class ProfileInfo:
    name: str
    path: Path
    mtime: float  # seconds since the epoch
    model: str | None = None
    error: str | None = None  # why the file cannot be read, instead of raising


def revision_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


LOCK_NAME = ".lock"


class ProfileStore:
    def __init__(self, root: Path | None = None, schema: FlagSchema | None = None) -> None:
        self.root = Path(root) if root is not None else profiles_dir()
        self.schema = schema or bundled_schema()

    def path(self, name: str) -> Path:
        return self.root / f"{validate_name(name)}{SUFFIX}"

    def backup_path(self, name: str) -> Path:
        return self.root / f"{validate_name(name)}{SUFFIX}.bak"

    def _lock_path(self) -> Path:
        return self.root / LOCK_NAME

    @contextlib.contextmanager
    def _locked(self, name: str) -> Iterator[None]:
        """The folder's lock, for a save or delete of `name` (saves are rare: one lock)."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(
                f"cannot create the profiles folder {shown(self.root)}: {exc.strerror or exc} "
                "(SGLAUNCH_HOME moves it)"
            ) from None
        fd = open_lock(self._lock_path())
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def locked(self) -> contextlib.AbstractContextManager[None]:
        """The folder's lock, for a file beside the profiles (not while saving: not nested)."""
        return self._locked(LOCK_NAME)

    def _read(self, path: Path) -> bytes | None:
        """The profile's bytes, None when there is none; a FIFO, a device or a file too
        large for a profile is refused by name (reading it would block or fill memory)."""
        label = f"profile {shown(path)}"
        if path_stat(path, label) is None:
            return None
        try:
            return read_bytes(path, limit=MAX_TEXT_BYTES, label=label, noun="a profile")
        except InputError as exc:
            raise UserError(exc.message) from None

    # --- reading ---------------------------------------------------------------

    def names(self) -> list[str]:
        """Every NAME.toml entry but folders: a FIFO or a dangling link there is listed
        (as broken) rather than hidden."""
        if not self.root.is_dir():
            return []
        try:
            entries = list(self.root.iterdir())
        except OSError:
            return []
        return sorted(
            p.name[: -len(SUFFIX)]
            for p in entries
            if p.name.endswith(SUFFIX) and not p.name.startswith(".") and not p.is_dir()
        )

    def exists(self, name: str) -> bool:
        try:
            return path_stat(self.path(name)) is not None
        except InputError:
            return True  # a link loop: something is there, and it is broken

    def list(self) -> list[ProfileInfo]:
        """Every profile, broken ones included (with `error` set) so a listing always works."""
        out: list[ProfileInfo] = []
        for name in self.names():
            path = self.root / f"{name}{SUFFIX}"
            try:
                mtime = path.lstat().st_mtime  # a dangling link is listed as broken
            except OSError:
                continue  # deleted while we listed
            try:
                profile = self.load(name)
            except UserError as exc:
                out.append(ProfileInfo(name=name, path=path, mtime=mtime, error=exc.message))
                continue
            out.append(ProfileInfo(name=name, path=path, mtime=mtime, model=profile.model))
        return out

    def load(self, name: str) -> Profile:
        path = self.path(name)
        data = self._read(path)
        if data is None:
            close = difflib.get_close_matches(name, self.names(), n=1)
            hint = f" — did you mean {close[0]}?" if close else ""
            raise UserError(
                f"no profile named {name!r}{hint} (see `sglaunch profiles list`; they live in {self.root})"
            )
        profile = profile_from_toml(data, name=name, path=path, schema=self.schema)
        profile.revision = revision_of(data)
        return profile

    # --- writing ---------------------------------------------------------------

    def save(self, profile: Profile, *, force: bool = False) -> Profile:
        """Write the profile atomically; the previous version goes to NAME.toml.bak.

        Refuses (ConflictError) when the file is not what `profile` was loaded from:
        changed or deleted since, or created meanwhile for a new profile. `force`
        overwrites anyway. Never overwrites a file that does not parse.
        Sets and returns `profile` with its new revision.
        """
        data = profile_to_toml(profile, self.schema)  # validates before anything is touched
        path = self.path(profile.name)
        with self._locked(profile.name):
            remove_stale_temps(path)
            current = self._read(path)
            if current is not None:
                try:
                    profile_from_toml(current, name=profile.name, path=path, schema=self.schema)
                except UserError as exc:
                    raise UserError(
                        f"{exc.message} — not overwriting it: move it aside or fix it, then save again"
                    ) from None
            current_rev = revision_of(current) if current is not None else None
            if not force and current_rev != profile.revision:
                raise ConflictError(self._conflict_message(profile, current_rev))
            if current is not None:
                atomic_write(self.backup_path(profile.name), current)
            atomic_write(path, data)
        profile.revision = revision_of(data)
        return profile

    def _conflict_message(self, profile: Profile, current_rev: str | None) -> str:
        name = profile.name
        if profile.revision is None:
            return (
                f"profile '{name}' already exists; choose another name, load it first, "
                "or replace it (--force)"
            )
        if current_rev is None:
            return f"profile '{name}' was deleted since it was loaded; save with --force to create it again"
        return (
            f"profile '{name}' was changed by someone else since it was loaded; reload it and "
            "redo your change, or overwrite their version (--force)"
        )

    def delete(self, name: str) -> Path:
        """Remove a profile (broken ones too); its last content stays in NAME.toml.bak."""
        path = self.path(name)
        with self._locked(name):
            # not read: a FIFO or a link loop put there must be removable too
            if path_stat(path) is None and not path.is_symlink():
                raise UserError(f"no profile named {name!r} (see `sglaunch profiles list`)")
            backup = self.backup_path(name)
            os.replace(path, backup)
            fsync_dir(self.root)
        return backup
