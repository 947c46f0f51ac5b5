"""A profile as one launch command line or a bash script, and back from either.

Pasted lines may carry env prefixes, backslash continuations, `sglang serve`,
and `--config FILE` (merged as sglang merges it).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from sglaunch.flags.launchline import parse_launch_line
from sglaunch.flags.schema import FlagSchema, bundled_schema
from sglaunch.profiles.argvform import (
    Imported,
    Raw,
    command_tokens,
    env_items,
    exported_model,
    flags_argv,
    parse_values,
    profile_from_values,
    program,
    quote,
)
from sglaunch.profiles.profile import (
    Profile,
    check_profile,
)
from sglaunch.profiles.sglang_yaml import expand_config, profile_from_yaml


def _export_argv(profile: Profile, schema: FlagSchema) -> list[str]:
    check_profile(profile, schema)
    return flags_argv(profile, schema, model=exported_model(profile.model), secrets=None)


def to_command(
    profile: Profile, *, schema: FlagSchema | None = None, python: str | None = None
) -> str:
    """One shell line; secrets are `"${VAR:?set VAR}"`, read from the environment when run."""
    schema = schema or bundled_schema()
    tokens = command_tokens(profile, _export_argv(profile, schema), python)
    return " ".join(quote(t) for t in tokens)


def _group_flags(tokens: list[str]) -> list[list[str]]:
    """['--a', '1', '--b'] -> [['--a', '1'], ['--b']]: one flag per script line."""
    groups: list[list[str]] = []
    for tok in tokens:
        if (tok.startswith("--") and not isinstance(tok, Raw)) or not groups:
            groups.append([tok])
        else:
            groups[-1].append(tok)
    return groups


def _comment(text: str) -> list[str]:
    return [f"# {line}".rstrip() for line in text.splitlines()]


def to_script(
    profile: Profile, *, schema: FlagSchema | None = None, python: str | None = None
) -> str:
    """A bash script that starts the server; secrets come from the environment when it runs."""
    schema = schema or bundled_schema()
    lines = [
        "#!/usr/bin/env bash",
        f"# sglang launch for sglaunch profile '{profile.name}'.",
    ]
    if profile.secrets:
        names = ", ".join(sorted(set(profile.secrets.values())))
        lines.append(f"# Secrets are read from the environment when this runs: export {names}.")
    if profile.notes:
        lines += _comment(profile.notes)
    lines.append("set -euo pipefail")
    for k, v in env_items(profile):
        lines.append(f"export {k}={shlex.quote(v)}")
    exe = " ".join(shlex.quote(t) for t in program(profile, python))
    groups = _group_flags(_export_argv(profile, schema))
    if not groups:
        lines.append(f"exec {exe}")
    else:
        lines.append(f"exec {exe} \\")
        for i, group in enumerate(groups):
            tail = " \\" if i < len(groups) - 1 else ""
            lines.append("  " + " ".join(quote(t) for t in group) + tail)
    return "\n".join(lines) + "\n"


def profile_from_command(
    text: str,
    *,
    name: str | None = None,
    schema: FlagSchema | None = None,
    source: str = "the launch line",
    base_dir: Path | None = None,
) -> Imported:
    """A profile from a pasted launch line or a shell script that runs one.

    A `--config FILE` in it is merged as sglang merges it (the file's flags first,
    the line's win); FILE is found relative to `base_dir` (default: the current folder).
    """
    schema = schema or bundled_schema()
    line = parse_launch_line(text)
    # a pasted line: the shell that would run it expands `~`
    argv = expand_config(line.argv, base_dir, schema, expand_user=True)
    values = parse_values(argv, schema, source)
    return profile_from_values(
        values,
        name=name,
        env=line.env,
        entry=line.entry,
        python=line.python,
        source=source,
        schema=schema,
        warnings=[],
    )


def looks_like_launch(text: str) -> bool:
    """Whether `text` runs sglang (comment lines, such as a YAML's `# launch:`, do not count)."""
    code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    return bool(
        re.search(r"sglang\.launch_server|sglang/launch_server\.py|\bsglang\s+serve\b", code)
    )


def import_text(
    text: str,
    *,
    name: str | None = None,
    schema: FlagSchema | None = None,
    source: str = "the input",
    yaml_hint: bool | None = None,
    base_dir: Path | None = None,
) -> Imported:
    """A launch line, a script or sglang YAML: whichever `text` is.

    `yaml_hint` True/False forces the kind (a .yaml file name); None guesses.
    """
    is_yaml = yaml_hint if yaml_hint is not None else not looks_like_launch(text)
    if is_yaml:
        return profile_from_yaml(text, name=name, schema=schema, source=source)
    return profile_from_command(text, name=name, schema=schema, source=source, base_dir=base_dir)
