"""Findings from the oracle's answer: sglang's own error, and what it will change silently."""

from __future__ import annotations

import json
import re
from typing import Any

from sglaunch.catalogue import _cli_names, find_site
from sglaunch.oracle.answer import OracleAnswer
from sglaunch.validators.cards.sites import trigger_words
from sglaunch.validators.findings import Finding, Override, Severity
from sglaunch.validators.registry import match_card

ERROR_CODE = "sglang-error"
OVERRIDE_CODE = "sglang-override"
FAULT_CODE = "oracle-fault"

# Fields whose change says nothing about the launch line, left out of the
# override findings (they stay in `answer.changed`):
#   random_seed                     drawn at random for every launch
#   tokenizer_path, served_model_name   echo --model-path when unset
#   device                          echoes the platform ("cuda" on any NVIDIA GPU)
# plus two families, by rule:
#   *port                           a free port picked at launch time on this machine
#   _private                        sglang's bookkeeping, not flags
#                                   (_swa_full_tokens_ratio_explicitly_set, ...)
# and one shape of change: an unset (None) field becoming False, [] or {}
# ("stays off"), which is how sglang materialises a disabled feature.
IGNORED_FIELDS = frozenset({"random_seed", "tokenizer_path", "served_model_name", "device"})
_PORT = re.compile(r"(^|_)port$")


def is_noise(field: str, asked: Any, value: Any) -> bool:
    """True for a change that `IGNORED_FIELDS` and the rules above leave out."""
    if field in IGNORED_FIELDS or field.startswith("_") or _PORT.search(field):
        return True
    return asked is None and value in (False, [], {})


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "None"
    if isinstance(value, dict | list):
        text = json.dumps(value, separators=(",", ":"))
        return text if len(text) <= 80 else text[:79] + "…"
    return str(value)


def _error_finding(answer: OracleAnswer) -> Finding:
    err = answer.error
    assert err is not None
    source = f"sglang:{err.where}" if err.where else "sglang"
    card = match_card(err.message)
    message = err.message or f"sglang raised {err.type}"
    if card is None and err.type not in ("ValueError", "SystemExit", "AssertionError"):
        # the exception's type is part of sglang's verdict when it is unusual
        message = f"{err.type}: {message}"
    raised = f"sglang raised {err.type}" + (f" at {err.where}" if err.where else "") + "."
    if card is None and err.message:
        site_finding = _site_finding(answer, message, source, raised)
        if site_finding is not None:
            return site_finding
    return Finding(
        code=card.code if card is not None else ERROR_CODE,
        severity=Severity.ERROR,
        message=message,
        source=source,
        ref=err.where,
        # the traceback stays in the answer (check --json); one line here
        detail=raised,
    )


def _site_finding(answer: OracleAnswer, message: str, source: str, raised: str) -> Finding | None:
    """The error as its catalogue site (sglaunch.catalogue): its code, the flags its
    conditions read (jump targets) and the condition in words. Fixes come later, once sglang
    accepted each (`sglaunch.catalogue.vetting`)."""
    err = answer.error
    assert err is not None
    site = find_site(err.message, err.where, answer.sglang_version)
    if site is None:
        return None
    trigger = trigger_words(site, _cli_names(answer.sglang_version))
    when = f" It fires when {trigger}." if trigger else ""
    return Finding(
        code=site.code,
        severity=Severity.ERROR,
        message=message,
        flags=site.flags,
        source=source,
        ref=err.where,
        detail=raised + when,
    )


def _override_finding(field: str, asked: Any, value: Any, explicit: bool) -> Finding:
    asked_text = f"you asked for {_fmt(asked)}" if explicit else "you left it unset"
    return Finding(
        code=OVERRIDE_CODE,
        severity=Severity.OVERRIDE,
        message=f"sglang will set {field}={_fmt(value)} ({asked_text})",
        flags=(field,),
        source="sglang",
        override=Override(field=field, asked=asked, value=value),
    )


def oracle_findings(answer: OracleAnswer) -> list[Finding]:
    """sglang's error (with its catalogue card's code when one matches) and its overrides.

    An answer without a verdict (a fault) becomes one warning, so that a
    check never passes silently on the built-in rules alone.
    """
    if answer.fault:
        return [
            Finding(
                code=FAULT_CODE,
                severity=Severity.WARNING,
                message=f"sglang's own check gave no verdict: {answer.fault}",
                source="sglang",
            )
        ]
    findings: list[Finding] = []
    if answer.error is not None:
        findings.append(_error_finding(answer))
    explicit = set(answer.explicit)
    for field, (asked, value) in meaningful_changes(answer).items():
        findings.append(_override_finding(field, asked, value, field in explicit))
    return findings


def meaningful_changes(
    answer: OracleAnswer, explicit: set[str] | None = None
) -> dict[str, tuple[Any, Any]]:
    """The fields sglang changes, without the noise `is_noise` names (unless asked for)."""
    explicit = set(answer.explicit) if explicit is None else explicit
    return {
        field: (asked, value)
        for field, (asked, value) in answer.changed.items()
        if field in explicit or not is_noise(field, asked, value)
    }
