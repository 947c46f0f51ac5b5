"""Explanation cards: what a finding means, when it happens, and how to fix it.

Every rule code has a card; so does every runtime failure sglaunch recognises.
Cards can also be found from an error message (`match_card`), which is how
sglang's own exceptions and log lines get the same explanation as the rules.
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


_CARDS: dict[str, Card] = {}


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
    if code in _CARDS:
        raise ValueError(f"duplicate card code {code!r}")
    _CARDS[code] = c
    return c


def get_card(code: str) -> Card | None:
    _ensure_loaded()
    return _CARDS.get(code)


def all_cards() -> list[Card]:
    _ensure_loaded()
    return list(_CARDS.values())


def match_card(text: str) -> Card | None:
    """The card whose pattern matches this message, or None.

    A rule's card is more specific than a runtime one (an unknown flag beats "sglang's
    parser failed"), so rule cards are tried first; the runtime's own order comes next.
    """
    _ensure_loaded()
    for c in sorted(_CARDS.values(), key=lambda c: c.stage == "runtime"):
        if c.matches(text):
            return c
    return None


def generic_card(message: str, source: str = "") -> Card:
    """A card for an error nothing in the catalogue explains: sglang's words and where."""
    from dataclasses import replace

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


def _ensure_loaded() -> None:
    # Cards live beside the rules that produce them; importing the explicit
    # list registers them all.
    from sglaunch.validators import registry  # noqa: F401
