"""Findings and cards as plain terminal text (stderr), with colour only on a terminal."""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Sequence
from typing import TextIO

from sglaunch.flags.schema import FlagSchema
from sglaunch.validators.cards import Card
from sglaunch.validators.findings import Finding, Severity

_MARK = {
    Severity.ERROR: ("✗ error   ", "31"),
    Severity.WARNING: ("! warning ", "33"),
    Severity.OVERRIDE: ("→ override", "36"),
    Severity.INFO: ("· info    ", "2"),
}


def use_color(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return hasattr(stream, "isatty") and stream.isatty()


class Painter:
    def __init__(self, stream: TextIO) -> None:
        self.on = use_color(stream)

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.on else text

    def bold(self, text: str) -> str:
        return self(text, "1")

    def dim(self, text: str) -> str:
        return self(text, "2")


def _wrap(text: str, indent: str, width: int = 100) -> str:
    return textwrap.fill(text, width=width, initial_indent=indent, subsequent_indent=indent)


def format_finding(
    f: Finding, schema: FlagSchema | None, paint: Painter, *, verbose: bool = True
) -> str:
    label, color = _MARK[f.severity]
    if f.severity is Severity.OVERRIDE:
        # silent changes are many and self-explanatory: one line each
        tag = "" if f.code == "sglang-override" else paint.dim(f"  [{f.code}]")
        confirmed = paint.dim(" ✓ sglang") if f.source != "builtin" and tag else ""
        return f"{paint(label, color)} {f.message}{tag}{confirmed}"
    lines = [f"{paint(label, color)} {paint.bold(f.code)}  {f.message}"]
    pad = " " * 11
    if f.flags and schema is not None:
        lines.append(pad + paint.dim("flags: " + " ".join(schema.cli_name(x) for x in f.flags)))
    if verbose and f.detail:
        lines.append(_wrap(f.detail, pad))
    if verbose and f.source != "builtin":
        lines.append(pad + paint.dim(f"source: {f.source}"))
    if verbose:
        for fix in f.fixes:
            change = _fix_text(fix, schema)
            shown = "" if change in fix.label else f" ({change})"
            lines.append(pad + f"fix: {fix.label}" + paint.dim(shown))
    return "\n".join(lines)


def _fix_text(fix, schema: FlagSchema | None) -> str:  # type: ignore[no-untyped-def]
    parts = []
    for dest in fix.unset:
        parts.append("remove " + (schema.cli_name(dest) if schema else dest))
    for dest, value in fix.set.items():
        name = schema.cli_name(dest) if schema else dest
        if value is True:
            parts.append(f"add {name}")
        else:
            parts.append(f"{name} {value}")
    return ", ".join(parts) or "no flag change"


def summary_line(findings: Sequence[Finding]) -> str:
    counts: dict[Severity, int] = {}
    for f in findings:
        counts[f.severity] = counts.get(f.severity, 0) + 1
    words = []
    for sev, name in (
        (Severity.ERROR, "error"),
        (Severity.WARNING, "warning"),
        (Severity.OVERRIDE, "override"),
        (Severity.INFO, "info"),
    ):
        n = counts.get(sev, 0)
        if n:
            words.append(f"{n} {name}{'s' if n != 1 and sev is not Severity.INFO else ''}")
    return ", ".join(words) if words else "no findings"


def print_findings(
    findings: Sequence[Finding],
    schema: FlagSchema | None,
    stream: TextIO = sys.stderr,
    *,
    verbose: bool = True,
) -> None:
    paint = Painter(stream)
    for f in findings:
        print(format_finding(f, schema, paint, verbose=verbose), file=stream)


def format_card(card: Card, paint: Painter) -> str:
    out = [paint.bold(f"{card.code} — {card.title}"), ""]
    out.append(paint.bold("What it means"))
    out.append(_wrap(card.what, "  "))
    if card.source:
        out.append("")
        out.append(paint.bold("Where sglang raises it") + paint.dim(f"  {card.ref}"))
        out.extend("  " + line for line in card.source)
    out.append("")
    out.append(paint.bold("When it happens"))
    out.append(_wrap(card.when, "  "))
    out.append("")
    out.append(paint.bold("How to fix it"))
    for i, s in enumerate(card.solutions, 1):
        out.append(
            textwrap.fill(s, width=100, initial_indent=f"  {i}. ", subsequent_indent="     ")
        )
    if card.example_before or card.example_after:
        out.append("")
        out.append(paint.bold("Example"))
        if card.example_before:
            out.append("  before: " + card.example_before)
        if card.example_after:
            out.append("  after:  " + card.example_after)
    if card.related:
        out.append("")
        out.append(paint.dim("related: " + ", ".join(card.related)))
    if card.ref:
        out.append(paint.dim(f"where sglang decides: {card.ref}"))
    return "\n".join(out)
