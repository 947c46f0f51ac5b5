"""Run under the sglang interpreter: parse --config files with sglang's own merger and parser.

Reads a JSON list of jobs on stdin, [{"argv": [...], "fields": [...]}], and prints one
JSON object: {"results": [{"fields": {...}} | {"error": "..."}], "unsupported": [...],
"store_true": [...]} — the last two are the keys sglang's ConfigArgumentMerger refuses
and the ones it treats as store_true. Standard library and sglang only.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import sys
from pathlib import Path


def main() -> None:
    shim = Path(__file__).resolve().parents[2] / "sglaunch" / "in_sglang" / "sglang_import.py"
    spec = importlib.util.spec_from_file_location("_sglaunch_sglang_import", shim)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.prepare()

    from sglang.srt.server_args import ServerArgs, prepare_server_args
    from sglang.srt.utils.server_args_config_parser import ConfigArgumentMerger

    jobs = json.load(sys.stdin)
    results = []
    for job in jobs:
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err):
                args = prepare_server_args(job["argv"])
            results.append({"fields": {f: getattr(args, f, "<missing>") for f in job["fields"]}})
        except SystemExit as exc:
            last = [line for line in err.getvalue().splitlines() if line.strip()][-1:]
            results.append({"error": f"exit {exc.code}: {' '.join(last)}"})
        except Exception as exc:
            results.append({"error": f"{type(exc).__name__}: {exc}"})

    parser = argparse.ArgumentParser(prog="sglang serve")
    ServerArgs.add_cli_args(parser)
    merger = ConfigArgumentMerger(parser)
    print(
        json.dumps(
            {
                "results": results,
                "unsupported": sorted(merger.unsupported_actions),
                "store_true": sorted(set(merger.store_true_actions)),
            },
            default=str,
        )
    )


if __name__ == "__main__":
    main()
