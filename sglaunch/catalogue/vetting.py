"""One-flag fixes for an error of sglang's own check, each accepted by sglang for the line.

A catalogue site knows the flags its guarding conditions read and the values it compares
them with; each candidate (remove one of those flags, or set it to one of those values)
is asked of sglang's resolution (the warm oracle/service) with the rest of the line
unchanged, and only the ones it accepts are offered. Bounded: a few candidates, a few fixes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sglaunch.catalogue import catalogue
from sglaunch.flags.argv import parse_argv, to_argv
from sglaunch.validators.findings import Finding, Fix

if TYPE_CHECKING:
    from sglaunch.flags.schema import FlagSchema
    from sglaunch.oracle.answer import OracleAnswer
    from sglaunch.validators.cards.sites import Site

MAX_CANDIDATES = 4  # questions to sglang per error, at most
MAX_FIXES = 3
# flags no fix should touch: they say what is served, not how
NEVER = frozenset({"model_path", "tokenizer_path", "served_model_name", "host", "port"})

Resolve = Callable[[Sequence[str]], "OracleAnswer"]


def candidates(site: Site, flags: Mapping[str, Any], schema: FlagSchema) -> list[Fix]:
    """The one-flag changes worth asking about, most likely first."""
    out: list[Fix] = []
    for dest in site.flags:
        spec = schema.get(dest)
        if dest in NEVER or spec is None:
            continue
        name = schema.cli_name(dest)
        if dest in flags:
            out.append(Fix(label=f"remove {name}", unset=(dest,)))
        for value in site.values.get(dest, ()):
            if value == flags.get(dest, spec.default) or isinstance(value, bool):
                continue
            if spec.choices is not None and value not in spec.choices:
                continue
            if spec.is_bool or not spec.takes_value:
                continue
            out.append(Fix(label=f"set {name} {value}", set={dest: value}))
    return out[:MAX_CANDIDATES]


def vetted_fixes(
    site: Site, argv: Sequence[str], schema: FlagSchema, resolve: Resolve
) -> tuple[Fix, ...]:
    """The candidates sglang accepts for this line (asked one by one; a fault is a no)."""
    parsed = parse_argv(list(argv), schema)
    if parsed.issues:
        return ()
    accepted: list[Fix] = []
    for fix in candidates(site, parsed.values, schema):
        changed = to_argv(dict(fix.apply(parsed.values)), schema)
        try:
            answer = resolve(changed)
        except Exception:  # a dead worker is no verdict: the fix is not offered
            continue
        if answer.ok:
            accepted.append(fix)
            if len(accepted) == MAX_FIXES:
                break
    return tuple(accepted)


# every catalogue site's code starts so (scripts/sglang_errors.py)
SITE_PREFIX = "sglang-"


def vet_findings(
    findings: Sequence[Finding],
    argv: Sequence[str],
    schema: FlagSchema,
    resolve: Resolve,
    version: str | None = None,
) -> list[Finding]:
    """`findings` with sglang-accepted fixes on each catalogue error that has none."""
    named = named_flags(findings, argv, schema)
    if not any(f.is_error and not f.fixes and f.code.startswith(SITE_PREFIX) for f in named):
        return named  # nothing a catalogue site could fix: the catalogue is not even read
    cat = catalogue()
    out: list[Finding] = []
    for f in named:
        site = cat.get(f.code) if f.is_error and not f.fixes else None
        if site is not None:
            fixes = vetted_fixes(site, argv, schema, resolve)
            if fixes:
                f = replace(f, fixes=fixes)
        out.append(f)
    return out


def _bad_json(value: str) -> bool:
    try:
        json.loads(value)
    except (ValueError, RecursionError):
        return True
    return False


def named_flags(
    findings: Sequence[Finding], argv: Sequence[str], schema: FlagSchema
) -> list[Finding]:
    """sglang's errors that are not its own argument checks (a JSON value that does not
    decode, a path that is not there) with the flag that holds the value they name."""
    values = parse_argv(list(argv), schema).values
    out: list[Finding] = []
    for f in findings:
        if not f.is_error or f.flags or f.source == "builtin":
            out.append(f)
            continue
        texts = {d: v for d, v in values.items() if isinstance(v, str) and len(v) >= 3}
        if f.code == "invalid-json-flag":
            dests = [d for d, v in texts.items() if v.lstrip()[:1] in "{[" and _bad_json(v)]
        else:
            dests = [d for d, v in texts.items() if f"'{v}'" in f.message or f'"{v}"' in f.message]
        if not dests:
            out.append(f)
            continue
        notes = []
        for d in dests:
            name, value = schema.cli_name(d), texts[d]
            if f.code == "invalid-json-flag":
                notes.append(f"{name} holds the JSON sglang could not decode.")
            elif "/" in value and not os.path.exists(value):
                notes.append(
                    f"{name} {value}: no such file or folder here (and not a Hugging Face "
                    "repo id, which reads namespace/name)."
                )
            else:
                notes.append(f"sglang names the value of {name}.")
        out.append(replace(f, flags=tuple(dests), detail=" ".join([f.detail, *notes]).strip()))
    return out
