"""Launch profiles: saved, validated sglang launches, and their import/export.

from sglaunch.profiles import ProfileStore, Profile
store = ProfileStore()                 # profiles_dir(); SGLAUNCH_HOME moves it
p = store.load("sala-tp2")             # UserError (exit 2) if missing or corrupt
p.flags["tp_size"] = 4
store.save(p)                          # ConflictError if someone saved it meanwhile
"""

from __future__ import annotations

from sglaunch.profiles.argvform import Exported, Imported
from sglaunch.profiles.atomic import atomic_write
from sglaunch.profiles.command import (
    import_text,
    profile_from_command,
    to_command,
    to_script,
)
from sglaunch.profiles.diff import DiffLine, diff
from sglaunch.profiles.launch import sglang_argv
from sglaunch.profiles.profile import (
    SCHEMA_VERSION,
    GpuSelection,
    Profile,
    Validated,
    check_profile,
    name_from_model,
    validate_name,
)
from sglaunch.profiles.sglang_yaml import config_to_argv, expand_config, profile_from_yaml, to_yaml
from sglaunch.profiles.store import ConflictError, ProfileInfo, ProfileStore
from sglaunch.secrets import (
    MASK,
    Masker,
    is_secret_env_name,
    is_secret_flag,
    mask_argv,
    mask_text,
    resolve_secret_values,
    secret_dests,
    secret_values,
)

__all__ = [
    "MASK",
    "SCHEMA_VERSION",
    "ConflictError",
    "DiffLine",
    "Exported",
    "GpuSelection",
    "Imported",
    "Masker",
    "Profile",
    "ProfileInfo",
    "ProfileStore",
    "Validated",
    "atomic_write",
    "check_profile",
    "config_to_argv",
    "diff",
    "expand_config",
    "import_text",
    "is_secret_env_name",
    "is_secret_flag",
    "mask_argv",
    "mask_text",
    "name_from_model",
    "profile_from_command",
    "profile_from_yaml",
    "resolve_secret_values",
    "secret_dests",
    "secret_values",
    "sglang_argv",
    "to_command",
    "to_script",
    "to_yaml",
    "validate_name",
]
