"""`--apply --target lws|skypilot`: with the engine's command (and, for kubectl, a cluster)
it is run on the written file; without, the exact command is printed and the exit is 0."""

from __future__ import annotations

import json
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


def apply(tmp: Path, profile: Profile, args: list[str]) -> subprocess.CompletedProcess[str]:
    env = setup(tmp, ())
    ProfileStore().save(profile)
    env["SGLAUNCH_API_KEY"] = "not-a-real-key"
    return subprocess.run(
        [SGLAUNCH, "--profile", profile.name, "--apply", "--no-oracle", "--gpu", "H100x8", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("target", ["lws", "skypilot"])
def test_the_check_is_of_the_line_the_engine_runs_with_its_rendezvous_and_host(
    tmp_path: Path, target: str
) -> None:
    # no --dist-init-addr and no --host: the export fills both in from the engine
    mn = Profile(
        name="mn", model="example:llama-3.1-8b", flags={"tp_size": 16, "nnodes": 2}, nodes=2
    )
    proc = apply(tmp_path, mn, ["--target", target])
    assert proc.returncode == 0, proc.stderr
    assert "dist-init-addr-missing" not in proc.stderr
    assert "multinode-host-loopback" not in proc.stderr
    assert Path(shlex.split(proc.stdout.strip())[-1]).exists()


def test_nodes_on_an_engine_apply_is_the_nodes_of_the_engine_launch(tmp_path: Path) -> None:
    one = Profile(name="one", model="example:llama-3.1-8b", flags={"tp_size": 16})
    proc = apply(tmp_path, one, ["--target", "skypilot", "--nodes", "2"])
    assert proc.returncode == 0, proc.stderr
    # tp 16 over 2 nodes of 8, on a line with --nnodes 2: neither a mismatch nor too few GPUs
    assert "nodes-mismatch" not in proc.stderr and "parallel-gpus" not in proc.stderr
    task = yaml.safe_load(Path(shlex.split(proc.stdout.strip())[-1]).read_text())
    assert task["num_nodes"] == 2 and "--nnodes 2" in task["run"]


def test_engine_files_are_no_run_of_runs_list(tmp_path: Path) -> None:
    proc = apply(
        tmp_path,
        Profile(name="eight", model="example:llama-3.1-8b", flags={"tp_size": 8}, nodes=2),
        ["--target", "lws"],
    )
    assert proc.returncode == 0, proc.stderr
    listed = subprocess.run(
        [SGLAUNCH, "runs", "list", "--json"], capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == []


def test_the_printed_sky_command_passes_each_secret_as_the_header_says(tmp_path: Path) -> None:
    secret = Profile(
        name="sec",
        model="example:llama-3.1-8b",
        flags={"tp_size": 8},
        secrets={"api_key": "SGLAUNCH_API_KEY"},
        nodes=2,
    )
    proc = apply(tmp_path, secret, ["--target", "skypilot"])
    assert proc.returncode == 0, proc.stderr
    argv = shlex.split(proc.stdout.strip())
    assert argv[:2] == ["sky", "launch"]
    assert argv[argv.index("--secret") + 1] == "SGLAUNCH_API_KEY"
    assert "--secret SGLAUNCH_API_KEY" in Path(argv[-1]).read_text().splitlines()[1]


def test_a_fix_saved_on_an_engine_apply_keeps_the_profiles_own_node_flags(tmp_path: Path) -> None:
    bad = Profile(
        name="fixme",
        model="example:llama-3.1-8b",
        flags={"tp_size": 16, "nnodes": 2, "served_model_name": "llama3:8b"},
        nodes=2,
    )
    proc = apply(tmp_path, bad, ["--target", "skypilot", "--fix", "--save"])
    assert proc.returncode == 0, proc.stderr
    saved = ProfileStore().load("fixme")
    # the fix is kept; the rendezvous, rank and host the check borrowed from the engine are not
    assert saved.flags == {"tp_size": 16, "nnodes": 2, "served_model_name": "llama3-8b"}
