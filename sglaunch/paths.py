"""Where sglaunch keeps its files. SGLAUNCH_HOME moves all of them under one folder."""

from __future__ import annotations

import os
from pathlib import Path

APP = "sglaunch"


def _home() -> Path | None:
    home = os.environ.get("SGLAUNCH_HOME")
    if not home:
        return None
    try:
        return Path(home).expanduser()
    except RuntimeError:  # ~user that does not exist
        from sglaunch.errors import UserError

        raise UserError(
            f"SGLAUNCH_HOME={home}: cannot expand '~' there; give a full path"
        ) from None


def config_dir() -> Path:
    home = _home()
    if home is not None:
        return home / "config"
    from platformdirs import user_config_path

    return user_config_path(APP)


def data_dir() -> Path:
    home = _home()
    if home is not None:
        return home / "data"
    from platformdirs import user_data_path

    return user_data_path(APP)


def cache_dir() -> Path:
    home = _home()
    if home is not None:
        return home / "cache"
    from platformdirs import user_cache_path

    return user_cache_path(APP)


def profiles_dir() -> Path:
    return config_dir() / "profiles"


def runs_dir() -> Path:
    return data_dir() / "runs"
