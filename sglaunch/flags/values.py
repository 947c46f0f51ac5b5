"""One flag's value: converted from text as sglang's argparse type functions do, and shown.

Apart from the command-line parser (flags/argv.py) and the session so that the flag
table, which draws values in the TUI's first frame, does without their imports.
"""

from __future__ import annotations

import json
import re
import shlex
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from sglaunch.safeio import MAX_NUMBER, InputError, number_problem, parse_json, shown

if TYPE_CHECKING:
    from sglaunch.flags.schema import FlagSpec

# Digits in the largest 64-bit integer: a longer string is out of range before int() runs.
_MAX_DIGITS = len(str(MAX_NUMBER))
# JSON flag values nest a few levels (--json-model-override-args).
_JSON_DEPTH = 32


class FlagTypeError(Exception):
    """A value argparse's type function would reject; `message` is argparse's text."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _human_int(value: str) -> int:
    # sglang srt/utils/common.py human_readable_int
    value = value.strip()
    if sum(ch.isdigit() for ch in value) > _MAX_DIGITS:
        raise FlagTypeError(f"{shown(value, 40)!r} is out of range: at most {MAX_NUMBER}")
    si = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
    iec = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)", value)
    if m:
        number, suffix = m.groups()
        if suffix in iec:
            if "." in number:
                raise FlagTypeError(
                    f"Decimals are not allowed with IEC suffixes like '{suffix}'. "
                    f"Use an integer IEC value such as '{int(Decimal(number))}{suffix}', "
                    f"or an SI value such as '{number}{suffix[0]}'."
                )
            return int(number) * iec[suffix]
        return int(Decimal(number) * si[suffix])
    try:
        return int(value)
    except ValueError:
        raise FlagTypeError(
            f"Invalid integer value: '{value}'. "
            "Use a plain integer, SI suffixes (1k, 1M), or IEC suffixes (1Ki, 1Mi). "
            "Suffixes are case-sensitive."
        ) from None


def _bounded(value: Any, raw: str) -> Any:
    """A number sglang can mean: finite, within 64 bits (argparse's float takes 'nan')."""
    problem = number_problem(value)
    if problem:
        raise FlagTypeError(f"invalid value {shown(raw, 40)!r}: {problem}")
    return value


def _json(raw: str) -> Any:
    """json.loads within safeio's limits; a syntax error stays a JSONDecodeError, for the
    wording each JSON type gives it."""
    try:
        return parse_json(raw, label="the value", max_depth=_JSON_DEPTH, what="flag value")
    except InputError as exc:
        if isinstance(exc.__cause__, json.JSONDecodeError):
            raise exc.__cause__ from None
        raise FlagTypeError(exc.message) from None


def convert(spec: FlagSpec, raw: str) -> Any:
    """One value through the flag's type function; raises FlagTypeError with argparse's words."""
    t = spec.type
    try:
        if t == "int":
            if sum(ch.isdigit() for ch in raw) > _MAX_DIGITS:
                raise FlagTypeError(f"invalid int value: {shown(raw, 40)!r}: out of range")
            return _bounded(int(raw), raw)
        if t == "float":
            if len(raw) > 400:  # float() is linear, but no number is written this long
                raise FlagTypeError(f"invalid float value: {shown(raw, 40)!r}")
            return _bounded(float(raw), raw)
        if t == "human_int":
            return _bounded(_human_int(raw), raw)
        if t == "json":
            return _json(raw)
        if t == "json_object":
            try:
                parsed = _json(raw)
            except json.JSONDecodeError as e:
                raise FlagTypeError(f"{spec.name} must be JSON: {e}") from None
            if not isinstance(parsed, dict):
                raise FlagTypeError(
                    f"{spec.name} must be a JSON object, got {type(parsed).__name__}"
                )
            return parsed
        if t == "json_list":
            try:
                return _json(raw)
            except json.JSONDecodeError:
                raise FlagTypeError(
                    f"Invalid JSON list: {shown(raw)}. Please provide a valid JSON list."
                ) from None
        if t == "nullable_str":
            return None if not raw or raw == "None" else raw
        if t == "cuda_graph_backend":
            if raw == "tc_piecewise":
                raise FlagTypeError("tc_piecewise was removed; select breakable, full, or disabled")
            return raw
        return raw
    except FlagTypeError:
        raise
    except (ValueError, TypeError, InvalidOperation):
        type_name = {
            "int": "int",
            "float": "float",
            "json": "loads",
        }.get(t, t)
        raise FlagTypeError(f"invalid {type_name} value: {shown(raw)!r}") from None


def check_choice(spec: FlagSpec, value: Any) -> str | None:
    if spec.choices is None or value is None:
        return None
    if value in spec.choices:
        return None
    choices = ", ".join(repr(c) for c in spec.choices)
    return f"invalid choice: {shown(repr(value))} (choose from {choices})"


def format_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


class FlagValueError(ValueError):
    """A value typed into the editor that sglang's parser would reject; the message is argparse's."""


def parse_value(spec: FlagSpec, text: str) -> Any:
    """Editor text to a typed value, exactly as sglang's parser would convert it."""
    if spec.is_bool:
        low = text.lower()
        if low in ("true", "1", "yes", "on"):
            return True
        if low in ("false", "0", "no", "off"):
            return False
        raise FlagValueError(f"argument {spec.argparse_name}: expected on or off, got {text!r}")
    raw_values = shlex.split(text) if spec.is_list else [text]
    values = []
    for raw in raw_values:
        try:
            value = convert(spec, raw)
        except FlagTypeError as e:
            raise FlagValueError(f"argument {spec.argparse_name}: {e.message}") from None
        problem = check_choice(spec, value)
        if problem:
            raise FlagValueError(f"argument {spec.argparse_name}: {problem}")
        values.append(value)
    return values if spec.is_list else values[0]


def display_value(value: Any) -> str:
    if isinstance(value, list):
        return " ".join(shlex.quote(format_value(v)) for v in value)
    return format_value(value)
