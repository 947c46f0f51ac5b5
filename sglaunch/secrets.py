"""Secrets: which flags and variables hold them, references to them, and masking.

A profile never holds a secret's value. It holds the name of an environment
variable (`[secrets] api_key = "SGLANG_API_KEY"`); the value is read from the
environment only when the server is started, and is masked wherever sglaunch
shows or writes a command line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from sglaunch.errors import UserError
from sglaunch.flags.schema import FlagSchema, FlagSpec, bundled_schema

MASK = "****"

# The last word of a dest or variable name that makes it a credential. Only the
# last word counts: `tokenizer_path`, `ssl_keyfile` (a path), `speculative_token_map`
# and `SGLANG_INIT_NEW_TOKEN_RATIO` are settings, not secrets.
_SECRET_WORDS = frozenset(
    {"key", "apikey", "token", "secret", "password", "passwd", "passphrase", "credentials"}
)
_STRING_TYPES = ("str", "nullable_str")
# sglang's own knobs (SGLANG_LOG_DECODE_GRAPH_KEY, ...) are never credentials.
_SGLANG_ENV_PREFIXES = ("SGLANG_", "SGL_")

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# $VAR, ${VAR}, ${VAR:?message}, ${VAR:-default}: a value that names a variable
_ENV_REFERENCE = re.compile(
    r"^\$(?:\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?::?[-=?+][^}]*)?\}|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))$"
)


def is_secret_flag(spec: FlagSpec) -> bool:
    """A flag whose value is a credential: --api-key, --admin-api-key, --ssl-keyfile-password.

    Only a single string value can be one: `bucket_time_to_first_token` (floats)
    ends in "token" too.
    """
    if not spec.takes_value or spec.is_list or spec.type not in _STRING_TYPES:
        return False
    return spec.dest.rsplit("_", 1)[-1].lower() in _SECRET_WORDS


def secret_dests(schema: FlagSchema | None = None) -> frozenset[str]:
    schema = schema or bundled_schema()
    return frozenset(f.dest for f in schema.flags if is_secret_flag(f))


def is_secret_env_name(name: str) -> bool:
    """HF_TOKEN, OPENAI_API_KEY, AWS_SECRET_ACCESS_KEY: yes. SGLANG_*, *_KEY_FILE: no."""
    upper = name.upper()
    if upper.startswith(_SGLANG_ENV_PREFIXES):
        return False
    return upper.rsplit("_", 1)[-1].lower() in _SECRET_WORDS


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


def _find_secret_option(token: str, options: dict[str, FlagSpec], schema: FlagSchema) -> bool:
    """Whether `token` (without any '=value') names a secret flag, abbreviations included."""
    if token in options:
        return True
    if schema.allow_abbrev and token.startswith("--") and len(token) > 2:
        matches = {f.dest for opt, f in schema.by_option.items() if opt.startswith(token)}
        # argparse takes an abbreviation only when it is unambiguous
        if len(matches) == 1:
            return next(iter(matches)) in {f.dest for f in options.values()}
    return False


def mask_argv(argv: Sequence[str], schema: FlagSchema | None = None) -> list[str]:
    """argv with the values of secret flags and NAME=VALUE credentials replaced by ****.

    References (`${VAR}`) stay: they name a variable, they are not its value.
    """
    schema = schema or bundled_schema()
    options = _secret_options(schema)
    out: list[str] = []
    mask_next = False
    for tok in argv:
        if mask_next:
            mask_next = False
            out.append(tok if env_reference(tok) else MASK)
            continue
        if tok.startswith("--"):
            head, eq, value = tok.partition("=")
            if _find_secret_option(head, options, schema):
                if eq:
                    out.append(tok if env_reference(value) else f"{head}={MASK}")
                else:
                    out.append(tok)
                    mask_next = True
                continue
        elif "=" in tok:
            name, _, value = tok.partition("=")
            if ENV_NAME.match(name) and is_secret_env_name(name) and not env_reference(value):
                out.append(f"{name}={MASK}")
                continue
        out.append(tok)
    return out


def secret_values(argv: Sequence[str], schema: FlagSchema | None = None) -> list[str]:
    """The values the secret flags in `argv` carry (references excluded): what to mask in text."""
    schema = schema or bundled_schema()
    options = _secret_options(schema)
    out: list[str] = []
    for i, tok in enumerate(argv):
        if not tok.startswith("--"):
            continue
        head, eq, value = tok.partition("=")
        if not _find_secret_option(head, options, schema):
            continue
        if not eq:
            value = argv[i + 1] if i + 1 < len(argv) else ""
        if value and not env_reference(value):
            out.append(value)
    return out


_QUOTED_OR_WORD = r"""(?:'[^']*'|"[^"]*"|[^\s'",;)\]}]+)"""
# A Python repr'd string, escapes included: `'y\'z'` is one value.
_PY_STRING = r"""(?:'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")"""
# An assignment to a name whose last word is a credential (see is_secret_env_name).
_ENV_ASSIGN = re.compile(
    r"\b(?P<opt>(?:[A-Za-z0-9_]*_)?(?:" + "|".join(sorted(_SECRET_WORDS)) + r"))(?P<sep>=)"
    r"(?P<val>" + _QUOTED_OR_WORD + ")",
    re.IGNORECASE,
)
# Secrets shorter than this would blank ordinary words if replaced wherever they occur;
# flags, ServerArgs fields and NAME=VALUE are still masked by position, whatever the length.
MIN_FREE_TEXT_LEN = 6


