"""Launch profiles: saved, validated sglang launches, and their import/export.

from sglaunch.profiles import ProfileStore, Profile
store = ProfileStore()                 # profiles_dir(); SGLAUNCH_HOME moves it
p = store.load("sala-tp2")             # UserError (exit 2) if missing or corrupt
p.flags["tp_size"] = 4
store.save(p)                          # ConflictError if someone saved it meanwhile
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# `diff` is both a submodule and a function of it: once anything imports the submodule, the
# import system sets the package's `diff` to the module, which a lazy name never replaces
# (`from sglaunch.profiles import diff` then gave the module: "'module' object is not
# callable" in the picker's diff). Bound here, the function wins; the module is light.
from sglaunch.profiles.diff import DiffLine, diff

# Imported on first use (PEP 562): a module that needs one name here (the session needs
# MAX_NODES) must not pay for the YAML, TOML and store stack on `sglaunch check`'s path.
if TYPE_CHECKING:
    from sglaunch.atomic import atomic_write
    from sglaunch.profiles.argvform import Exported, Imported
    from sglaunch.profiles.command import (
        import_text,
        profile_from_command,
        to_command,
        to_script,
    )
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
    from sglaunch.profiles.sglang_yaml import (
        config_to_argv,
        expand_config,
        profile_from_yaml,
        to_yaml,
    )
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

_LAZY = {
    "Exported": "sglaunch.profiles.argvform",
    "Imported": "sglaunch.profiles.argvform",
    "atomic_write": "sglaunch.atomic",
    "import_text": "sglaunch.profiles.command",
    "profile_from_command": "sglaunch.profiles.command",
    "to_command": "sglaunch.profiles.command",
    "to_script": "sglaunch.profiles.command",
    "sglang_argv": "sglaunch.profiles.launch",
    "SCHEMA_VERSION": "sglaunch.profiles.profile",
    "GpuSelection": "sglaunch.profiles.profile",
    "Profile": "sglaunch.profiles.profile",
    "Validated": "sglaunch.profiles.profile",
    "check_profile": "sglaunch.profiles.profile",
    "name_from_model": "sglaunch.profiles.profile",
    "validate_name": "sglaunch.profiles.profile",
    "config_to_argv": "sglaunch.profiles.sglang_yaml",
    "expand_config": "sglaunch.profiles.sglang_yaml",
    "profile_from_yaml": "sglaunch.profiles.sglang_yaml",
    "to_yaml": "sglaunch.profiles.sglang_yaml",
    "ConflictError": "sglaunch.profiles.store",
    "ProfileInfo": "sglaunch.profiles.store",
    "ProfileStore": "sglaunch.profiles.store",
    "MASK": "sglaunch.secrets",
    "Masker": "sglaunch.secrets",
    "is_secret_env_name": "sglaunch.secrets",
    "is_secret_flag": "sglaunch.secrets",
    "mask_argv": "sglaunch.secrets",
    "mask_text": "sglaunch.secrets",
    "resolve_secret_values": "sglaunch.secrets",
    "secret_dests": "sglaunch.secrets",
    "secret_values": "sglaunch.secrets",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


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
