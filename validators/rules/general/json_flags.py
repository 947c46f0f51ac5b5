"""JSON in a flag that sglang's parser keeps as a string and decodes later.

`--json-model-override-args` and `--model-loader-extra-config` are plain strings to argparse
(their default is "{}"); sglang decodes them while it builds the model config
(srt/configs/model_config.py:612, `json.loads(model_override_args)`), so a value a shell
stripped of its double quotes (`{rope_scaling:{type:yarn}}`) ends in a bare JSONDecodeError
that names no flag. This rule names it before sglang does, and how to quote it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from sglaunch.validators.cards import card
from sglaunch.validators.facts import CheckInput
from sglaunch.validators.findings import Finding, Fix, Severity
from sglaunch.validators.rule import rule

CODE = "invalid-json-flag"
REF = "srt/configs/model_config.py:612 (json.loads of the override)"
# always JSON, whatever the schema's default says
ALWAYS = frozenset({"json_model_override_args", "model_loader_extra_config"})
_MAX_LEN = 20_000  # bounded work: a longer value is left to sglang
_BARE_KEY = re.compile(r"([{,]\s*)([A-Za-z_][\w.\-]*)\s*:")
_BARE_VALUE = re.compile(r"(:\s*|[\[,]\s*)([A-Za-z_][\w.\-]*)(\s*[,}\]])")
_LITERALS = frozenset({"true", "false", "null"})


def json_flags(inp: CheckInput) -> list[str]:
    """The string flags sglang decodes as JSON: those above, and any whose default is {} or []."""
    found = [d for d, v in inp.defaults.items() if isinstance(v, str) and v in ("{}", "[]")]
    return sorted(set(found) | ALWAYS)


def repaired(text: str) -> str | None:
    """`{rope_scaling:{type:yarn,factor:4}}` with its quotes put back, when that parses."""
    out = _BARE_KEY.sub(lambda m: f'{m.group(1)}"{m.group(2)}":', text)
    for _ in range(2):  # adjacent bare values share a delimiter: a second pass gets the rest
        out = _BARE_VALUE.sub(
            lambda m: (
                m.group(0) if m.group(2) in _LITERALS else f'{m.group(1)}"{m.group(2)}"{m.group(3)}'
            ),
            out,
        )
    try:
        value = json.loads(out)
    except (ValueError, RecursionError):
        return None
    return json.dumps(value, separators=(",", ":")) if isinstance(value, dict | list) else None


def shell_quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


@rule(CODE, summary="a JSON-valued flag does not hold valid JSON", mirrors="config", ref=REF)
def invalid_json_flag(inp: CheckInput) -> Iterator[Finding]:
    for dest in json_flags(inp):
        value = inp.flags.get(dest)
        if not isinstance(value, str) or not value.strip() or len(value) > _MAX_LEN:
            continue
        try:
            json.loads(value)
            continue
        except RecursionError:
            continue
        except ValueError as exc:
            problem = str(exc)
        name = inp.cli_names.get(dest, "--" + dest.replace("_", "-"))
        fixed = repaired(value)
        fixes = (
            (Fix(label="put back the double quotes the shell removed", set={dest: fixed}),)
            if fixed
            else ()
        )
        yield Finding(
            code=CODE,
            severity=Severity.ERROR,
            message=f"{name} is not valid JSON ({problem}): {value[:60]!r}",
            flags=(dest,),
            fixes=fixes,
            ref=REF,
            detail=(
                "In a shell, put the JSON in single quotes so the double quotes reach sglang: "
                + (
                    f"{name} {shell_quoted(fixed)}."
                    if fixed
                    else f'{name} \'{{"rope_scaling": {{"type": "yarn"}}}}\'.'
                )
            ),
        )


card(
    CODE,
    "A JSON-valued flag does not hold valid JSON",
    what=(
        "Some of sglang's flags take a JSON object as a string (--json-model-override-args, "
        "--model-loader-extra-config). argparse keeps the text as it is; sglang decodes it "
        "later, while building the model config, and a bad value stops it with a bare "
        "JSONDecodeError (`Expecting property name enclosed in double quotes`) that names no "
        'flag. The usual cause is the shell: unquoted, `{"rope_scaling": ...}` reaches sglang '
        "as `{rope_scaling: ...}`, without its double quotes."
    ),
    when=(
        "While sglang builds the model config (srt/configs/model_config.py:612), after its "
        "arguments parse and before any weights load."
    ),
    solutions=(
        "Wrap the whole JSON in single quotes in the shell: "
        '--json-model-override-args \'{"rope_scaling": {"type": "yarn", "factor": 4.0}}\'.',
        "In a TOML profile or the TUI, write the JSON itself: keys and strings in double quotes.",
        "Check the JSON with `python -m json.tool` before launching.",
    ),
    before="sglang serve --model-path m --json-model-override-args {rope_scaling:{type:yarn}}",
    after='sglang serve --model-path m --json-model-override-args \'{"rope_scaling":{"type":"yarn"}}\'',
    # json.loads's own words, as sglang's JSONDecodeError carries them
    patterns=(
        r"^Expecting (property name enclosed in double quotes|value|',' delimiter|':' delimiter)"
        r": line \d+ column \d+",
        r"^(Extra data|Unterminated string starting at|Invalid control character at"
        r"|Invalid \\escape): line \d+ column \d+",
    ),
    ref=REF,
    stage="config",
)
