"""List the model types sglang's HF config loading knows, as JSON.

Runs under the *sglang* interpreter, by path (it imports nothing of sglaunch):

    SGLANG_PYTHON sglaunch/in_sglang/extract_model_types.py [-o FILE]

Two lists: the model types transformers knows natively (CONFIG_MAPPING_NAMES of
the transformers that sglang pins) and the ones sglang registers itself
(`_CONFIG_REGISTRY`). A type in neither needs the checkpoint's own code, i.e.
`--trust-remote-code`. Facts only: names, no code.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys


def _prepare() -> None:
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sglang_import.py")
    spec = importlib.util.spec_from_file_location("_sglaunch_sglang_import", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    module.prepare()


def _entry_classes(models_dir: str) -> list[str]:
    """Architectures sglang implements natively: the `EntryClass` names in srt/models/*.py.

    Read from the source (ast), not by importing 200 model modules.
    """
    import ast

    names: set[str] = set()
    for fname in sorted(os.listdir(models_dir)):
        if not fname.endswith(".py"):
            continue
        with open(os.path.join(models_dir, fname), encoding="utf-8") as fh:
            try:
                tree = ast.parse(fh.read())
            except SyntaxError:
                continue
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "EntryClass" for t in node.targets
            ):
                value = node.value
                items = value.elts if isinstance(value, ast.List | ast.Tuple) else [value]
                for item in items:
                    if isinstance(item, ast.Name):
                        names.add(item.id)
                    elif isinstance(item, ast.Attribute):
                        names.add(item.attr)
    return sorted(names)


def extract() -> dict[str, object]:
    _prepare()
    import logging

    logging.disable(logging.WARNING)
    import sglang
    import transformers
    from sglang.srt.utils.hf_transformers.common import _CONFIG_REGISTRY
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    models_dir = os.path.join(os.path.dirname(sglang.__file__), "srt", "models")
    return {
        "sglang_version": getattr(sglang, "__version__", ""),
        "sglang_architectures": _entry_classes(models_dir),
        "transformers_version": transformers.__version__,
        "transformers_model_types": sorted(CONFIG_MAPPING_NAMES),
        "sglang_model_types": sorted(_CONFIG_REGISTRY),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("-o", "--output")
    args = ap.parse_args()
    text = json.dumps(extract(), indent=1) + "\n"
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
