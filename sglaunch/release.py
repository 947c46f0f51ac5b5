"""Which sglang release a verdict is for, where that came from, and what holds outside the range.

UI-free: `sglaunch check`, `--apply` and the TUI ask here and show what it says.

The active release is the installed sglang's when one is found (`installed`),
else the one the user names (`--sglang-version`, a profile's field: `named`),
else the newest supported (`default`). The built-in rules follow it
(`CheckInput.sglang_version`); outside the supported range one plain line says
what still applies.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sglaunch.errors import UserError
from sglaunch.flags.schema import FlagSchema, bundled_schema
from sglaunch.in_sglang.sglang_import import sglang_version
from sglaunch.oracle.interpreter import find_sglang_python, probe_sglang_version
from sglaunch.oracle.schema_cache import load_flag_schema
from sglaunch.release_range import SUPPORTED_RANGE, oracle_refusal, out_of_range_line
from sglaunch.validators.release_spans import (
    NEWEST,
    OLDEST,
    SUPPORTED,
    is_supported,
    key,
    semantics,
)

__all__ = [
    "NEWEST",
    "OLDEST",
    "SUPPORTED",
    "SUPPORTED_RANGE",
    "ActiveVersion",
    "FlagFacts",
    "VersionSource",
    "choose",
    "find_installed",
    "load_flag_facts",
    "oracle_refusal",
    "out_of_range_line",
    "parse_named",
    "rules_version",
]


class VersionSource(StrEnum):
    INSTALLED = "installed"  # the sglang interpreter sglaunch found reported it
    NAMED = "named"  # --sglang-version, or the profile's sglang_version
    DEFAULT = "default"  # neither: the newest supported release


@dataclass(frozen=True)
class ActiveVersion:
    """The sglang release a verdict is for."""

    version: str
    source: VersionSource
    installed: str | None = None  # the installed sglang's version, when one was found
    named: str | None = None  # what the user named, even when the installed one won
    python: str | None = None  # the interpreter that reported `installed`
    why_not_installed: str = ""  # one line: why no installed version (no sglang found, ...)

    @property
    def rules_version(self) -> str:
        """The supported release whose built-in rules run for this verdict."""
        return rules_version(self.version)

    @property
    def supported(self) -> bool:
        return is_supported(self.version)

    @property
    def out_of_range(self) -> str | None:
        """The one plain line for a release outside the range, else None."""
        return out_of_range_line(self.version)

    @property
    def named_ignored(self) -> bool:
        """The user named a release, but the installed sglang is another one (it wins)."""
        return bool(self.named and self.installed and key(self.named) != key(self.installed))

    def label(self) -> str:
        """'sglang 0.5.21 (installed)': what every output names its verdict for."""
        return f"sglang {self.version} ({self.source})"

    def notes(self) -> list[str]:
        """Plain lines to show under the header: out of range, a named release overruled."""
        out = []
        if self.out_of_range:
            out.append(self.out_of_range)
        if self.named_ignored:
            out.append(
                f"sglang {self.named} was named, but sglang {self.installed} is installed "
                f"({self.python}): checking for the installed one"
            )
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "sglang_version": self.installed,
            "rules_version": self.rules_version,
            "checked_for": self.version,
            "version_source": str(self.source),
            "supported_range": SUPPORTED_RANGE,
            "out_of_range": self.out_of_range,
        }


def rules_version(version: str | None) -> str:
    return semantics(version)


def parse_named(text: str | None, *, what: str = "--sglang-version") -> str | None:
    """A release the user names: one of the supported ones (UserError otherwise)."""
    if text is None or not str(text).strip():
        return None
    given = str(text).strip()
    if given.lstrip("vV") in SUPPORTED:
        return given.lstrip("vV")
    raise UserError(
        f"{what} {given}: sglaunch has rules for sglang {SUPPORTED_RANGE}; name one of "
        f"{', '.join(SUPPORTED)} (an installed sglang's own version is used whatever is named)"
    )


def choose(
    installed: str | None,
    named: str | None = None,
    *,
    python: str | None = None,
    why_not_installed: str = "",
) -> ActiveVersion:
    """The active release: installed, else named, else the newest supported."""
    if installed:
        return ActiveVersion(installed, VersionSource.INSTALLED, installed, named, python)
    if named:
        return ActiveVersion(
            named, VersionSource.NAMED, None, named, python, why_not_installed=why_not_installed
        )
    return ActiveVersion(
        NEWEST, VersionSource.DEFAULT, None, None, python, why_not_installed=why_not_installed
    )


def find_installed(python: str | None = None) -> tuple[str | None, str | None, str]:
    """(the installed sglang's version, its interpreter, why none) without importing sglang."""
    found = find_sglang_python(python)
    if found.path is None:
        return None, None, found.reason
    if found.source == "current":
        version = sglang_version()
        return (version, found.path, "") if version else (None, found.path, "sglang not found")
    version, why = probe_sglang_version(found.path)
    return version, found.path, why


@dataclass(frozen=True)
class FlagFacts:
    """The flag schema a check parses with, and the release its verdict is for."""

    schema: FlagSchema
    active: ActiveVersion
    # where the schema came from, one line ("read from sglang 0.5.21 (cached)", ...)
    schema_note: str
    # reading the installed sglang's flags failed and a bundled schema stands in
    schema_failed: bool = False

    def lines(self) -> list[str]:
        """What a header shows under its first line: the out-of-range line, a named
        release overruled, a schema read that failed."""
        out = self.active.notes()
        if self.schema_failed:
            out.append(self.schema_note)
        return out

    def summary(self) -> str:
        """'sglang 0.5.21 (installed) · 512 flags': a flag panel's title."""
        return f"{self.active.label()} · {len(self.schema)} flags"

    def to_json(self) -> dict[str, Any]:
        return {
            **self.active.to_json(),
            "flag_schema": {
                "sglang_version": self.schema.sglang_version,
                "source": self.schema_note,
                "failed": self.schema_failed,
                "flags": len(self.schema),
            },
        }


def load_flag_facts(
    python: str | None = None,
    named: str | None = None,
    *,
    read_installed: bool = True,
    known: str | None = None,
) -> FlagFacts:
    """The schema and the active release for a check.

    `read_installed`: read the installed sglang's own flags (cached per
    interpreter and version; seconds the first time). Without it (--no-oracle)
    only its version is asked, and the bundled schema of that release is used.
    `known`: the installed version, when a warm oracle service already said it.
    """
    if read_installed:
        lookup = load_flag_schema(python, version=known)
        if lookup.version is not None:
            active = choose(lookup.version, named, python=lookup.python)
            if lookup.failed:
                return FlagFacts(lookup.schema, active, lookup.reason, schema_failed=True)
            word = "cached" if lookup.source == "cache" else "read just now"
            return FlagFacts(
                lookup.schema, active, f"flags read from sglang {lookup.version} ({word})"
            )
        installed, interpreter, why = None, lookup.python, lookup.reason
    elif known:
        # a warm oracle service said it: no interpreter to start
        installed, interpreter, why = known, find_sglang_python(python).path, ""
    else:
        installed, interpreter, why = find_installed(python)
    active = choose(installed, named, python=interpreter, why_not_installed=why)
    schema = bundled_schema(active.version)
    if installed and not is_supported(installed):
        note = (
            f"flags checked against the bundled sglang {schema.sglang_version} schema "
            f"(sglaunch bundles {SUPPORTED_RANGE}; --no-oracle reads no flags from sglang {installed})"
        )
    else:
        note = f"bundled flag facts of sglang {schema.sglang_version}"
    return FlagFacts(schema, active, note)
