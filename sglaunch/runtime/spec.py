"""What to launch: the sglang flags, the interpreter, the environment, and the profile."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from sglaunch.errors import UserError
from sglaunch.exitcodes import ExitCode
from sglaunch.flags.argv import parse_argv
from sglaunch.flags.schema import FlagSchema, bundled_schema
from sglaunch.runtime.masking import Masker, mask_argv, secret_values
from sglaunch.runtime.probe import Endpoint

ENTRIES = ("launch_server", "serve")


@dataclass(frozen=True)
class ServerFlags:
    """The flags the monitor acts on, with sglang's defaults filled in."""

    values: Mapping[str, Any]  # dest -> value as given on the command line or in --config
    host: str
    port: int
    api_key: str | None
    enable_metrics: bool
    log_level: str
    skip_server_warmup: bool

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.host, self.port, self.api_key)


def _config_argv(path: str) -> list[str]:
    """sglang's --config merge (server_args_config_parser.py): keys are flag names."""
    try:
        import yaml

        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UserError(
            f"cannot read --config {path}: {exc.strerror or exc}", ExitCode.USAGE
        ) from exc
    except yaml.YAMLError as exc:
        raise UserError(f"--config {path} is not valid YAML: {exc}", ExitCode.USAGE) from exc
    if not isinstance(data, dict):
        raise UserError(
            f"--config {path} must hold a mapping of flag names to values", ExitCode.USAGE
        )
    out: list[str] = []
    for key, value in data.items():
        flag = f"--{key}"
        if value is True:
            out.append(flag)
        elif value is False or value is None:
            continue
        elif isinstance(value, list):
            out += [flag, *(str(v) for v in value)]
        elif isinstance(value, dict):
            out += [flag, json.dumps(value)]
        else:
            out += [flag, str(value)]
    return out


def server_flags(argv: Sequence[str], schema: FlagSchema | None = None) -> ServerFlags:
    schema = schema or bundled_schema()
    tokens = list(argv)
    if "--config" in tokens:
        i = tokens.index("--config")
        if i + 1 < len(tokens):
            # config values come first, so the command line wins, as in sglang
            tokens = _config_argv(tokens[i + 1]) + tokens
    values = parse_argv(tokens, schema).values
    defaults = schema.defaults()

    def get(dest: str, fallback: Any) -> Any:
        value = values.get(dest, defaults.get(dest))
        return fallback if value is None else value

    try:
        port = int(get("port", 30000))
    except (TypeError, ValueError):
        port = 30000
    return ServerFlags(
        values=values,
        host=str(get("host", "127.0.0.1")),
        port=port,
        api_key=values.get("api_key"),
        enable_metrics=bool(get("enable_metrics", False)),
        log_level=str(get("log_level", "info")),
        skip_server_warmup=bool(get("skip_server_warmup", False)),
    )


@dataclass(frozen=True)
class LaunchSpec:
    """A server launch. `argv` holds sglang's flags only; the program part comes from
    `python` and `entry`, or from `command_prefix`, which replaces it whole (tests launch
    `python tests/fake_sglang_server.py` with the very same flags)."""

    argv: tuple[str, ...]
    python: str = sys.executable
    entry: str = "launch_server"
    env: Mapping[str, str] = field(default_factory=dict)
    profile: str = "adhoc"
    resolved: Mapping[str, Any] | None = None
    command_prefix: tuple[str, ...] | None = None
    cwd: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "argv", tuple(str(a) for a in self.argv))
        if self.command_prefix is not None:
            object.__setattr__(self, "command_prefix", tuple(str(a) for a in self.command_prefix))
        if self.entry not in ENTRIES:
            raise UserError(
                f"unknown sglang entry point {self.entry!r} (choose launch_server or serve)"
            )

    def command(self) -> list[str]:
        if self.command_prefix:
            return [*self.command_prefix, *self.argv]
        if self.entry == "serve":
            # the console script installed beside the profile's interpreter
            script = Path(self.python).parent / "sglang"
            return [str(script) if script.exists() else "sglang", "serve", *self.argv]
        return [self.python, "-m", "sglang.launch_server", *self.argv]

    def environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ if base is None else base)
        env.update({str(k): str(v) for k, v in self.env.items()})
        # Python children block-buffer a pipe; sglang's logging flushes, print() does not.
        env.setdefault("PYTHONUNBUFFERED", "1")
        return env

    @cached_property
    def flags(self) -> ServerFlags:
        return server_flags(self.argv)

    @cached_property
    def masker(self) -> Masker:
        return Masker(secret_values(self.argv, bundled_schema()))

    def masked_command(self) -> list[str]:
        return mask_argv(self.command(), bundled_schema())

    def with_argv(self, argv: Sequence[str]) -> LaunchSpec:
        return replace(self, argv=tuple(argv))
