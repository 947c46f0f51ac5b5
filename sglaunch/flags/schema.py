"""The schema of sglang's server flags: names, aliases, types, defaults, choices.

The bundled schemas (`data/schema-VERSION.json` for each supported release, made by
`in_sglang/extract_flags.py --no-help` under that release: `make schema`; facts only) are used
when sglang is absent; the oracle
reads the installed sglang's schema, with help text, and caches it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from sglaunch import SGLANG_VERSION
from sglaunch.errors import UserError
from sglaunch.validators.release_spans import semantics

BOOL_ACTIONS = ("store_true", "store_false", "boolean_optional")


@dataclass(frozen=True)
class FlagSpec:
    dest: str
    options: tuple[str, ...]
    action: str = "store"
    type: str = "str"
    default: Any = None
    choices: tuple[Any, ...] | None = None
    nargs: str | int | None = None
    required: bool = False
    namespace: str = ""
    section: str = ""
    deprecated: bool = False
    help: str = ""
    const: Any = None
    new_flag: str | None = None

    @property
    def name(self) -> str:
        """The primary CLI spelling, e.g. --tp-size."""
        return self.options[0]

    @property
    def is_bool(self) -> bool:
        return self.action in BOOL_ACTIONS

    @property
    def takes_value(self) -> bool:
        return not self.is_bool and not (self.action == "store_const" and self.type == "const")

    @property
    def is_list(self) -> bool:
        return self.nargs in ("+", "*") or isinstance(self.nargs, int)

    def matches(self, words: Sequence[str]) -> bool:
        """True when every word appears, ignoring case, in the flag's spellings (name and
        aliases), dest, section, namespace or help: a search box's filter. No words: True."""
        hay = " ".join((*self.options, self.dest, self.section, self.namespace, self.help)).lower()
        return all(w.lower() in hay for w in words)

    @property
    def argparse_name(self) -> str:
        """How argparse names the argument in its errors: '--tp-size/--tensor-parallel-size'."""
        return "/".join(self.options)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> FlagSpec:
        choices = d.get("choices")
        # ~530 specs per schema, read before `check` can ask sglang anything: the instance's
        # fields are set in one step, where the frozen __init__ sets each through
        # object.__setattr__ (3x slower); the same fields, in the same order
        spec = object.__new__(cls)
        spec.__dict__.update(
            dest=d["dest"],
            options=tuple(d["options"]),
            action=d.get("action", "store"),
            type=d.get("type", "str"),
            default=d.get("default"),
            choices=tuple(choices) if choices is not None else None,
            nargs=d.get("nargs"),
            required=bool(d.get("required", False)),
            namespace=d.get("namespace", ""),
            section=d.get("section", ""),
            deprecated=bool(d.get("deprecated", False)),
            help=d.get("help") or "",
            const=d.get("const"),
            new_flag=d.get("new_flag"),
        )
        return spec


@dataclass
class FlagSchema:
    flags: list[FlagSpec]
    sglang_version: str
    prog: str = "sglang serve"
    allow_abbrev: bool = True
    help_included: bool = False
    origin: str = "bundled"
    by_dest: dict[str, FlagSpec] = field(init=False)
    by_option: dict[str, FlagSpec] = field(init=False)
    _cli_names: Mapping[str, str] | None = field(init=False, default=None, repr=False)
    _defaults: Mapping[str, Any] | None = field(init=False, default=None, repr=False)

    def __post_init__(self) -> None:
        # Two actions can share a dest (a retired spelling kept for old launch
        # lines, e.g. --monokernel-backend): the dest maps to the current one.
        self.by_dest = {}
        for f in self.flags:
            if f.dest not in self.by_dest or self.by_dest[f.dest].deprecated:
                self.by_dest[f.dest] = f
        self.by_option = {opt: f for f in self.flags for opt in f.options}

    def primary_flags(self) -> list[FlagSpec]:
        """One spec per dest, in sglang's order: what an editor lists."""
        return [f for f in self.flags if self.by_dest.get(f.dest) is f]

    def __len__(self) -> int:
        return len(self.flags)

    def get(self, dest: str) -> FlagSpec | None:
        return self.by_dest.get(dest)

    def cli_name(self, dest: str) -> str:
        spec = self.by_dest.get(dest)
        return spec.name if spec else "--" + dest.replace("_", "-")

    def cli_names(self) -> Mapping[str, str]:
        # built once: every re-validation reads it
        if self._cli_names is None:
            # by_dest, not self.flags: a retired spelling sharing the dest must not win
            self._cli_names = MappingProxyType({d: f.name for d, f in self.by_dest.items()})
        return self._cli_names

    def defaults(self) -> Mapping[str, Any]:
        if self._defaults is None:
            self._defaults = MappingProxyType({d: f.default for d, f in self.by_dest.items()})
        return self._defaults

    def all_options(self) -> list[str]:
        return list(self.by_option)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], origin: str = "bundled") -> FlagSchema:
        try:
            flags = [FlagSpec.from_json(d) for d in data["flags"]]
            return cls(
                flags=flags,
                sglang_version=str(data.get("sglang_version") or ""),
                prog=data.get("prog", "sglang serve"),
                allow_abbrev=bool(data.get("allow_abbrev", True)),
                help_included=bool(data.get("help_included", False)),
                origin=origin,
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise UserError(
                f"flag schema from {origin} is malformed ({exc}); delete it and retry"
            ) from exc


# the bundled schemas sit beside this module in the installed package (a plain folder: no
# importlib.resources, whose import alone costs `sglaunch check` ~3 ms of its start-up)
_DATA = Path(__file__).parent / "data"


def bundled_schema(version: str | None = None) -> FlagSchema:
    """The facts-only schema shipped for a supported release (default: the newest).

    Any other version gets the nearest supported release's schema; the caller
    says so (`sglaunch.release`). One object per release, however it is named
    (None, "0.5.23", "0.5.23.post1"): a check reads it more than once."""
    return _bundled(semantics(version or SGLANG_VERSION))


@cache
def _bundled(release: str) -> FlagSchema:
    text = (_DATA / f"schema-{release}.json").read_text(encoding="utf-8")
    return FlagSchema.from_json(json.loads(text), origin="bundled")
