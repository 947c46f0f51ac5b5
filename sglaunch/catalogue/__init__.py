"""The catalogue of every error sglang's argument resolution can raise, per release.

`scripts/sglang_errors.py` (run by `make schema`) extracts the raise and assert sites from
each supported release's source into `data/errors.json.gz`; this module loads them, finds the
site of a message (the real text with its values filled in, or a fragment of it), and makes
its card (`sglaunch.validators.cards.sites`). The hand-written cards win where they exist.
"""

from __future__ import annotations

import difflib
import gzip
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from sglaunch.flags.schema import bundled_schema
from sglaunch.validators.cards import Card
from sglaunch.validators.cards.sites import Site, site_card
from sglaunch.validators.registry import card_for as builtin_card_for
from sglaunch.validators.registry import get_card, match_card
from sglaunch.validators.release_spans import NEWEST, SUPPORTED

__all__ = ["Catalogue", "Site", "card_for", "catalogue", "site_card_for"]

_WORD = re.compile(r"[a-z0-9_]+")
# "ValueError: ..." as pasted from a traceback's last line
_TYPE_PREFIX = re.compile(r"^\s*(?:[\w.]+\.)?(?:[A-Z]\w*(?:Error|Exception)|AssertionError):\s*")
RELATED_MAX = 8


def _pattern(segments: Sequence[str | None]) -> re.Pattern[str]:
    body = "".join(
        ".*?" if s is None else re.escape(s.strip() if i in (0, len(segments) - 1) else s)
        for i, s in enumerate(segments)
    )
    return re.compile(body, re.DOTALL)


# the shortest one-word fragment of a message that finds its sites ("moe_dp_size")
MIN_FRAGMENT = 8


@dataclass(frozen=True, eq=False)  # hashed by identity: one per process
class Catalogue:
    releases: tuple[str, ...]
    counts: dict[str, int]
    sites: tuple[Site, ...]

    @property
    def by_code(self) -> dict[str, Site]:
        return _by_code(self)

    def get(self, code: str) -> Site | None:
        return self.by_code.get(code)

    def in_release(self, version: str) -> list[Site]:
        return [s for s in self.sites if version in s.releases]

    def at(self, where: str, version: str | None = None) -> Site | None:
        """The site at `file:line` ("srt/arg_groups/x.py:18") in `version` (any when None)."""
        file, _, line = where.rpartition(":")
        if not line.isdigit():
            return None
        for s in self.sites:
            if s.file == file and (
                s.releases.get(version) == int(line)
                if version
                else int(line) in s.releases.values()
            ):
                return s
        return None

    def match(self, text: str, version: str | None = None) -> Site | None:
        """The site whose message this is: the full text first (values filled in), then a
        fragment (most of its words are the site's). `version` prefers that release's sites."""
        found = self.matches(text, version)
        return found[0] if found else None

    def matches(self, text: str, version: str | None = None) -> list[Site]:
        """`match`'s site first, then the others a fragment of text fits as well (part of
        several messages: "tp_size must be divisible"), one per message, `version`'s first."""
        text = _TYPE_PREFIX.sub("", text.strip()).strip()
        if not text:
            return []
        pats = _patterns(self)
        full: list[tuple[int, int, Site]] = []
        for s in self.sites:
            m = pats[s.code].fullmatch(text) or pats[s.code].search(text)
            if m is not None:
                literal = sum(len(x) for x in s.segments if x)
                exact = 1 if m.group(0) == text else 0
                full.append((exact, literal + (1 if version in s.releases else 0), s))
        if full:
            return [max(full, key=lambda t: (t[0], t[1]))[2]]
        # a fragment copied from the message: part of one of its literal stretches
        plain = " ".join(text.split())
        # a fragment says something: two words, or one long one ("x" is in half the messages)
        pieces = [
            s
            for s in self.sites
            if (" " in plain or len(plain) >= MIN_FRAGMENT)
            and any(plain in " ".join(x.split()) for x in s.segments if x)
        ]
        if pieces:
            pieces.sort(key=lambda s: (version not in s.releases, len(s.message)))
            one_each: dict[str, Site] = {}
            for s in pieces:
                one_each.setdefault(s.message, s)
            return list(one_each.values())
        words = _WORD.findall(text.lower())
        if len(words) < 2:
            return []
        best: tuple[float, int, Site] | None = None
        for s in self.sites:
            own = _words(self)[s.code]
            hits = sum(1 for w in words if w in own)
            score = hits / len(words)
            if hits >= 2 and score >= 0.8:
                key = (score, -abs(len(own) - len(set(words))), s)
                if (
                    best is None
                    or key[:2] > best[:2]
                    or (
                        key[:2] == best[:2]
                        and version in s.releases
                        and version not in best[2].releases
                    )
                ):
                    best = key
        return [best[2]] if best else []

    def closest(self, text: str, n: int = 5, cutoff: float = 0.0) -> list[Site]:
        """The sites whose message reads most like `text` (for an unknown one), at least
        `cutoff` alike (difflib's ratio); with no cutoff, the `n` nearest whatever they are."""
        text = _TYPE_PREFIX.sub("", text.strip()).lower()
        scored = []
        for s in self.sites:
            sm = difflib.SequenceMatcher(None, text, s.message.lower(), autojunk=False)
            if cutoff and sm.real_quick_ratio() < max(0.3, cutoff):
                continue
            ratio = sm.ratio()
            if ratio >= cutoff:
                scored.append((ratio, s))
        scored.sort(key=lambda t: -t[0])
        seen: set[str] = set()
        out: list[Site] = []
        for _, s in scored:
            if s.message not in seen:
                seen.add(s.message)
                out.append(s)
            if len(out) == n:
                break
        return out

    def related(self, site: Site) -> list[str]:
        """The other sites of the same function (else the same file)."""
        same = [s.code for s in self.sites if s.file == site.file and s.function == site.function]
        if len(same) <= 1:
            same = [s.code for s in self.sites if s.file == site.file]
        return [c for c in same if c != site.code][:RELATED_MAX]


