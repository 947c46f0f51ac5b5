"""A profile as sglang command-line tokens, and sglang flags (parsed) back into a profile.

Shared by the command-line, script and YAML forms: how each flag is written so
sglang's parser reads it back, where secrets and the environment go, and how
parsed flags become a profile (secrets turned into references).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sglaunch.errors import UserError
from sglaunch.facts.model import model_path_for_launch, source_for_path
from sglaunch.flags.argv import flag_tokens, parse_argv
from sglaunch.flags.schema import FlagSchema
from sglaunch.profiles.profile import (
    GpuSelection,
    Profile,
    check_flags,
    check_nodes,
    flag_spec,
    name_from_model,
    validate_name,
)
from sglaunch.program import as_entry, program_argv
from sglaunch.secrets import (
    ENV_NAME,
    default_secret_env,
    env_reference,
    is_secret_env_name,
    is_secret_flag,
    mask_text,
    shell_reference,
)
from sglaunch.validators.facts import FlagIssue, FlagIssueKind

CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"

_DEFAULT_PYTHONS = ("python",)


@dataclass
class Imported:
    profile: Profile
    warnings: list[str] = field(default_factory=list)


@dataclass
class Exported:
    text: str
    warnings: list[str] = field(default_factory=list)


class Raw(str):
    """A token that is already shell syntax (a "${VAR:?...}" reference): never quoted again."""


def quote(token: str) -> str:
    return str(token) if isinstance(token, Raw) else shlex.quote(token)


def exported_model(model: str | None) -> str | None:
    """The model as a launch names it: a bundled example becomes the hub repo it mirrors (its
    folder holds a config and no weights: useless to sglang on a GPU box)."""
    if model is None:
        return None

    return model_path_for_launch(model)


def program(profile: Profile, python: str | None = None) -> list[str]:
    """The program part of the profile's launch: its own interpreter wins over `python`."""
    return program_argv(profile.entry, profile.sglang_python or python)


def flags_argv(
    profile: Profile,
    schema: FlagSchema,
    *,
    model: str | None,
    secrets: Mapping[str, str] | None,
) -> list[str]:
    """--model-path, the flags in the profile's order, then the secrets.

    `secrets` maps dest -> the token to write; None writes `"${VAR:?set VAR}"`.
    """
    out: list[str] = ["--model-path", model] if model else []
    flags, _ = check_flags(profile.flags, schema)
    for dest, value in flags.items():
        spec = flag_spec(schema, dest)
        if spec is not None:
            out += flag_tokens(spec, value)
    for dest, var in profile.secrets.items():
        token = secrets[dest] if secrets is not None else Raw(shell_reference(var))
        out += [schema.cli_name(dest), token]
    return out


def env_items(profile: Profile) -> list[tuple[str, str]]:
    items: list[tuple[str, str]] = []
    if profile.gpus.cuda_visible_devices is not None:
        items.append((CUDA_VISIBLE_DEVICES, profile.gpus.cuda_visible_devices))
    items += [(k, v) for k, v in profile.env.items() if k != CUDA_VISIBLE_DEVICES]
    return items


def command_tokens(profile: Profile, flags: list[str], python: str | None = None) -> list[str]:
    env = [Raw(f"{k}={shlex.quote(v)}") for k, v in env_items(profile)]
    return [*env, *program(profile, python), *flags]


def issue_text(issue: FlagIssue) -> str:
    text = issue.message
    if issue.suggestions and "did you mean" not in text and "could match" not in text:
        text += f" (did you mean {', '.join(issue.suggestions)}?)"
    return text


def parse_values(argv: list[str], schema: FlagSchema, source: str) -> dict[str, Any]:
    parsed = parse_argv(argv, schema)
    if parsed.issues:
        secrets = [
            str(v)
            for d, v in parsed.values.items()
            if (s := flag_spec(schema, d)) is not None and is_secret_flag(s) and v
        ]
        # like argparse: every unrecognized token in one message
        unknown = [i for i in parsed.issues if i.kind is FlagIssueKind.UNKNOWN]
        texts = [issue_text(i) for i in parsed.issues if i.kind is not FlagIssueKind.UNKNOWN]
        if unknown:
            text = "unrecognized arguments: " + " ".join(i.option for i in unknown)
            hints = next((i.suggestions for i in unknown if i.suggestions), ())
            texts.append(text + (f" (did you mean {', '.join(hints)}?)" if hints else ""))
        problems = "; ".join(texts)
        raise UserError(f"{source}: {mask_text(problems, secrets, schema)}")
    return parsed.values


def split_config(argv: list[str]) -> tuple[list[str], str | None]:
    """argv without `--config FILE`, and FILE. Only that two-token form is merged by sglang."""
    if argv.count("--config") > 1:
        raise UserError("Multiple config files specified! Only one allowed.")
    if "--config" not in argv:
        return argv, None
    i = argv.index("--config")
    if i == len(argv) - 1:
        raise UserError("No config file specified after --config flag!")
    return argv[:i] + argv[i + 2 :], argv[i + 1]


def _nodes_of(flags: Mapping[str, Any]) -> int:
    """An imported line's --nnodes becomes the profile's nodes (the truth its exports use)."""
    n = flags.get("nnodes")
    return n if isinstance(n, int) and not isinstance(n, bool) and not check_nodes(n) else 1


def profile_from_values(
    values: dict[str, Any],
    *,
    name: str | None,
    env: Mapping[str, str],
    entry: str,
    python: str | None,
    source: str,
    schema: FlagSchema,
    warnings: list[str],
) -> Imported:
    values = dict(values)
    model = values.pop("model_path", None)
    if isinstance(model, str):
        model = source_for_path(model)
    if values.pop("config", None) is not None:
        warnings.append(
            "sglang never reads a --config given as --config=FILE or inside a config file; dropped"
        )
    secrets: dict[str, str] = {}
    for dest in list(values):
        spec = flag_spec(schema, dest)
        if spec is None or not is_secret_flag(spec):
            continue
        raw = values.pop(dest)
        if raw is None:
            continue
        ref = env_reference(str(raw))
        if ref is None:
            ref = default_secret_env(dest)
            warnings.append(
                f"{spec.name}: the value was not stored (sglaunch never stores secrets); "
                f"the profile reads it from ${ref}: export {ref}=... before launching"
            )
        secrets[dest] = ref
    gpus = GpuSelection()
    kept_env: dict[str, str] = {}
    for k, v in env.items():
        if k == CUDA_VISIBLE_DEVICES:
            gpus.cuda_visible_devices = v
        elif is_secret_env_name(k) and not env_reference(v):
            warnings.append(
                f"{k} looks like a secret and was not stored: export it in the shell that "
                "starts sglaunch (the server inherits it)"
            )
        elif ENV_NAME.fullmatch(k):
            kept_env[k] = v
    flags, problems = check_flags(values, schema)
    if problems:
        raise UserError(f"{source}: {problems[0][1]}")
    if not model:
        raise UserError(f"{source}: no --model-path (sglang needs the model to serve)")
    profile = Profile(
        name=validate_name(name or name_from_model(str(model))),
        model=str(model),
        flags=flags,
        env=kept_env,
        secrets=secrets,
        gpus=gpus,
        sglang_python=python if python and python not in _DEFAULT_PYTHONS else None,
        entry=as_entry(entry),
        nodes=_nodes_of(flags),
    )
    return Imported(profile=profile, warnings=warnings)
