"""Profiles to and from what sglang reads: its `--config` YAML, a launch command line, a script.

The YAML follows sglang 0.5.23's config merger (srt/utils/server_args_config_parser.py):
keys are CLI names without `--`, with dashes; `true` on a store_true flag adds it
and `false` omits it; lists become `--k v1 v2`; dicts become `--k '<json>'`.
The merger refuses `--x/--no-x` switches, deprecated switches (--enable-dp-attention)
and --lora-paths, and a config file holds neither environment variables nor
anything sglaunch will not write to a file (secrets), so an exported YAML starts
with a `# launch:` comment: the command line that runs it, carrying those.
Importing the YAML reads that line back.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sglaunch.errors import UserError
from sglaunch.flags.argv import format_value, parse_argv, suggest
from sglaunch.flags.launchline import LaunchLine, parse_launch_line
from sglaunch.flags.schema import FlagSchema, FlagSpec, bundled_schema
from sglaunch.profiles.profile import (
    JSON_TYPES,
    GpuSelection,
    Profile,
    check_flags,
    check_profile,
    flag_spec,
    json_text,
    name_from_model,
    validate_name,
)
from sglaunch.profiles.secrets import (
    ENV_NAME,
    MASK,
    default_secret_env,
    env_reference,
    is_secret_env_name,
    is_secret_flag,
    mask_text,
    resolve_secret_values,
    shell_reference,
)
from sglaunch.validators.facts import FlagIssueKind

CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
_DEFAULT_PYTHONS = ("python",)
_LAUNCH_COMMENT = re.compile(r"^#\s*launch:\s*(?P<line>.+?)\s*$", re.M)


@dataclass
class Imported:
    profile: Profile
    warnings: list[str] = field(default_factory=list)


@dataclass
class Exported:
    text: str
    warnings: list[str] = field(default_factory=list)


class _Raw(str):
    """A token that is already shell syntax (a "${VAR:?...}" reference): never quoted again."""


def _quote(token: str) -> str:
    return str(token) if isinstance(token, _Raw) else shlex.quote(token)


# --- flags to tokens ---------------------------------------------------------------


def flag_tokens(spec: FlagSpec, value: Any) -> list[str]:
    """One flag's command-line tokens, as sglang's parser reads them back."""
    if spec.action == "boolean_optional":
        if value is True:
            return [spec.options[0]]
        negative = next((o for o in spec.options if o.startswith("--no-")), None)
        return [negative] if value is False and negative else []
    if spec.is_bool or (spec.action == "store_const" and spec.type == "const"):
        return [spec.name] if value else []
    if value is None:
        return []
    if spec.type in JSON_TYPES:
        return [spec.name, json_text(value)]
    if spec.is_list:
        return [spec.name, *(format_value(v) for v in value)]
    return [spec.name, format_value(value)]


def _program(profile: Profile, python: str | None = None) -> list[str]:
    if profile.entry == "serve":
        exe = "sglang"
        if profile.sglang_python:
            exe = str(Path(profile.sglang_python).parent / "sglang")
        return [exe, "serve"]
    return [profile.sglang_python or python or "python", "-m", "sglang.launch_server"]


def _flags_argv(
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
        token = secrets[dest] if secrets is not None else _Raw(shell_reference(var))
        out += [schema.cli_name(dest), token]
    return out


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
    return _flags_argv(profile, schema, model=model_path or profile.model, secrets=secret_values)


def _env_items(profile: Profile) -> list[tuple[str, str]]:
    items: list[tuple[str, str]] = []
    if profile.gpus.cuda_visible_devices is not None:
        items.append((CUDA_VISIBLE_DEVICES, profile.gpus.cuda_visible_devices))
    items += [(k, v) for k, v in profile.env.items() if k != CUDA_VISIBLE_DEVICES]
    return items


# --- resolving for a launch --------------------------------------------------------


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
    program = _program(profile, python)
    argv = program + sglang_argv(
        profile, schema=schema, secret_values=values, model_path=model_path
    )
    display = program + sglang_argv(profile, schema=schema, model_path=model_path)
    return Launch(argv=argv, env=dict(_env_items(profile)), display=display)


# --- export ------------------------------------------------------------------------


def _command_tokens(profile: Profile, flags: list[str], python: str | None = None) -> list[str]:
    env = [_Raw(f"{k}={shlex.quote(v)}") for k, v in _env_items(profile)]
    return [*env, *_program(profile, python), *flags]


def _export_argv(profile: Profile, schema: FlagSchema) -> list[str]:
    check_profile(profile, schema)
    return _flags_argv(profile, schema, model=profile.model, secrets=None)


def to_command(
    profile: Profile, *, schema: FlagSchema | None = None, python: str | None = None
) -> str:
    """One shell line; secrets are `"${VAR:?set VAR}"`, read from the environment when run."""
    schema = schema or bundled_schema()
    tokens = _command_tokens(profile, _export_argv(profile, schema), python)
    return " ".join(_quote(t) for t in tokens)


def _group_flags(tokens: list[str]) -> list[list[str]]:
    """['--a', '1', '--b'] -> [['--a', '1'], ['--b']]: one flag per script line."""
    groups: list[list[str]] = []
    for tok in tokens:
        if (tok.startswith("--") and not isinstance(tok, _Raw)) or not groups:
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
    for k, v in _env_items(profile):
        lines.append(f"export {k}={shlex.quote(v)}")
    program = " ".join(shlex.quote(t) for t in _program(profile, python))
    groups = _group_flags(_export_argv(profile, schema))
    if not groups:
        lines.append(f"exec {program}")
    else:
        lines.append(f"exec {program} \\")
        for i, group in enumerate(groups):
            tail = " \\" if i < len(groups) - 1 else ""
            lines.append("  " + " ".join(_quote(t) for t in group) + tail)
    return "\n".join(lines) + "\n"


def to_yaml(
    profile: Profile,
    *,
    schema: FlagSchema | None = None,
    config_name: str | None = None,
    python: str | None = None,
) -> Exported:
    """sglang's `--config` YAML, headed by a `# launch:` comment that runs it.

    `config_name` is the file name the launch line uses (default NAME.yaml).
    """
    schema = schema or bundled_schema()
    check_profile(profile, schema)
    config_name = config_name or f"{profile.name}.yaml"
    data: dict[str, Any] = {}
    cli_only: list[str] = []
    if profile.model:
        data["model-path"] = profile.model
    flags, _ = check_flags(profile.flags, schema)
    for dest, value in flags.items():
        spec = flag_spec(schema, dest)
        if spec is None:
            continue
        key = spec.name[2:]
        if config_action_unsupported(spec):
            # the merger raises "Unsupported config option ..." for these
            cli_only += flag_tokens(spec, value)
        elif spec.is_bool:
            if value:
                data[key] = True
        elif spec.type in JSON_TYPES:
            data[key] = json_text(value)
        elif spec.is_list:
            if value:
                data[key] = list(value)
            else:
                cli_only.append(spec.name)  # the merger drops an empty list
        else:
            data[key] = value
    for dest, var in profile.secrets.items():
        cli_only += [schema.cli_name(dest), _Raw(shell_reference(var))]

    flags_on_line: list[str] = []
    if profile.entry == "serve" and profile.model:
        # `sglang serve` requires --model-path on the command line, not only in --config
        flags_on_line += ["--model-path", profile.model]
    flags_on_line += ["--config", config_name, *cli_only]
    launch = " ".join(_quote(t) for t in _command_tokens(profile, flags_on_line, python))
    header = [f"# sglang --config file exported by sglaunch from profile '{profile.name}'."]
    warnings: list[str] = []
    if cli_only or _env_items(profile):
        header.append(
            "# sglang's config holds no environment, secrets or --x/--no-x switches: they are on"
        )
        header.append("# the launch line below, which starts the server with this file.")
        carried = [t for t in cli_only if t.startswith("--")] + [k for k, _ in _env_items(profile)]
        warnings.append(
            f"sglang's --config cannot hold {', '.join(carried)}: "
            "start the server with the `# launch:` line at the top of the file"
        )
    else:
        header.append("# Start the server with:")
    header.append(f"# launch: {launch}")
    body = yaml.safe_dump(
        data, sort_keys=False, default_flow_style=False, allow_unicode=True, width=4096
    )
    return Exported(text="\n".join(header) + "\n" + (body if data else ""), warnings=warnings)


# --- import ------------------------------------------------------------------------


def _issue_text(issue: Any) -> str:
    text = issue.message
    if issue.suggestions and "did you mean" not in text and "could match" not in text:
        text += f" (did you mean {', '.join(issue.suggestions)}?)"
    return text


def _parse_values(argv: list[str], schema: FlagSchema, source: str) -> dict[str, Any]:
    parsed = parse_argv(argv, schema)
    if parsed.issues:
        secrets = [
            str(v)
            for d, v in parsed.values.items()
            if (s := flag_spec(schema, d)) is not None and is_secret_flag(s) and v
        ]
        # like argparse: every unrecognized token in one message
        unknown = [i for i in parsed.issues if i.kind is FlagIssueKind.UNKNOWN]
        texts = [_issue_text(i) for i in parsed.issues if i.kind is not FlagIssueKind.UNKNOWN]
        if unknown:
            text = "unrecognized arguments: " + " ".join(i.option for i in unknown)
            hints = next((i.suggestions for i in unknown if i.suggestions), ())
            texts.append(text + (f" (did you mean {', '.join(hints)}?)" if hints else ""))
        problems = "; ".join(texts)
        raise UserError(f"{source}: {mask_text(problems, secrets, schema)}")
    return parsed.values


def _split_config(argv: list[str]) -> tuple[list[str], str | None]:
    """argv without `--config FILE`, and FILE. Only that two-token form is merged by sglang."""
    if argv.count("--config") > 1:
        raise UserError("Multiple config files specified! Only one allowed.")
    if "--config" not in argv:
        return argv, None
    i = argv.index("--config")
    if i == len(argv) - 1:
        raise UserError("No config file specified after --config flag!")
    return argv[:i] + argv[i + 2 :], argv[i + 1]


def _profile_from_values(
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
        elif ENV_NAME.match(k):
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
        entry="serve" if entry == "serve" else "launch_server",
    )
    return Imported(profile=profile, warnings=warnings)


def profile_from_argv(
    argv: Sequence[str],
    *,
    name: str | None = None,
    env: Mapping[str, str] | None = None,
    entry: str = "launch_server",
    python: str | None = None,
    schema: FlagSchema | None = None,
    source: str = "the flags",
) -> Imported:
    """A profile from sglang flags (the part after `python -m sglang.launch_server`)."""
    schema = schema or bundled_schema()
    warnings: list[str] = []
    argv, config = _split_config(list(argv))
    pre: list[str] = []
    if config is not None:
        pre = _config_file_argv(Path(config), schema)
    values = _parse_values(pre + argv, schema, source)
    return _profile_from_values(
        values,
        name=name,
        env=env or {},
        entry=entry,
        python=python,
        source=source,
        schema=schema,
        warnings=warnings,
    )


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
    argv, config = _split_config(line.argv)
    pre: list[str] = []
    if config is not None:
        path = Path(config).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        pre = _config_file_argv(path, schema)
    values = _parse_values(pre + argv, schema, source)
    return _profile_from_values(
        values,
        name=name,
        env=line.env,
        entry=line.entry,
        python=line.python,
        source=source,
        schema=schema,
        warnings=[],
    )


def _yaml_mapping(text: str, source: str) -> dict[Any, Any]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        where = f" (at line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise UserError(f"{source} is not valid YAML: {problem}{where}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(
            f"{source}: Config file must contain a dictionary at root level "
            "(sglang reads `key: value` lines, e.g. `tp-size: 2`)"
        )
    return data


def _check_key(key: Any, schema: FlagSchema, source: str) -> FlagSpec:
    """The flag a config key names, as argparse would find `--KEY`; UserError otherwise."""
    if not isinstance(key, str) or not key:
        raise UserError(f"{source}: config key {key!r} is not a flag name")
    option = f"--{key}"
    if option in schema.by_option:
        return schema.by_option[option]
    dashed = "--" + key.replace("_", "-")
    if "_" in key and dashed in schema.by_option:
        raise UserError(
            f"{source}: key '{key}': sglang reads config keys with dashes, as on the command "
            f"line: write '{dashed[2:]}'"
        )
    matches = {opt: f for opt, f in schema.by_option.items() if opt.startswith(option)}
    if len({f.dest for f in matches.values()}) == 1 and schema.allow_abbrev:
        return next(iter(matches.values()))  # argparse takes an unambiguous abbreviation
    if matches:
        raise UserError(
            f"{source}: key '{key}' is ambiguous: it could be {', '.join(o[2:] for o in matches)}"
        )
    close = suggest(option, schema)
    hint = f" (did you mean {', '.join(repr(c[2:]) for c in close)}?)" if close else ""
    raise UserError(f"{source}: unknown key '{key}'{hint}")


# The actions sglang 0.5.23's merger refuses (ConfigArgumentMerger.unsupported_actions):
# --x/--no-x switches, deprecated switches, and one custom multi-value action.
# tests/profiles/test_sglang_config.py compares this with the real merger.
_CUSTOM_UNSUPPORTED = {"lora_paths": "LoRAPathAction"}


def config_action_unsupported(spec: FlagSpec) -> str | None:
    """The argparse action name when sglang's --config cannot hold this flag, else None."""
    if spec.action == "boolean_optional":
        return "BooleanOptionalAction"
    if spec.deprecated and spec.is_bool:
        return "DeprecatedStoreTrueAction"
    return _CUSTOM_UNSUPPORTED.get(spec.dest)


