"""Secrets: which flags and variables hold them, references to them, and masking.

A profile never holds a secret's value. It holds the name of an environment
variable (`[secrets] api_key = "SGLANG_API_KEY"`); the value is read from the
environment only when the server is started, and is masked wherever sglaunch
shows or writes a command line.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, TextIO

from sglaunch.errors import UserError
from sglaunch.flags.prefix import options_with_prefix
from sglaunch.flags.schema import FlagSchema, FlagSpec, bundled_schema

MASK = "****"

# The last word of a dest or variable name that makes it a credential. Only the
# last word counts: `tokenizer_path`, `ssl_keyfile` (a path), `speculative_token_map`
# and `SGLANG_INIT_NEW_TOKEN_RATIO` are settings, not secrets.
_SECRET_WORDS = frozenset(
    {
        "key",
        "keys",
        "apikey",
        "token",
        "secret",
        "secrets",
        "password",
        "passwd",
        "passphrase",
        "credential",
        "credentials",
    }
)
# Words that make a name a credential wherever they stand: --ssl-keyfile-password-x,
# DB_PASSWORD_HASH. Masking a path by mistake costs nothing; printing a password does.
_SECRET_ANYWHERE = frozenset(
    {"apikey", "password", "passwd", "passphrase", "secret", "secrets", "credential", "credentials"}
)
_WORD_SPLIT = re.compile(r"[^a-z0-9]+")
_STRING_TYPES = ("str", "nullable_str")
# sglang's own knobs (SGLANG_LOG_DECODE_GRAPH_KEY, ...) are never credentials.
_SGLANG_ENV_PREFIXES = ("SGLANG_", "SGL_")

# fullmatch only: `$` would let "NAME\n" through
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# $VAR, ${VAR}, ${VAR:?message}, ${VAR:-default}: a value that names a variable
_ENV_REFERENCE = re.compile(
    r"^\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?::?[-=?+][^}]*)?\}|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))$"
)


def looks_secret_name(name: str) -> bool:
    """Whether a flag or variable name names a credential, known or not: --api-keys,
    --hf-token, admin_api_key, HF_TOKEN, AWS_SECRET_ACCESS_KEY. Not: --tokenizer-path,
    --ssl-keyfile, SSL_KEY_FILE, --max-prefill-tokens."""
    words = [w for w in _WORD_SPLIT.split(name.lower()) if w]
    if not words:
        return False
    return words[-1] in _SECRET_WORDS or any(w in _SECRET_ANYWHERE for w in words)


def is_secret_flag(spec: FlagSpec) -> bool:
    """A flag whose value is a credential: --api-key, --admin-api-key, --ssl-keyfile-password.

    Only a single string value can be one: `bucket_time_to_first_token` (floats)
    ends in "token" too.
    """
    if not spec.takes_value or spec.is_list or spec.type not in _STRING_TYPES:
        return False
    return looks_secret_name(spec.dest)


def secret_dests(schema: FlagSchema | None = None) -> frozenset[str]:
    schema = schema or bundled_schema()
    return frozenset(f.dest for f in schema.flags if is_secret_flag(f))


def is_secret_env_name(name: str) -> bool:
    """HF_TOKEN, OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY: yes. SGLANG_*, *_KEY_FILE: no."""
    if name.upper().startswith(_SGLANG_ENV_PREFIXES):
        return False
    return looks_secret_name(name)


def default_secret_env(dest: str) -> str:
    """The variable an imported secret is expected in: api_key -> SGLAUNCH_API_KEY."""
    return "SGLAUNCH_" + dest.upper()


def env_reference(value: str) -> str | None:
    """'${SGLANG_API_KEY}' or '$SGLANG_API_KEY' -> 'SGLANG_API_KEY'; a literal -> None."""
    m = _ENV_REFERENCE.match(value.strip())
    if not m:
        return None
    return m.group("braced") or m.group("bare")


def shell_reference(var: str) -> str:
    """How an exported command line reads the secret: the shell stops if it is unset."""
    return f'"${{{var}:?set {var}}}"'


def resolve_secret_values(
    refs: Mapping[str, str],
    environ: Mapping[str, str],
    schema: FlagSchema | None = None,
    *,
    profile: str | None = None,
) -> dict[str, str]:
    """{dest: value} read from the environment; a missing or empty variable is a UserError."""
    schema = schema or bundled_schema()
    out: dict[str, str] = {}
    for dest, var in refs.items():
        value = environ.get(var)
        if not value:
            whose = f"profile '{profile}' takes" if profile else "sglaunch takes"
            raise UserError(
                f"{whose} {schema.cli_name(dest)} from the environment variable {var}, "
                f"which is not set: export {var}=... and try again"
            )
        out[dest] = value
    return out


# --- masking -----------------------------------------------------------------------


def _secret_options(schema: FlagSchema) -> dict[str, FlagSpec]:
    return {opt: f for f in schema.flags if is_secret_flag(f) for opt in f.options}


def is_secret_option(token: str, schema: FlagSchema | None = None) -> bool:
    """Whether an option (`--api-key`, `--api-k`, `--hf-token`; no '=value') takes a secret.

    A known flag is one by its spec, an abbreviation by the flags it could stand for
    (argparse takes an unambiguous one), an unknown flag by its name.
    """
    schema = schema or bundled_schema()
    spec = schema.by_option.get(token)
    if spec is not None:
        return is_secret_flag(spec)
    if not token.startswith("--") or len(token) <= 2:
        return False
    if schema.allow_abbrev:
        matches = options_with_prefix(schema, token)
        if matches:
            return any(is_secret_flag(schema.by_option[o]) for o in matches)
    return looks_secret_name(token[2:])


def _value_token(tok: str) -> bool:
    return not tok.startswith("-") or tok == "-"


def mask_argv(argv: Sequence[str], schema: FlagSchema | None = None) -> list[str]:
    """argv with the values of secret flags and NAME=VALUE credentials replaced by ****.

    Unknown flags whose name looks secret (`--api-keys sk-…`) are masked too.
    References (`${VAR}`) stay: they name a variable, they are not its value.
    """
    schema = schema or bundled_schema()
    out: list[str] = []
    mask_next = False
    for tok in argv:
        if mask_next and _value_token(tok):
            mask_next = False
            out.append(tok if env_reference(tok) else MASK)
            continue
        mask_next = False
        if tok.startswith("--"):
            head, eq, value = tok.partition("=")
            if is_secret_option(head, schema):
                if eq:
                    out.append(tok if env_reference(value) or not value else f"{head}={MASK}")
                else:
                    out.append(tok)
                    mask_next = True
                continue
        elif "=" in tok:
            name, _, value = tok.partition("=")
            if ENV_NAME.fullmatch(name) and is_secret_env_name(name) and not env_reference(value):
                out.append(f"{name}={MASK}")
                continue
        out.append(tok)
    return out


def secret_values(argv: Sequence[str], schema: FlagSchema | None = None) -> list[str]:
    """The values the secret flags and NAME=VALUE credentials in `argv` carry (references
    excluded): what to mask in text."""
    schema = schema or bundled_schema()
    out: list[str] = []
    for i, tok in enumerate(argv):
        if tok.startswith("--"):
            head, eq, value = tok.partition("=")
            if not is_secret_option(head, schema):
                continue
            if not eq:
                value = argv[i + 1] if i + 1 < len(argv) and _value_token(argv[i + 1]) else ""
        elif "=" in tok:
            name, _, value = tok.partition("=")
            if not (ENV_NAME.fullmatch(name) and is_secret_env_name(name)):
                continue
        else:
            continue
        if value and value != MASK and not env_reference(value):
            out.append(value)
    return out


_QUOTED_OR_WORD = r"""(?:'[^']*'|"[^"]*"|[^\s'",;)\]}]+)"""
# A Python repr'd string, escapes included: `'y\'z'` is one value.
_PY_STRING = r"""(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")"""
# NAME=VALUE: the callback masks it when NAME is a credential (see is_secret_env_name).
_ENV_ASSIGN = re.compile(
    r"\b(?P<opt>[A-Za-z_][A-Za-z0-9_]*)(?P<sep>=)(?P<val>" + _QUOTED_OR_WORD + ")"
)
# --option VALUE or --option=VALUE, any option: the callback asks is_secret_option.
_ANY_FLAG = re.compile(
    r"(?<![\w-])(?P<opt>--[A-Za-z0-9][A-Za-z0-9_-]*)(?P<sep>[ =]+)(?P<val>(?!-)"
    + _QUOTED_OR_WORD
    + ")"
)
# Secrets shorter than this would blank ordinary words if replaced wherever they occur;
# flags, ServerArgs fields and NAME=VALUE are still masked by position, whatever the length.
MIN_FREE_TEXT_LEN = 6