class Masker:
    """Masks secrets in text (log lines, messages); built once, cheap on lines that hold none.

    Masks every known secret value (those of at least `min_len` characters), the value
    after a secret flag (`--api-key VALUE`, `--api-key=VALUE`), the secret fields of
    sglang's `server_args=` line in either form it prints (`api_key='VALUE'` in a
    ServerArgs repr, `'api_key': 'VALUE'` in a dict), and `HF_TOKEN=VALUE`.
    """

    def __init__(
        self,
        values: Iterable[str] = (),
        schema: FlagSchema | None = None,
        *,
        min_len: int = MIN_FREE_TEXT_LEN,
    ) -> None:
        schema = schema or bundled_schema()
        self.secrets = sorted({v for v in values if v and len(v) >= min_len}, key=len, reverse=True)
        self._options = sorted(_secret_options(schema), key=len, reverse=True)
        self._dests = sorted(secret_dests(schema), key=len, reverse=True)
        self._flag_re = (
            re.compile(
                r"(?P<opt>" + "|".join(re.escape(o) for o in self._options) + r")(?P<sep>[ =]+)"
                r"(?P<val>" + _QUOTED_OR_WORD + ")"
            )
            if self._options
            else None
        )
        self._field_re = (
            re.compile(
                r"\b(?P<opt>" + "|".join(re.escape(d) for d in self._dests) + r")"
                r"(?P<sep>'?\s*[=:]\s*)(?P<val>" + _PY_STRING + ")"
            )
            if self._dests
            else None
        )

    def __call__(self, text: str) -> str:
        for value in self.secrets:
            if value in text:
                text = text.replace(value, MASK)
        # substring tests first: a busy server logs thousands of lines that hold no secret
        if self._flag_re is not None and "--" in text:
            text = self._flag_re.sub(_mask_match, text)
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
    return _mask_match(m) if ENV_NAME.match(name) and is_secret_env_name(name) else m.group(0)


def _mask_match(m: re.Match[str]) -> str:
    value = m.group("val")
    bare = value.strip("'\"")
    if value == "None" or not bare or bare == MASK or env_reference(bare):
        return m.group(0)
    quote = value[0] if value[0] in "'\"" else ""
    return f"{m.group('opt')}{m.group('sep')}{quote}{MASK}{quote}"