# Three indexes, each built on first use: a code lookup (every rejected check's) must not pay
# for compiling the ~860 message patterns that only matching a message needs.
@cache
def _by_code(cat: Catalogue) -> dict[str, Site]:
    return {s.code: s for s in cat.sites}


@cache
def _patterns(cat: Catalogue) -> dict[str, re.Pattern[str]]:
    return {s.code: _pattern(s.segments) for s in cat.sites}


@cache
def _words(cat: Catalogue) -> dict[str, frozenset[str]]:
    return {
        s.code: frozenset(_WORD.findall(" ".join(x for x in s.segments if x).lower()))
        for s in cat.sites
    }


# read as a plain folder, as the flag schemas are (importlib.resources' import alone costs
# a check ~3-8 ms, on the way to sglang's verdict)
_DATA = Path(__file__).parent / "data"


@cache
def catalogue() -> Catalogue:
    raw = (_DATA / "errors.json.gz").read_bytes()
    data = json.loads(gzip.decompress(raw))
    return Catalogue(
        releases=tuple(data["releases"]),
        counts={str(k): int(v) for k, v in data["counts"].items()},
        sites=tuple(Site.from_json(d) for d in data["sites"]),
    )


def _cli_names(version: str | None) -> dict[str, str]:
    return dict(bundled_schema(version or NEWEST).cli_names())


def site_card_for(site: Site, version: str | None = None) -> Card:
    """The card of one catalogue site, with its lines in `version` when it has it."""
    release = version if version in site.releases else max(site.releases, key=SUPPORTED.index)
    return site_card(
        site,
        _cli_names(release),
        supported=SUPPORTED,
        related=catalogue().related(site),
        version=release,
    )


def find_site(message: str, where: str = "", version: str | None = None) -> Site | None:
    """The site that raised `message` (at `where`, "srt/…py:LINE", when known)."""
    cat = catalogue()
    if where:
        site = cat.at(where, version)
        if site is not None:
            return site
    return cat.match(message, version)


def card_for(code: str, message: str, source: str = "", version: str | None = None) -> Card:
    """The card for a finding: its code's, a hand-written card for its message, the
    catalogue site's, else one that quotes the message (`validators.cards.card_for`)."""
    by_code = get_card(code) if code != "sglang-error" else None
    if by_code is not None:
        return by_code
    site = catalogue().get(code)
    if site is None:
        hand = match_card(message)
        if hand is not None:
            return hand
        where = source.removeprefix("sglang:") if source.startswith("sglang:") else ""
        site = find_site(message, where, version)
    if site is not None:
        return site_card_for(site, version)
    return builtin_card_for(code, message, source)
