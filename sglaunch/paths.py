"""Where sglaunch keeps its files. SGLAUNCH_HOME moves all of them under one folder."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sglaunch.errors import UserError
from sglaunch.safeio import InputError, path_stat, shown

APP = "sglaunch"
# Linux's limits on a whole path and on one name in it
_PATH_MAX = 4096
_NAME_MAX = 255


def _home(*, checked: bool = True) -> Path | None:
    """SGLAUNCH_HOME, checked to be a folder or a path to create one (`checked`): a
    profile or a run needs it. The cache passes checked=False: what it cannot write
    there it rebuilds, and says why (oracle/schema_cache.py)."""
    home = os.environ.get("SGLAUNCH_HOME")
    if not home:
        return None

    try:
        path = Path(home).expanduser()
    except RuntimeError:  # ~user that does not exist
        raise UserError(
            f"SGLAUNCH_HOME={shown(home)}: cannot expand '~' there; give a full path"
        ) from None
    if not checked:
        return path
    # checked here, once, rather than failing later inside whichever write comes first
    label = f"SGLAUNCH_HOME={shown(home)}"
    if len(os.fsencode(path)) >= _PATH_MAX or any(
        len(os.fsencode(part)) > _NAME_MAX for part in path.parts
    ):
        raise UserError(f"{label}: the path is too long for the file system; use a shorter one")
    try:
        st = path_stat(path, label)
    except InputError as exc:
        raise UserError(
            f"{exc.message} (SGLAUNCH_HOME must be a folder, or a path to create one)"
        ) from None
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise UserError(
            f"{label} is a file, not a folder; point SGLAUNCH_HOME at a folder (it is created if missing)"
        )
    return path


def config_dir() -> Path:
    home = _home()
    if home is not None:
        return home / "config"
    # platformdirs (~10 ms): only when a folder is first asked for
    from platformdirs import user_config_path

    return user_config_path(APP)


def data_dir() -> Path:
    home = _home()
    if home is not None:
        return home / "data"
    # platformdirs (~10 ms): only when a folder is first asked for
    from platformdirs import user_data_path

    return user_data_path(APP)


def cache_dir() -> Path:
    home = _home(checked=False)
    if home is not None:
        return home / "cache"
    # platformdirs (~10 ms): only when a folder is first asked for
    from platformdirs import user_cache_path

    return user_cache_path(APP)


def profiles_dir() -> Path:
    return config_dir() / "profiles"


def runs_dir() -> Path:
    return data_dir() / "runs"


def tilde(path: str | os.PathLike[str]) -> str:
    """`path` as a user reads it: under the home folder it starts with `~`."""
    text = os.fspath(path)
    home = os.path.expanduser("~")
    if home not in ("", "/") and (text == home or text.startswith(home + os.sep)):
        return "~" + text[len(home) :]
    return text
