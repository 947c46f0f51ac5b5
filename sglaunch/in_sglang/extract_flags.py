"""Read every sglang server flag from sglang's own argparse parser, as JSON.

Runs under the *sglang* interpreter, by path:

    SGLANG_PYTHON sglaunch/in_sglang/extract_flags.py [--no-help] [-o FILE]

It imports nothing of sglaunch (only `sglang_import.py`, loaded by path) so it
works in any environment that has sglang. `--no-help` leaves sglang's help
sentences out: the bundled schema in this repository is facts only.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import re
import sys
from typing import Any

SCHEMA_VERSION = 1

_TYPE_NAMES = {
    "str": "str",
    "int": "int",
    "float": "float",
    "human_readable_int": "human_int",
    "loads": "json",
    "json_list_type": "json_list",
    "nullable_str": "nullable_str",
    "parse_cuda_graph_backend_arg": "cuda_graph_backend",
    "parse_cuda_graph_config_arg": "json_object",
}

_ACTIONS = {
    "_StoreAction": "store",
    "_StoreTrueAction": "store_true",
    "_StoreFalseAction": "store_false",
    "_StoreConstAction": "store_const",
    "BooleanOptionalAction": "boolean_optional",
    "DeprecatedStoreTrueAction": "store_true",
    "DeprecatedStoreConstAction": "store_const",
    "LoRAPathAction": "store",
    "_AppendAction": "append",
}


def _load_sibling(rel: str, name: str) -> Any:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), rel)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted(_jsonable(v) for v in value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if hasattr(value, "value") and isinstance(value.value, str | int | float):  # enums
        return value.value
    return str(value)


def _sections(fields_dir: str) -> dict[str, tuple[str, str]]:
    """field name -> (namespace, section title) from sglang's fields/*.py layout."""
    out: dict[str, tuple[str, str]] = {}
    header = re.compile(r"^\s*#\s*-{5,}\s*$")
    for fname in sorted(os.listdir(fields_dir)):
        if not fname.endswith(".py") or fname == "__init__.py":
            continue
        path = os.path.join(fields_dir, fname)
        with open(path, encoding="utf-8") as fh:
            source = fh.read()
        lines = source.splitlines()
        # A section title is a comment line directly after a "# -----" rule.
        titles: list[tuple[int, str]] = []
        for i in range(1, len(lines)):
            if header.match(lines[i - 1]) and lines[i].strip().startswith("#"):
                title = lines[i].strip().lstrip("#").strip()
                if title and not header.match(lines[i]):
                    titles.append((i + 1, title))
        tree = ast.parse(source)
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            ns = None
            for stmt in node.body:
                if (
                    isinstance(stmt, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "_NS_PATH" for t in stmt.targets)
                    and isinstance(stmt.value, ast.Constant)
                ):
                    ns = str(stmt.value.value)
            if ns is None:
                continue
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                    title = ""
                    for line_no, t in titles:
                        if line_no < stmt.lineno and line_no > node.lineno:
                            title = t
                    out[stmt.target.id] = (ns, title)
    return out


def extract(include_help: bool) -> dict[str, Any]:
    _load_sibling("sglang_import.py", "_sglaunch_sglang_import").prepare()
    import logging

    logging.disable(logging.WARNING)
    import sglang
    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    fields_dir = os.path.join(os.path.dirname(sglang.__file__), "srt", "arg_groups", "fields")
    sections = _sections(fields_dir) if os.path.isdir(fields_dir) else {}

    flags: list[dict[str, Any]] = []
    for action in parser._actions:
        if not action.option_strings or isinstance(action, argparse._HelpAction):
            continue
        cls = type(action).__name__
        kind = _ACTIONS.get(cls, "store")
        type_name = getattr(action.type, "__name__", None) if action.type else None
        if kind in ("store_true", "store_false", "boolean_optional"):
            vtype = "bool"
        elif kind == "store_const" and action.nargs == 0:
            vtype = "const"
        else:
            vtype = _TYPE_NAMES.get(type_name or "str", "str")
        ns, section = sections.get(action.dest, ("", ""))
        entry: dict[str, Any] = {
            "dest": action.dest,
            "options": list(action.option_strings),
            "action": kind,
            "type": vtype,
            "default": _jsonable(action.default),
            # a set of choices has no stable order: sort it so the output is reproducible
            "choices": _jsonable(
                action.choices
                if isinstance(action.choices, set | frozenset)
                else list(action.choices)
            )
            if action.choices is not None
            else None,
            "nargs": action.nargs if action.nargs not in (None, 0) else None,
            "required": bool(action.required),
            "namespace": ns,
            "section": section,
            "deprecated": cls.startswith("Deprecated"),
        }
        if cls == "DeprecatedStoreConstAction":
            entry["const"] = _jsonable(getattr(action, "const_value", None))
            entry["new_flag"] = getattr(action, "new_flag", None)
        elif cls == "DeprecatedStoreTrueAction":
            entry["new_flag"] = getattr(action, "new_flag", None)
        if type_name and type_name not in _TYPE_NAMES and vtype == "str":
            entry["type_name"] = type_name
        if include_help:
            entry["help"] = action.help if action.help != argparse.SUPPRESS else ""
        flags.append(entry)

    version = getattr(sglang, "__version__", None)
    if version is None:
        from importlib.metadata import version as _v

        version = _v("sglang")
    return {
        "schema_version": SCHEMA_VERSION,
        "sglang_version": version,
        "prog": parser.prog,
        "allow_abbrev": parser.allow_abbrev,
        "help_included": include_help,
        "flags": flags,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--no-help", action="store_true", help="leave sglang's help text out")
    ap.add_argument("-o", "--output", help="write here instead of stdout")
    args = ap.parse_args()
    data = extract(include_help=not args.no_help)
    text = json.dumps(data, indent=1, sort_keys=False) + "\n"
    if args.output:
        tmp = args.output + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, args.output)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