def config_to_argv(
    data: Mapping[Any, Any], schema: FlagSchema | None = None, source: str = "the config"
) -> list[str]:
    """sglang's merger, `_convert_config_to_args`, with its checks made one-line errors."""
    schema = schema or bundled_schema()
    store_true = {
        o[2:].replace("-", "_") for f in schema.flags if f.action == "store_true" for o in f.options
    } | {f.dest for f in schema.flags if f.action == "store_true"}
    args: list[str] = []
    for key, value in data.items():
        spec = _check_key(key, schema, source)
        key_norm = key.replace("-", "_")
        action = config_action_unsupported(spec)
        if action:
            spelled = " or ".join(spec.options) if spec.is_bool else f"{spec.name} ..."
            raise UserError(
                f"{source}: Unsupported config option '{key_norm}' with action '{action}' — "
                f"sglang's --config cannot hold it; pass {spelled} on the command line"
            )
        if isinstance(value, bool):
            if key_norm in store_true:
                if value:
                    args.append(f"--{key}")
            else:
                args += [f"--{key}", str(value).lower()]
        elif key_norm in store_true:
            raise UserError(f"{source}: key '{key}' is a switch: write true or false")
        elif isinstance(value, list):
            if value:
                args += [f"--{key}", *(str(item) for item in value)]
        elif isinstance(value, dict):
            args += [f"--{key}", json.dumps(value)]
        else:
            args += [f"--{key}", str(value)]
    return args


def _config_file_argv(path: Path, schema: FlagSchema) -> list[str]:
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise UserError(f"Config file must be YAML format, got: {path.suffix} ({path})")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"Config file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read config file {path}: {exc}") from None
    return config_to_argv(_yaml_mapping(text, str(path)), schema, str(path))


def profile_from_yaml(
    text: str,
    *,
    name: str | None = None,
    schema: FlagSchema | None = None,
    source: str = "the config",
) -> Imported:
    """A profile from sglang `--config` YAML, checked as sglang checks it.

    A `# launch:` comment (as `to_yaml` writes) adds its environment, entry point,
    interpreter and the flags after `--config FILE`, which win over the file's.
    """
    schema = schema or bundled_schema()
    argv = config_to_argv(_yaml_mapping(text, source), schema, source)
    line: LaunchLine | None = None
    m = _LAUNCH_COMMENT.search(text)
    if m:
        line = parse_launch_line(m.group("line"))
    extra: list[str] = []
    if line is not None:
        extra, _ = _split_config(line.argv)
    values = _parse_values(argv + extra, schema, source)
    return _profile_from_values(
        values,
        name=name,
        env=line.env if line else {},
        entry=line.entry if line else "launch_server",
        python=line.python if line else None,
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
