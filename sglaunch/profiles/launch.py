"""A profile made ready to run: the child's argv with secrets read from the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from sglaunch.errors import UserError
from sglaunch.flags.schema import FlagSchema, bundled_schema
from sglaunch.profiles.argvform import env_items, flags_argv, program
from sglaunch.profiles.profile import (
    Profile,
    check_profile,
)
from sglaunch.secrets import (
    MASK,
    resolve_secret_values,
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


@dataclass(frozen=True)
class Launch:
    """What to start: argv for the child process (never a shell) and the variables to add."""

    argv: list[str]  # program and flags, secrets resolved: for the child process only
    env: dict[str, str]  # set on top of the inherited environment
    display: list[str]  # the same argv with secrets masked: for screens, logs, argv.json


def resolve_launch(
    profile: Profile,
    *,
    environ: Mapping[str, str] | None = None,
    schema: FlagSchema | None = None,
    python: str | None = None,
    check_model: bool = True,
) -> Launch:
    """The profile made ready to run; one-line UserError when its model is gone or a secret unset."""
    schema = schema or bundled_schema()
    environ = os.environ if environ is None else environ
    if not profile.model:
        raise UserError(f"profile '{profile.name}' has no model: set one and save it again")
    model_path = profile.model
    if check_model:
        from sglaunch.facts.model import model_path_for_sglang, resolve_model_dir

        try:
            resolve_model_dir(profile.model, environ)
            model_path = model_path_for_sglang(profile.model, environ)
        except UserError as exc:
            raise UserError(f"profile '{profile.name}': {exc.message}", exc.code) from None
    values = resolve_secret_values(profile.secrets, environ, schema, profile=profile.name)
    exe = program(profile, python)
    argv = exe + sglang_argv(profile, schema=schema, secret_values=values, model_path=model_path)
    display = exe + sglang_argv(profile, schema=schema, model_path=model_path)
    return Launch(argv=argv, env=dict(env_items(profile)), display=display)
