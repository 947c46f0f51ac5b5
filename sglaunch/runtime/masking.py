"""Keep API keys out of run directories, logs and the screen.

sglang prints its resolved arguments, api_key included, in the `server_args=` line, and
/server_info echoes the launch command; so masking covers argv and every captured line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from sglaunch.flags.schema import FlagSchema

SECRET_DESTS = ("api_key", "admin_api_key")
MASK = "***"
# A secret this short would blank ordinary words if replaced everywhere; argv and the
# `server_args=` dict are still masked by position, whatever the length.
MIN_FREE_TEXT_LEN = 6
_DICT_ITEM = re.compile(r"('(?:admin_)?api_key': )'(?:[^'\\]|\\.)*'")


def _secret_dest(token: str, schema: FlagSchema) -> str | None:
    """The secret dest an option token names, honouring argparse abbreviations."""
    if not token.startswith("--"):
        return None
    head = token.split("=", 1)[0]
    spec = schema.by_option.get(head)
    if spec is None and schema.allow_abbrev:
        matches = {s.dest for opt, s in schema.by_option.items() if opt.startswith(head)}
        spec = schema.get(matches.pop()) if len(matches) == 1 else None
    return spec.dest if spec is not None and spec.dest in SECRET_DESTS else None


def secret_values(argv: Sequence[str], schema: FlagSchema) -> list[str]:
    out: list[str] = []
    for i, tok in enumerate(argv):
        if _secret_dest(tok, schema) is None:
            continue
        if "=" in tok:
            out.append(tok.split("=", 1)[1])
        elif i + 1 < len(argv):
            out.append(argv[i + 1])
    return [s for s in out if s]


def mask_argv(argv: Sequence[str], schema: FlagSchema) -> list[str]:
    out: list[str] = []
    hide_next = False
    for tok in argv:
        if hide_next:
            out.append(MASK)
            hide_next = False
            continue
        if _secret_dest(tok, schema) is not None:
            if "=" in tok:
                out.append(tok.split("=", 1)[0] + "=" + MASK)
            else:
                out.append(tok)
                hide_next = True
            continue
        out.append(tok)
    return out


class Masker:
    """Replaces known secret values, and the api keys in sglang's `server_args=` dict."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self.secrets = sorted(
            {s for s in secrets if len(s) >= MIN_FREE_TEXT_LEN}, key=len, reverse=True
        )

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        if "api_key': '" in text:
            text = _DICT_ITEM.sub(rf"\1'{MASK}'", text)
        return text