class Masker:
    """Masks secrets in text (log lines, messages); built once, cheap on lines that hold none.

    Masks every known secret value (those of at least `min_len` characters), the value
    after a secret flag, known or not (`--api-key VALUE`, `--hf-token=VALUE`), the secret
    fields of sglang's `server_args=` line in either form it prints (`api_key='VALUE'` in
    a ServerArgs repr, `'api_key': 'VALUE'` in a dict), and `HF_TOKEN=VALUE`.
    """

    def __init__(
        self,
        values: Iterable[str] = (),
        schema: FlagSchema | None = None,
        *,
        min_len: int = MIN_FREE_TEXT_LEN,
        by_position: bool = True,
    ) -> None:
        self.schema = schema or bundled_schema()
        # by_position: also the word after a secret flag and NAME=VALUE (log lines); off
        # for sglaunch's own prose, where "--api-key or --admin-api-key" is no secret
        self.by_position = by_position
        found = {v for v in values if v and len(v) >= min_len and v != MASK}
        # a value also shows JSON-escaped (check --json) when it holds a quote or backslash
        found |= {json.dumps(v)[1:-1] for v in found}
        self.secrets = sorted(found, key=len, reverse=True)
        self._dests = sorted(secret_dests(self.schema), key=len, reverse=True)
        self._field_re = (
            re.compile(
                r"\b(?P<opt>" + "|".join(re.escape(d) for d in self._dests) + r")"
                r"(?P<sep>'?\s*[=:]\s*)(?P<val>" + _PY_STRING + ")"
            )
            if self._dests
            else None
        )

    def _mask_flag(self, m: re.Match[str]) -> str:
        return _mask_match(m) if self._secret_flag(m) else m.group(0)

    def values_in(self, text: str) -> list[str]:
        """The secret values `text` carries by position: what __call__ masks there."""
        found = [m.group("val") for m in _ANY_FLAG.finditer(text) if self._secret_flag(m)]
        if self._field_re is not None:
            found += [m.group("val") for m in self._field_re.finditer(text)]
        found += [
            m.group("val") for m in _ENV_ASSIGN.finditer(text) if is_secret_env_name(m.group("opt"))
        ]
        return [b for v in found if (b := _bare_secret(v)) is not None]

    def _secret_flag(self, m: re.Match[str]) -> bool:
        return is_secret_option(m.group("opt"), self.schema)

    def __call__(self, text: str) -> str:
        for value in self.secrets:
            if value in text:
                text = text.replace(value, MASK)
        if not self.by_position:
            return text
        # substring tests first: a busy server logs thousands of lines that hold no secret
        if "--" in text:
            text = _ANY_FLAG.sub(self._mask_flag, text)
        if self._field_re is not None and any(d in text for d in self._dests):
            text = self._field_re.sub(_mask_match, text)
        if "=" in text:
            text = _ENV_ASSIGN.sub(_mask_env, text)
        return text


