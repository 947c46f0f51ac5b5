"""What a check produces: findings, their fixes, and the overrides sglang will make."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    OVERRIDE = "override"
    INFO = "info"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.OVERRIDE: 2, Severity.INFO: 3}

BUILTIN = "builtin"


@dataclass(frozen=True)
class Fix:
    """A change to the flags that makes a finding go away; flags are sglang dest names."""

    label: str
    set: Mapping[str, Any] = field(default_factory=dict)
    unset: tuple[str, ...] = ()

    def apply(self, flags: Mapping[str, Any]) -> dict[str, Any]:
        """Return a new flag mapping with this fix applied (the input is untouched)."""
        out = {k: v for k, v in flags.items() if k not in self.unset}
        out.update(self.set)
        return out

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "set": dict(self.set), "unset": list(self.unset)}


@dataclass(frozen=True)
class Override:
    """A value sglang will set silently: `asked` is what the user gave (None when unset)."""

    field: str
    asked: Any
    value: Any


@dataclass(frozen=True)
class Finding:
    code: str
    severity: Severity
    message: str
    flags: tuple[str, ...] = ()
    fixes: tuple[Fix, ...] = ()
    source: str = BUILTIN
    # Where sglang decides this: "srt/...py:LINE" for a resolution check, or a
    # short description of the launch-time failure it mirrors.
    ref: str = ""
    override: Override | None = None
    detail: str = ""

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "code": self.code,
            "severity": str(self.severity),
            "message": self.message,
            "flags": list(self.flags),
            "source": self.source,
            "fixes": [f.to_json() for f in self.fixes],
        }
        if self.ref:
            out["ref"] = self.ref
        if self.override is not None:
            out["override"] = {
                "field": self.override.field,
                "asked": self.override.asked,
                "value": self.override.value,
            }
        if self.detail:
            out["detail"] = self.detail
        return out


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Errors first, then warnings, overrides, info; stable within a severity."""
    return sorted(findings, key=lambda f: f.severity.rank)
