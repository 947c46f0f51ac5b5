"""Stand-in sglang interpreters that report a release sglaunch does not mirror (or a broken one).

A stub answers the version probe (`python -c ...`) with its version, the flag
extractor (`python .../extract_flags.py -o FILE`) with a schema file, and the oracle
worker (`python .../oracle_worker.py`) with the worker's hello, then exits: enough for
`check`, `--apply` and the oracle to take it for that sglang.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from tests.support.oracle_models import fake_python

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "sglaunch" / "flags" / "data"


def schema_as(version: str, folder: Path, like: str = "0.5.19") -> Path:
    """A flag schema that says it is `version`'s: a bundled one, relabelled."""
    data = json.loads((BUNDLED / f"schema-{like}.json").read_text(encoding="utf-8"))
    data["sglang_version"] = version
    path = folder / f"schema-{version}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def stub_sglang(folder: Path, version: str, *, schema: Path | None = None) -> str:
    """An interpreter that is sglang `version`; without `schema` reading its flags fails."""
    folder.mkdir(parents=True, exist_ok=True)
    hello = json.dumps({"event": "hello", "protocol": 1, "sglang_version": version})
    extract = (
        f'cp {shlex.quote(str(schema))} "$3"'
        if schema is not None
        else 'echo "ImportError: cannot import name resolve_once" >&2; exit 1'
    )
    body = (
        'case "$1" in\n'
        f"  -c) echo {shlex.quote(version)};;\n"
        f"  *extract_flags.py) {extract};;\n"
        f"  *oracle_worker.py) echo {shlex.quote(hello)}; echo 'no GPU emulation here' >&2; exit 4;;\n"
        "  *) exit 1;;\n"
        "esac"
    )
    return fake_python(folder, "python", body)