def mask_text(text: str, values: Iterable[str] = (), schema: FlagSchema | None = None) -> str:
    """A log line or message with secrets masked (see Masker); every known value is masked,
    however short."""
    return Masker(values, schema, min_len=1)(text)


def _mask_env(m: re.Match[str]) -> str:
    name = m.group("opt")
    return _mask_match(m) if is_secret_env_name(name) else m.group(0)


def _bare_secret(value: str) -> str | None:
    """The secret a matched value is, unquoted; None for None, a reference, or a mask."""
    bare = value.strip("'\"")
    if value == "None" or not bare or bare == MASK or env_reference(bare):
        return None
    return bare


def _mask_match(m: re.Match[str]) -> str:
    value = m.group("val")
    if _bare_secret(value) is None:
        return m.group(0)
    quote = value[0] if value[0] in "'\"" else ""
    return f"{m.group('opt')}{m.group('sep')}{quote}{MASK}{quote}"


# --- JSON and the process's own output ---------------------------------------------------


def mask_json(data: Any, values: Iterable[str] = (), schema: FlagSchema | None = None) -> Any:
    """A JSON-ready value with every secret masked: values under a key that names one
    (`api_key`, `flags.admin_api_key`), argv lists, and any string holding a known value."""
    masker = Masker(values, schema)
    exact = set(masker.secrets) | {v for v in values if v}

    def walk(value: Any, secret: bool) -> Any:
        if isinstance(value, dict):
            return {
                k: walk(v, secret or (isinstance(k, str) and looks_secret_name(k)))
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            items = list(value)
            if items and all(isinstance(v, str) for v in items):
                items = mask_argv(items, masker.schema)
            return [walk(v, secret) for v in items]
        if isinstance(value, str):
            if secret and value and value != MASK and not env_reference(value):
                return MASK
            return MASK if value in exact else masker(value)
        return value

    return walk(data, False)


class MaskingStream:
    """A text stream that masks secrets in whatever is written through it."""

    def __init__(self, stream: TextIO, masker: Masker) -> None:
        self._stream = stream
        self._mask = masker

    def write(self, text: str) -> int:
        self._stream.write(self._mask(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:  # flush, isatty, fileno, encoding, ...
        return getattr(self._stream, name)


def known_secrets(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> list[str]:
    """Secret values this process knows of: on its command line (flags, NAME=VALUE, also
    inside a quoted launch line) and in its environment (HF_TOKEN, OPENAI_API_KEY, ...)."""
    environ = os.environ if environ is None else environ
    values = secret_values(argv)
    finder = Masker()
    for tok in argv:
        if " " in tok or "=" in tok:  # a launch line or a log line passed as one argument
            values += finder.values_in(tok)
    values += [v for k, v in environ.items() if is_secret_env_name(k) and v]
    return values


@contextlib.contextmanager
def masked_stdio(argv: Sequence[str]) -> Iterator[None]:
    """stdout and stderr with every secret known to this process masked, for the headless
    commands: a secret typed on the command line is never printed back, whoever prints it."""
    masker = Masker(known_secrets(argv), by_position=False)
    saved = sys.stdout, sys.stderr
    sys.stdout = MaskingStream(saved[0], masker)
    sys.stderr = MaskingStream(saved[1], masker)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
