"""A profile as sglang's flags: what checks and exports read (launches go through the session)."""

from __future__ import annotations

from collections.abc import Mapping

from sglaunch.flags.schema import FlagSchema, bundled_schema
from sglaunch.profiles.argvform import flags_argv
from sglaunch.profiles.profile import (
    Profile,
    check_profile,
)
from sglaunch.secrets import (
    MASK,
)


def sglang_argv(
    profile: Profile,
    *,
    schema: FlagSchema | None = None,
    secret_values: Mapping[str, str] | None = None,
    model_path: str | None = None,
) -> list[str]:
    """sglang's flags for the profile: --model-path, the flags, then the secrets.

    Secrets are `****` unless `secret_values` ({dest: value}) is given: enough for
    checking (a secret's value never changes a verdict), never a secret on screen.
    Raises UserError when the profile holds a value sglang would reject by type.
    """
    schema = schema or bundled_schema()
    check_profile(profile, schema)
    if secret_values is None:
        secret_values = {dest: MASK for dest in profile.secrets}
    return flags_argv(profile, schema, model=model_path or profile.model, secrets=secret_values)
