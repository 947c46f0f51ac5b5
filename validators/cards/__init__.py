"""Explanation cards: what a finding means, when it happens, and how to fix it.

Every rule code has a card; so does every runtime failure sglaunch recognises.
Cards can also be found from an error message (`match_card`), which is how
sglang's own exceptions and log lines get the same explanation as the rules.

This module declares cards (`Card`, `card(...)`); the modules beside it and the rule
modules call `card(...)`, and `registry` looks them up (`get_card`, `all_cards`,
`match_card`, `card_for`) once every one of them is imported.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Card:
    code: str
    title: str
    what: str
    when: str
    solutions: tuple[str, ...]
    example_before: str = ""
    example_after: str = ""
    related: tuple[str, ...] = ()
    # Regexes (searched, case-sensitive) that identify this card in an error
    # message or log line; the first card whose pattern matches wins.
    patterns: tuple[str, ...] = ()
    ref: str = ""
    # "resolution" (sglang rejects it while resolving arguments), "parse"
    # (argparse), "config" (loading the HF config), "launch" (fails after
    # resolution, while starting) or "runtime" (the server's own failures).
    stage: str = "resolution"
    # the source lines around the check, numbered (the catalogue's cards have them)
    source: tuple[str, ...] = ()
    _compiled: tuple[re.Pattern[str], ...] = field(default=(), repr=False, compare=False)

    def matches(self, text: str) -> bool:
        return any(p.search(text) for p in self._compiled)

    def to_json(self) -> dict[str, object]:
        return {
            "code": self.code,
            "title": self.title,
            "what": self.what,
            "when": self.when,
            "solutions": list(self.solutions),
            "example": {"before": self.example_before, "after": self.example_after},
            "related": list(self.related),
            "ref": self.ref,
            "stage": self.stage,
            **({"source": list(self.source)} if self.source else {}),
        }


# Every card registered so far, by code, in the order registered. Read it through
# `registry`, which imports every card module first.
CARDS: dict[str, Card] = {}


def card(
    code: str,
    title: str,
    *,
    what: str,
    when: str,
    solutions: Iterable[str],
    before: str = "",
    after: str = "",
    related: Iterable[str] = (),
    patterns: Iterable[str] = (),
    ref: str = "",
    stage: str = "resolution",
) -> Card:
    """Declare and register a card. Codes are unique; a duplicate is a programming error."""
    pats = tuple(patterns)
    c = Card(
        code=code,
        title=title,
        what=what,
        when=when,
        solutions=tuple(solutions),
        example_before=before,
        example_after=after,
        related=tuple(related),
        patterns=pats,
        ref=ref,
        stage=stage,
        _compiled=tuple(re.compile(p) for p in pats),
    )
    if code in CARDS:
        raise ValueError(f"duplicate card code {code!r}")
    CARDS[code] = c
    return c
