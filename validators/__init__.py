"""The rule engine: pure functions from (flags, model facts, GPU facts, environment) to findings.

Standard library only — no sglang, torch, transformers or textual — so it runs
anywhere in well under a millisecond.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sglaunch.validators.cards import Card
    from sglaunch.validators.engine import Report, validate
    from sglaunch.validators.facts import (
        CheckInput,
        FlagIssue,
        FlagIssueKind,
        GpuDevice,
        GpuFacts,
        GpuMode,
        GpuProcess,
        ModelFacts,
    )
    from sglaunch.validators.findings import Finding, Fix, Override, Severity
    from sglaunch.validators.registry import (
        all_cards,
        all_rules,
        generic_card,
        get_card,
        get_rule,
        match_card,
    )
    from sglaunch.validators.rule import Rule

# name -> the module that defines it. Resolved on first use (PEP 562): importing one
# submodule (`sglaunch.validators.facts`) must not load every rule module with it, which
# `sglaunch check` pays before it can send sglang's question
_HOMES = {
    "Card": "cards",
    "Report": "engine",
    "validate": "engine",
    **dict.fromkeys(
        (
            "CheckInput",
            "FlagIssue",
            "FlagIssueKind",
            "GpuDevice",
            "GpuFacts",
            "GpuMode",
            "GpuProcess",
            "ModelFacts",
        ),
        "facts",
    ),
    **dict.fromkeys(("Finding", "Fix", "Override", "Severity"), "findings"),
    **dict.fromkeys(
        ("all_cards", "all_rules", "generic_card", "get_card", "get_rule", "match_card"),
        "registry",
    ),
    "Rule": "rule",
}

__all__ = [
    "Card",
    "CheckInput",
    "Finding",
    "Fix",
    "FlagIssue",
    "FlagIssueKind",
    "GpuDevice",
    "GpuFacts",
    "GpuMode",
    "GpuProcess",
    "ModelFacts",
    "Override",
    "Report",
    "Rule",
    "Severity",
    "all_cards",
    "all_rules",
    "generic_card",
    "get_card",
    "get_rule",
    "match_card",
    "validate",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
