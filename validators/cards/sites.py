"""Cards for the raise and assert sites of sglang's argument resolution (the catalogue).

`sglaunch.catalogue` loads the sites that `scripts/sglang_errors.py` extracted from each
release's source; this module turns one site into a card — pure: a site and the flag names
in, a `Card` out. The hand-written cards (`cards/__init__.py`) say more and win where they exist.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sglaunch.validators.cards import Card

# the names sglang binds its arguments to in resolution code (ServerArgs, hook views);
# kept in step with scripts/sglang_errors.py
ARG_BASES = frozenset({"self", "server_args", "view", "cfg", "args", "sa", "resolved"})
WHEN = (
    "While sglang resolves its arguments (ServerArgs and its resolution hooks), before any "
    "weights load: a launch with this line stops here."
)


@dataclass(frozen=True)
class Condition:
    test: str  # the Python expression, as sglang writes it
    holds: bool  # True: raised when the test holds (an `if` body); False: when it fails
    flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class Site:
    code: str
    message: str  # wildcards as "…"
    segments: tuple[str | None, ...]  # literal text, None for a formatted value
    type: str
    file: str  # relative to sglang/: "srt/server_args.py"
    line: int  # in the newest release that has it
    function: str
    releases: Mapping[str, int]  # release -> line there
    conditions: tuple[Condition, ...] = ()
    flags: tuple[str, ...] = ()  # dests the guarding conditions read
    values: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    source_start: int = 0
    source: tuple[str, ...] = ()
    hook: str = ""

    @property
    def ref(self) -> str:
        return f"sglang/{self.file}:{self.line}"

    def line_in(self, version: str) -> int | None:
        return self.releases.get(version)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Site:
        return cls(
            code=str(d["code"]),
            message=str(d["message"]),
            segments=tuple(d["segments"]),
            type=str(d["type"]),
            file=str(d["file"]),
            line=int(d["line"]),
            function=str(d["function"]),
            releases={str(k): int(v) for k, v in d["releases"].items()},
            conditions=tuple(
                Condition(str(c["test"]), bool(c["holds"]), tuple(c.get("flags", ())))
                for c in d.get("conditions", ())
            ),
            flags=tuple(d.get("flags", ())),
            values={str(k): tuple(v) for k, v in (d.get("values") or {}).items()},
            source_start=int(d.get("source_start", 0)),
            source=tuple(d.get("source", ())),
            hook=str(d.get("hook", "")),
        )


# --- conditions in words ------------------------------------------------------------

_INVERT: dict[type[ast.cmpop], ast.cmpop] = {
    ast.Eq: ast.NotEq(),
    ast.NotEq: ast.Eq(),
    ast.In: ast.NotIn(),
    ast.NotIn: ast.In(),
    ast.Is: ast.IsNot(),
    ast.IsNot: ast.Is(),
    ast.Lt: ast.GtE(),
    ast.GtE: ast.Lt(),
    ast.Gt: ast.LtE(),
    ast.LtE: ast.Gt(),
}


class _Names(ast.NodeTransformer):
    """`self.tp_size` -> `--tp-size`; a bare flag in a test -> `--x is on`."""

    def __init__(self, cli: Mapping[str, str]) -> None:
        self.cli = cli

    def flag(self, node: ast.AST) -> str | None:
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in ARG_BASES
            and node.attr in self.cli
        ):
            return self.cli[node.attr]
        return None

    def truth(self, node: ast.expr) -> ast.expr:
        name = self.flag(node)
        if name is not None:
            return ast.Name(id=f"{name} is on")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self.flag(node.operand)
            if inner is not None:
                return ast.Name(id=f"{inner} is off")
        return self.visit(node)  # type: ignore[no-any-return]

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.AST:
        node.values = [self.truth(v) for v in node.values]
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        name = self.flag(node)
        return ast.Name(id=name) if name is not None else self.generic_visit(node)


def _negate(node: ast.expr) -> ast.expr:
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _INVERT:
        return ast.Compare(node.left, [_INVERT[type(node.ops[0])]], node.comparators)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return node.operand
    if isinstance(node, ast.BoolOp):
        op: ast.boolop = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        return ast.BoolOp(op, [_negate(v) for v in node.values])
    return ast.UnaryOp(ast.Not(), node)


_WORDS = (
    (re.compile(r"(--[\w-]+) is not None\b"), r"\1 is set"),
    (re.compile(r"(--[\w-]+) is None\b"), r"\1 is unset"),
    (re.compile(r" == "), " is "),
    (re.compile(r" != "), " is not "),
    (re.compile(r"\bnot (--[\w-]+ is) on\b"), r"\1 off"),
    (re.compile(r"\bnot (--[\w-]+ is) off\b"), r"\1 on"),
)


def condition_words(cond: Condition, cli: Mapping[str, str]) -> str:
    """One guarding condition, as the state that raises: `--kv-cache-dtype not in [...]`."""
    try:
        tree = ast.parse(cond.test, mode="eval").body
    except SyntaxError:
        return cond.test if cond.holds else f"not ({cond.test})"
    if not cond.holds:
        tree = _negate(tree)
    names = _Names(cli)
    text = ast.unparse(names.truth(tree))
    for pattern, repl in _WORDS:
        text = pattern.sub(repl, text)
    return text if len(text) <= 240 else text[:239] + "…"


def trigger_words(site: Site, cli: Mapping[str, str]) -> str:
    parts = [condition_words(c, cli) for c in site.conditions]
    return "; and ".join(f"`{p}`" for p in parts)


# --- the card -------------------------------------------------------------------------


def release_span(releases: Sequence[str], supported: Sequence[str]) -> str:
    """`0.5.19–0.5.23` for a run of supported releases, else the list."""
    have = [v for v in supported if v in releases]
    if not have:
        return ", ".join(releases)
    first, last = supported.index(have[0]), supported.index(have[-1])
    if len(have) > 1 and list(supported[first : last + 1]) == have:
        return f"{have[0]}–{have[-1]}"
    return ", ".join(have)


def _values_hint(values: Sequence[Any]) -> str:
    shown = ", ".join(repr(v) for v in values[:6])
    return f" (the check compares it with {shown})" if shown else ""


def site_card(
    site: Site,
    cli: Mapping[str, str],
    *,
    supported: Sequence[str] = (),
    related: Sequence[str] = (),
    version: str | None = None,
) -> Card:
    """The card for one site: `cli` maps dests to option names; `version` picks the line."""
    line = site.line_in(version) if version else None
    line = line or site.line
    names = [cli.get(d, d) for d in site.flags]
    trigger = trigger_words(site, cli)
    where = f"`{site.function}` ({site.file}:{line})"
    if trigger:
        what = f"sglang's {where} raises {site.type} when {trigger}."
    else:
        what = (
            f"sglang's {where} raises {site.type} whenever it runs this line: no condition on a "
            "flag guards it, so what leads there is the model, the GPU or a value it computed."
        )
    if names:
        what += " Flags it reads: " + ", ".join(names) + "."
    span = release_span(list(site.releases), supported) if supported else ", ".join(site.releases)
    when = f"{WHEN} Releases that have this check: {span}."
    solutions = [
        f"Go to {cli.get(d, d)}{_values_hint(site.values.get(d, ()))}: change or remove it so "
        "the condition above no longer holds."
        for d in site.flags
    ]
    solutions.append(
        "`sglaunch check` with your launch line offers the one-flag changes that sglang's own "
        "resolution accepts for that line (none is offered without asking sglang)."
    )
    shift = line - site.line
    width = len(str(site.source_start + shift + len(site.source)))
    source = tuple(
        f"{str(site.source_start + shift + i).rjust(width)}  {text}"
        for i, text in enumerate(site.source)
    )
    title = site.message if len(site.message) <= 120 else site.message[:119] + "…"
    return Card(
        code=site.code,
        title=title,
        what=what,
        when=when,
        solutions=tuple(solutions),
        related=tuple(related),
        ref=f"sglang/{site.file}:{line}",
        stage="resolution",
        source=source,
    )


def with_fixes_note(card: Card, fixes: Sequence[str]) -> Card:
    """`card` with the changes sglang accepted for a line as its first solutions."""
    if not fixes:
        return card
    accepted = tuple(f"{f} (sglang accepts the line with this change)" for f in fixes)
    return replace(card, solutions=accepted + card.solutions)
