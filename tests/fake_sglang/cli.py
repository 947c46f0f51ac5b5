"""The stand-in's argument parser, built from the bundled flag schema like sglang's."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from fake_sglang.common import SCENARIO, SCHEMA_PATH

# --- the argument parser, from the bundled schema --------------------------------------


def _human_int(value: str) -> int:
    value = value.strip()
    units = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    for suffix in sorted(units, key=len, reverse=True):
        if value.endswith(suffix) and value[: -len(suffix)].replace(".", "", 1).isdigit():
            return int(float(value[: -len(suffix)]) * units[suffix])
    return int(value)


def _json_value(value: str) -> Any:
    return json.loads(value)


def _nullable_str(value: str) -> str | None:
    return None if not value or value == "None" else value


_TYPES: dict[str, Any] = {
    "int": int,
    "float": float,
    "human_int": _human_int,
    "json": _json_value,
    "json_list": _json_value,
    "json_object": _json_value,
    "nullable_str": _nullable_str,
}


def build_parser() -> argparse.ArgumentParser:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    parser = argparse.ArgumentParser(prog=schema.get("prog", "sglang serve"))
    for flag in schema["flags"]:
        options = list(flag["options"])
        kwargs: dict[str, Any] = {"dest": flag["dest"], "default": flag.get("default")}
        action = flag.get("action", "store")
        if action == "store_true":
            kwargs["action"] = "store_true"
        elif action == "store_false":
            kwargs["action"] = "store_false"
        elif action == "boolean_optional":
            kwargs["action"] = argparse.BooleanOptionalAction
            options = [o for o in options if not o.startswith("--no-")]
        else:
            if flag.get("type") in _TYPES:
                kwargs["type"] = _TYPES[flag["type"]]
            if flag.get("choices") is not None:
                kwargs["choices"] = flag["choices"]
            if flag.get("nargs") is not None:
                kwargs["nargs"] = flag["nargs"]
            if flag.get("nargs") == "?":
                kwargs["const"] = flag.get("const")
        if flag.get("required"):
            kwargs["required"] = True
        parser.add_argument(*options, **kwargs)
    return parser


def _config_args(path: str) -> list[str]:
    """sglang's --config merge for the flat YAML subset launch configs use."""
    out: list[str] = []
    text = Path(path).read_text(encoding="utf-8")
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip() or ":" not in line:
            continue
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip().strip("'\"")
        if value.lower() == "true":
            out.append(f"--{key}")
        elif value.lower() == "false":
            continue
        elif value.startswith("[") and value.endswith("]"):
            out.append(f"--{key}")
            out += [v.strip().strip("'\"") for v in value[1:-1].split(",") if v.strip()]
        else:
            out += [f"--{key}", value]
    return out


def parse_server_args(argv: list[str]) -> argparse.Namespace:
    parser = build_parser()
    if SCENARIO == "argparse_error":
        # Reproduce the real message: the model path is what people forget.
        cut: list[str] = []
        skip = False
        for tok in argv:
            if skip:
                skip = False
                continue
            head = tok.split("=", 1)[0]
            if head in ("--model-path", "--model"):
                skip = "=" not in tok
                continue
            cut.append(tok)
        argv = cut
    if "--config" in argv:
        i = argv.index("--config")
        if i + 1 < len(argv):
            try:
                argv = _config_args(argv[i + 1]) + argv
            except OSError as exc:
                parser.error(f"cannot read --config {argv[i + 1]}: {exc}")
    return parser.parse_args(argv)
