"""`sglaunch explain`: the card for a rule code or an error message."""

from __future__ import annotations

import difflib
import json
import sys
from collections.abc import Sequence
from dataclasses import replace

from sglaunch.catalogue import catalogue, site_card_for
from sglaunch.catalogue import find_site as lookup
from sglaunch.cli.args import Parser
from sglaunch.cli.render import Painter, format_card
from sglaunch.errors import UserError
from sglaunch.oracle.service_client import known_sglang_version
from sglaunch.release import load_flag_facts, parse_named
from sglaunch.validators.cards import Card
from sglaunch.validators.cards.sites import Site
from sglaunch.validators.engine import get_rule
from sglaunch.validators.registry import all_cards, get_card, match_card
from sglaunch.validators.sourcelines import ref_at

# the other matching messages listed by name; the rest are counted
OTHERS_SHOWN = 5


def parser() -> Parser:
    p = Parser(
        prog="sglaunch explain",
        description="Explain a finding's code (minicpm-dp-attention) or an error message pasted from sglang.",
    )
    p.add_argument("text", nargs="*", help="a rule code or an error message")
    p.add_argument("--json", action="store_true", help="print the card as JSON on stdout")
    p.add_argument("--list", action="store_true", help="list every code with its title")
    p.add_argument(
        "--sglang-version",
        metavar="VERSION",
        help="the sglang release to explain for when none is installed (its source lines, "
        "whether the check exists there); default: the installed one, else the newest supported",
    )
    return p


def for_release(card: Card, version: str) -> tuple[Card, str | None]:
    """`card` with its source lines in `version`'s sglang, and a line when that release
    has no such check (the rule's span says which releases do)."""
    moved = replace(card, ref=ref_at(card.ref, version)) if card.ref else card
    rule = get_rule(card.code)
    if rule is not None and not rule.exists_in(version):
        return moved, f"sglang {version} has no such check: it exists in {rule.span}"
    return moved, None


def find(text: str) -> Card | None:
    text = text.strip()
    return get_card(text) or get_card(text.lower()) or match_card(text)


def find_site(text: str, version: str) -> Site | None:
    """The catalogue site of sglang's own checks for a message (or its code)."""
    return catalogue().get(text.strip()) or lookup(text, version=version)


def other_matches(text: str, site: Site, version: str) -> list[Site]:
    """The other sites a fragment fits as well as `site` (part of several messages)."""
    if catalogue().get(text.strip()) is site:
        return []
    return [s for s in catalogue().matches(text, version) if s is not site]


def _others_lines(others: list[Site], version: str) -> list[str]:
    n = len(others)
    lines = [
        f"the text is part of {n} other message{'s' if n != 1 else ''} too "
        "(`sglaunch explain CODE` for one):"
    ]
    for s in others[:OTHERS_SHOWN]:
        absent = "" if version in s.releases else f" (not in {version})"
        lines.append(f"  {s.code}  {s.message[:80]!r}{absent}")
    if n > OTHERS_SHOWN:
        lines.append(f"  … and {n - OTHERS_SHOWN} more: give more of the message")
    return lines


def _unknown(text: str) -> UserError:
    """One line: the closest codes and messages, and where to see them all."""
    codes = [c.code for c in all_cards()]
    close = difflib.get_close_matches(text.lower(), codes, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    # always the nearest few, however far: a way on from any text
    near = catalogue().closest(text, n=3)
    if near:
        shown = " | ".join(repr(s.message[:70]) for s in near)
        hint += f"; the closest messages sglang raises: {shown}"
    return UserError(
        f"no explanation for {text[:80]!r}{hint} (`sglaunch explain --list` shows every code)"
    )


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    paint = Painter(sys.stdout)
    if args.list:
        cards = sorted(all_cards(), key=lambda c: c.code)
        if args.json:
            print(json.dumps([c.to_json() for c in cards], indent=2))
        else:
            width = max(len(c.code) for c in cards)
            for c in cards:
                print(f"{c.code.ljust(width)}  {c.title}")

            cat = catalogue()
            counts = ", ".join(f"{v} {n}" for v, n in cat.counts.items())
            print(
                f"\nand every error sglang's argument resolution raises ({len(cat.sites)} sites, "
                f"by release: {counts}): `sglaunch explain MESSAGE`"
            )
        return 0
    text = " ".join(args.text)
    if not text.strip():
        raise UserError(
            "explain what? give a code (sglaunch explain minicpm-dp-attention) or paste an error message"
        )
    card = find(text)

    # the release `check` would name (its version only: no flags are read)
    versions = load_flag_facts(
        None,
        parse_named(args.sglang_version),
        read_installed=False,
        known=known_sglang_version(None),
    )
    active = versions.active
    others: list[Site] = []
    if card is None:
        site = find_site(text, active.version)
        if site is None:
            raise _unknown(text)
        others = other_matches(text, site, active.version)

        card = site_card_for(site, active.version)
        absent = (
            None
            if active.version in site.releases
            else f"sglang {active.version} has no such check: it exists in "
            + ", ".join(site.releases)
        )
    else:
        card, absent = for_release(card, active.version)
    if args.json:
        data = card.to_json()
        data["for"] = active.to_json()
        data["absent_in_release"] = absent
        data["other_matches"] = [{"code": s.code, "message": s.message} for s in others]
        print(json.dumps(data, indent=2))
    else:
        if others:
            # said first: the card below is one pick among several
            for line in _others_lines(others, active.version):
                print(paint(line if line.startswith(" ") else f"! {line}", "33"))
            print()
        print(format_card(card, paint))
        print(paint.dim(f"for {active.label()}"))
        for line in [*versions.lines(), *([absent] if absent else [])]:
            print(paint(f"! {line}", "33"))
    return 0
