"""Values shortened for a screen: a long list is its length, its first items and its last.

sglang resolves some flags to long lists (`cuda_graph_config` holds ~60 batch sizes); shown
whole they push every other field out of view, and what a reader needs is how many, from
what, to what.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping

LONG_LIST = 8  # longer lists are summarised
HEAD = 3  # items shown before the ellipsis


def _noun(key: str) -> str:
    k = key.lower()
    if k == "bs" or k.endswith("_bs") or "_bs_" in k or "batch" in k:
        return "batch sizes"
    return "values"


def short_value(value: object, key: str = "") -> str:
    """`value` as a short line; `key` (the field's name) names what a long list holds."""
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            parsed: object = json.loads(value)  # a JSON-valued flag may arrive as its text
        except ValueError:
            return value
        value = parsed
    if isinstance(value, (list, tuple)):
        if len(value) > LONG_LIST:
            head = ", ".join(short_value(v) for v in value[:HEAD])
            return f"{len(value)} {_noun(key)}: {head}, … {short_value(value[-1])}"
        return "[" + ", ".join(short_value(v, key) for v in value) + "]"
    if isinstance(value, Mapping):
        inner = ", ".join(f"{k}: {short_value(v, str(k))}" for k, v in value.items())
        return "{" + inner + "}"
    if isinstance(value, str):
        return value
    return str(value)


def _has_long_list(value: object) -> bool:
    if isinstance(value, (list, tuple)):
        return len(value) > LONG_LIST or any(_has_long_list(v) for v in value)
    if isinstance(value, Mapping):
        return any(_has_long_list(v) for v in value.values())
    return False


def shown_value(value: object, key: str = "") -> str:
    """`value` as before (`str`), unless a long list is in it: then summarised."""
    parsed = value
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
    return short_value(parsed, key) if _has_long_list(parsed) else str(value)


ELLIPSIS = "…"
PART = " · "
MIN_PART = 12  # a part shortened to less says too little: it is dropped instead


def shorten(text: str, width: int) -> str:
    """`text` in `width` cells, cut at a word's end with an ellipsis, never mid-word."""
    if len(text) <= width:
        return text
    if width <= 1:
        return ELLIPSIS[:width]
    cut = text[: width - 1]
    space = cut.rfind(" ")
    if space > 0:
        cut = cut[:space]
    return cut.rstrip(" ·:,;-") + ELLIPSIS


def fit_title(title: str, width: int, keep: int = 1) -> str:
    """A ` · `-separated title in `width` cells: the last (least important) parts go
    first, down to the first `keep`, then what is left is shortened at a word's end."""
    parts = title.split(PART)
    while len(parts) > max(keep, 1) and len(PART.join(parts)) > width:
        # the last part shortened at a word, when a word of it fits; else it goes
        room = width - len(PART.join(parts[:-1])) - len(PART)
        cut = shorten(parts[-1], room)
        if room >= MIN_PART and " " in cut.rstrip(ELLIPSIS):
            parts[-1] = cut
            break
        parts.pop()
    return shorten(PART.join(parts), width)


def shorten_lines(text: str, width: int, lines: int) -> str:
    """`text` wrapped at `width` in at most `lines` lines, the last ending in an ellipsis
    at a word's end when the text goes on."""
    if width <= 0:
        return text
    wrapped = textwrap.wrap(text, width)
    if len(wrapped) <= lines:
        return text
    kept = wrapped[: lines - 1]
    rest = " ".join(wrapped[lines - 1 :])
    return "\n".join([*kept, shorten(rest, width)])
