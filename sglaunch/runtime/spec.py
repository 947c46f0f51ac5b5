"""What to launch: the sglang flags, the interpreter, the environment, and the profile."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sglaunch.errors import UserError
from sglaunch.flags.argv import parse_argv
from sglaunch.flags.schema import FlagSchema, bundled_schema
from sglaunch.profiles.sglang_yaml import expand_config
from sglaunch.program import ENTRIES, program_argv
from sglaunch.runtime.probe import Endpoint

if TYPE_CHECKING:  # sglaunch.memory reads this package's log events: no import cycle
    from sglaunch.runtime.after_launch import Prediction

from sglaunch.secrets import Masker, is_secret_env_name, mask_argv, secret_values


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


def server_flags(
    argv: Sequence[str], schema: FlagSchema | None = None, base_dir: Path | None = None
) -> ServerFlags:
    """The flags in effect, a `--config FILE` merged as sglang merges it (UserError if bad)."""
    schema = schema or bundled_schema()
    # the server reads a --config file relative to its working directory
    values = parse_argv(expand_config(argv, base_dir, schema), schema).values
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
    # the memory plan to compare with what sglang logs at start-up (sglaunch.memory)
    prediction: Prediction | None = None

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
        return [*program_argv(self.entry, self.python), *self.argv]

    def environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ if base is None else base)
        env.update({str(k): str(v) for k, v in self.env.items()})
        # Python children block-buffer a pipe; sglang's logging flushes, print() does not.
        env.setdefault("PYTHONUNBUFFERED", "1")
        return env

    @cached_property
    def flags(self) -> ServerFlags:
        return server_flags(self.argv, base_dir=Path(self.cwd) if self.cwd else None)

    @cached_property
    def masker(self) -> Masker:
        """Masks the server's output: sglang prints its resolved args, secrets included."""
        values = secret_values(self.argv)
        values += [v for k, v in self.env.items() if is_secret_env_name(k)]
        return Masker(values)

    def masked_command(self) -> list[str]:
        return mask_argv(self.command())

    def with_argv(self, argv: Sequence[str]) -> LaunchSpec:
        return replace(self, argv=tuple(argv))
