"""`--apply --target lws|skypilot`: with the engine's command (and, for kubectl, a cluster)
it is run on the written file; without, the exact command is printed and the exit is 0."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sglaunch.profiles import Profile, ProfileStore

ROOT = Path(__file__).resolve().parents[3]
SGLAUNCH = str(ROOT / ".venv" / "bin" / "sglaunch")
APPLY = ["--profile", "tp16", "--apply", "--no-oracle", "--gpu", "H100x8", "--target"]

_FAKE = f"""#!{sys.executable}
# records its argv; `kubectl cluster-info` answers FAKE_CLUSTER's exit code
import json, os, sys
if sys.argv[1:2] == ["cluster-info"]:
    sys.exit(int(os.environ.get("FAKE_CLUSTER", "0")))
with open(os.environ["FAKE_LOG"], "a") as f:
    f.write(json.dumps(sys.argv) + "\\n")
"""


def setup(tmp: Path, commands: tuple[str, ...]) -> dict[str, str]:
    ProfileStore().save(
        Profile(name="tp16", model="example:llama-3.1-8b", flags={"tp_size": 8}, nodes=2)
    )
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    for name in commands:
        (bin_dir / name).write_text(_FAKE)
        (bin_dir / name).chmod(0o755)
    return {
        **os.environ,
        "PATH": f"{bin_dir}:{os.path.dirname(sys.executable)}:/usr/bin:/bin",
        "FAKE_LOG": str(tmp / "calls.jsonl"),
    }


@pytest.mark.parametrize(
    ("target", "commands", "cluster", "runs"),
    [
        ("lws", ("kubectl",), "0", True),
        ("lws", ("kubectl",), "1", False),
        ("lws", (), "0", False),
        ("skypilot", ("sky",), "0", True),
        ("skypilot", (), "0", False),
    ],
)
def test_the_engine_runs_the_file_or_the_command_is_printed(
    tmp_path: Path, target: str, commands: tuple[str, ...], cluster: str, runs: bool
) -> None:
    env = setup(tmp_path, commands)
    env["FAKE_CLUSTER"] = cluster
    proc = subprocess.run(
        [SGLAUNCH, *APPLY, target], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    calls = (tmp_path / "calls.jsonl").read_text().splitlines() if runs else []
    if runs:
        assert len(calls) == 1
        argv = yaml.safe_load(calls[0])
        path = Path(argv[-1])
    else:
        assert not (tmp_path / "calls.jsonl").exists()
        argv = shlex.split(proc.stdout.strip())
        path = Path(argv[-1])
    assert argv[1:3] == (["apply", "-f"] if target == "lws" else ["launch", "-y"])
    docs = list(yaml.safe_load_all(path.read_text()))
    if target == "lws":
        assert docs[0]["kind"] == "LeaderWorkerSet"
    else:
        assert docs[0]["num_nodes"] == 2
