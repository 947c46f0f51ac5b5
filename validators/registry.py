"""The explicit list of rule and card modules, and the look-ups that need every one loaded.

Like ruff's and pylint's registries: importing a module registers its rules
(`@rule`, `rule.py`) and cards (`card(...)`, `cards/__init__.py`); a module not
listed here does not run, and the order of `MODULES` is the order rules run in.
Rule and card modules import only those definitions, never this module.
"""

from __future__ import annotations

from dataclasses import replace

from sglaunch.validators.cards import CARDS, Card
from sglaunch.validators.cards import oracle as oracle_cards
from sglaunch.validators.cards import runtime as runtime_cards
from sglaunch.validators.rule import RULES, Rule
from sglaunch.validators.rules.general import (
    backends,
    flags,
    json_flags,
    memory,
    memory_plan,
    model_config,
    multinode,
    parallel,
    serving,
)
from sglaunch.validators.rules.host import cards as host_cards
from sglaunch.validators.rules.models import minicpm, minicpmv

MODULES = (
    flags,
    json_flags,
    model_config,
    parallel,
    multinode,
    memory,
    memory_plan,
    backends,
    serving,
    minicpm,
    minicpmv,
    runtime_cards,
    oracle_cards,
    host_cards,
)

_ORDERED: list[Rule] = []


def all_rules() -> list[Rule]:
    """Every rule, in the registry's module order (a later rule's override wins)."""
    if len(_ORDERED) != len(RULES):
        rank = {m.__name__: i for i, m in enumerate(MODULES)}
        _ORDERED[:] = sorted(RULES.values(), key=lambda r: rank.get(r.func.__module__, len(rank)))
    return list(_ORDERED)


def get_rule(code: str) -> Rule | None:
    return RULES.get(code)


def get_card(code: str) -> Card | None:
    return CARDS.get(code)


def all_cards() -> list[Card]:
    return list(CARDS.values())


def match_card(text: str) -> Card | None:
    """The card whose pattern matches this message, or None.

    A rule's card is more specific than a runtime one (an unknown flag beats "sglang's
    parser failed"), so rule cards are tried first; the runtime's own order comes next.
    """
    for c in sorted(CARDS.values(), key=lambda c: c.stage == "runtime"):
        if c.matches(text):
            return c
    return None


def generic_card(message: str, source: str = "") -> Card:
    """A card for an error nothing in the catalogue explains: sglang's words and where."""
    where = f" It was raised at {source}." if source else ""
    base = get_card("sglang-error")
    assert base is not None  # registered by oracle_cards
    return replace(base, what=f"sglang raised: {message}{where}")


def card_for(code: str, message: str, source: str = "") -> Card:
    """The card to show for a finding: its code's, else its message's, else one quoting it.

    sglang's own errors share one code, so for them the message decides: a known message
    gets its specific card, an unknown one a card that quotes it and where it was raised.
    """
    by_code = get_card(code) if code != "sglang-error" else None
    return by_code or match_card(message) or generic_card(message, source)
