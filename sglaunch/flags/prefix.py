"""argparse's abbreviation lookup (`--tp` for `--tp-size`) in O(log n) per token.

A pasted line of thousands of tokens, each compared with every one of sglang's
~600 options, costs seconds; a sorted index answers each prefix with a bisection.
"""

from __future__ import annotations

import bisect
import weakref

from sglaunch.flags.schema import FlagSchema

# id(schema) -> (a weak reference to it, its options sorted, each option's rank in sglang's order)
_INDEX: dict[int, tuple[weakref.ref[FlagSchema], list[str], dict[str, int]]] = {}


def _index(schema: FlagSchema) -> tuple[list[str], dict[str, int]]:
    entry = _INDEX.get(id(schema))
    if entry is None or entry[0]() is not schema or len(entry[1]) != len(schema.by_option):
        order = {opt: i for i, opt in enumerate(schema.by_option)}
        entry = (weakref.ref(schema), sorted(order), order)
        _INDEX[id(schema)] = entry
        for key in [k for k, (ref, _, _) in _INDEX.items() if ref() is None]:
            del _INDEX[key]
    return entry[1], entry[2]


def options_with_prefix(schema: FlagSchema, prefix: str) -> list[str]:
    """Every option that starts with `prefix`, in the schema's order (argparse's)."""
    options, order = _index(schema)
    lo = bisect.bisect_left(options, prefix)
    hi = lo
    while hi < len(options) and options[hi].startswith(prefix):
        hi += 1
    return sorted(options[lo:hi], key=order.__getitem__)
