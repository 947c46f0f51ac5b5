"""The rule engine: pure functions from (flags, model facts, GPU facts, environment) to findings.

Standard library only — no sglang, torch, transformers or textual — so it runs
anywhere in well under a millisecond.
"""

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
