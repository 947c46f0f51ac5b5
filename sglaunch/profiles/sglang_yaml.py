"""A profile as sglang's own `--config` YAML, and back, checked as sglang checks it.

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
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from sglaunch.errors import UserError
from sglaunch.flags.argv import flag_tokens, suggest
from sglaunch.flags.launchline import LaunchLine, parse_launch_line
from sglaunch.flags.prefix import options_with_prefix
from sglaunch.flags.schema import FlagSchema, FlagSpec, bundled_schema
from sglaunch.profiles.argvform import (
    Exported,
    Imported,
    Raw,
    command_tokens,
    env_items,
    exported_model,
    parse_values,
    profile_from_values,
    quote,
    split_config,
)
from sglaunch.profiles.profile import (
    JSON_TYPES,
    Profile,
    check_flags,
    check_profile,
    flag_spec,
    json_text,
)
from sglaunch.safeio import MAX_TEXT_BYTES, InputError, has_control, parse_yaml, read_text, shown
from sglaunch.secrets import (
    shell_reference,
)

_LAUNCH_COMMENT = re.compile(r"^#\s*launch:\s*(?P<line>.+?)\s*$", re.M)


def _yaml_mapping(text: str, source: str) -> dict[Any, Any]:
    """The YAML's top-level mapping, parsed with safeio's limits (depth, aliases, numbers)."""
    data = parse_yaml(text, label=source)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(
            f"{source}: Config file must contain a dictionary at root level "
            "(sglang reads `key: value` lines, e.g. `tp-size: 2`)"
        )
    return data


def _names_a_flag(key: Any, schema: FlagSchema) -> bool:
    """Whether `key` is a flag name sglang's merger would accept, or a typo of one."""
    if not isinstance(key, str) or not key or has_control(key) or len(key) > 100:
        return False
    option = "--" + key.replace("_", "-")
    return (
        option in schema.by_option
        or bool(options_with_prefix(schema, option))
        or bool(suggest(option, schema, n=1))
    )


def _check_key(key: Any, schema: FlagSchema, source: str) -> FlagSpec:
    """The flag a config key names, as argparse would find `--KEY`; UserError otherwise."""
    if not isinstance(key, str) or not key or has_control(key) or len(key) > 100:
        raise UserError(f"{source}: config key {shown(repr(key), 60)} is not a flag name")
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


def is_sglang_config(text: str, schema: FlagSchema | None = None) -> bool:
    """Whether `text` is YAML whose top level maps at least one sglang flag (or a typo of one)."""
    schema = schema or bundled_schema()
    try:
        data = parse_yaml(text, label="the input")
    except InputError:
        return False
    return isinstance(data, dict) and any(_names_a_flag(k, schema) for k in data)


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
    if data and not any(_names_a_flag(k, schema) for k in data):
        # not a config at all (someone's /etc/passwd): say so, and quote none of it
        raise UserError(
            f"{source} is not an sglang --config file: none of its keys is an sglang flag "
            "(a config holds lines like `tp-size: 2`)"
        )
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


def config_file_argv(path: Path, schema: FlagSchema) -> list[str]:
    """The flags a `--config` file adds, as sglang reads the file; UserError if it cannot."""
    if path.suffix.lower() not in (".yaml", ".yml"):
        raise UserError(
            f"Config file must be YAML format, got: {shown(path.suffix, 40)} ({shown(path)})"
        )
    label = shown(path)
    try:
        text = read_text(path, limit=MAX_TEXT_BYTES, label=f"config file {label}", noun="a config")
    except InputError as exc:
        if exc.message.endswith("does not exist"):
            raise UserError(f"Config file not found: {label}") from None  # sglang's words
        raise
    return config_to_argv(_yaml_mapping(text, label), schema, label)


def expand_config(
    argv: Sequence[str],
    base_dir: Path | None = None,
    schema: FlagSchema | None = None,
    *,
    expand_user: bool = False,
) -> list[str]:
    """sglang flags with a `--config FILE` replaced by the file's flags, as sglang merges them.

    The file's flags come first, so the command line wins (ConfigArgumentMerger.
    merge_config_with_args). A relative FILE is found under `base_dir` (default: the
    current folder), where the server runs. `expand_user` reads `~` as a shell would
    for a pasted line; sglang itself never expands it. A missing, unreadable or bad
    file, or a key sglang's merger refuses, is a one-line UserError.
    """
    rest, config = split_config(list(argv))
    if config is None:
        return rest
    path = Path(config).expanduser() if expand_user else Path(config)
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    return config_file_argv(path, schema or bundled_schema()) + rest


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
        data["model-path"] = exported_model(profile.model)
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
        cli_only += [schema.cli_name(dest), Raw(shell_reference(var))]

    flags_on_line: list[str] = []
    model = exported_model(profile.model)
    if profile.entry == "serve" and model:
        # `sglang serve` requires --model-path on the command line, not only in --config
        flags_on_line += ["--model-path", model]
    flags_on_line += ["--config", config_name, *cli_only]
    launch = " ".join(quote(t) for t in command_tokens(profile, flags_on_line, python))
    header = [f"# sglang --config file exported by sglaunch from profile '{profile.name}'."]
    warnings: list[str] = []
    if cli_only or env_items(profile):
        header.append(
            "# sglang's config holds no environment, secrets or --x/--no-x switches: they are on"
        )
        header.append("# the launch line below, which starts the server with this file.")
        carried = [t for t in cli_only if t.startswith("--")] + [k for k, _ in env_items(profile)]
        warnings.append(
            f"sglang's --config cannot hold {', '.join(carried)}: "
            "start the server with the `# launch:` line at the top of the file"
        )
    else:
        header.append("# Start the server with:")
    if has_control(launch):
        # a line break would end the comment and start YAML keys of its own
        raise UserError(
            f"profile '{profile.name}': the launch line holds a control character; "
            "fix the profile's [env] and [gpus] values"
        )
    header.append(f"# launch: {launch}")
    body = yaml.safe_dump(
        data, sort_keys=False, default_flow_style=False, allow_unicode=True, width=4096
    )
    return Exported(text="\n".join(header) + "\n" + (body if data else ""), warnings=warnings)


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
        extra, _ = split_config(line.argv)
    values = parse_values(argv + extra, schema, source)
    return profile_from_values(
        values,
        name=name,
        env=line.env if line else {},
        entry=line.entry if line else "launch_server",
        python=line.python if line else None,
        source=source,
        schema=schema,
        warnings=[],
    )
