"""`sglaunch profiles export NAME --format command|slurm|lws|skypilot` for a multi-node
profile, through the CLI: data on stdout, `-o` written whole, and every refusal one line,
exit 2, with no file left behind."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from sglaunch.cli.main import main
from sglaunch.profiles import Profile, ProfileStore
from sglaunch.profiles.diff import diff


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = int(exc.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


def save(name: str = "big", nodes: int = 2) -> Profile:
    return ProfileStore().save(
        Profile(
            name=name,
            model="meta-llama/Llama-3.1-405B-Instruct",
            flags={"tp_size": 16},
            secrets={"api_key": "SGLANG_API_KEY"},
            nodes=nodes,
        )
    )


def test_command_prints_a_line_per_node_and_one_with_node_rank(
    capsys: pytest.CaptureFixture[str],
) -> None:
    save()
    rc, out, err = run(["profiles", "export", "big", "--format", "command"], capsys)
    assert (rc, err) == (0, "")
    lines = out.splitlines()
    assert [shlex.split(ln)[shlex.split(ln).index("--node-rank") + 1] for ln in lines] == ["0", "1"]
    rc, out, _ = run(
        ["profiles", "export", "big", "--format", "command", "--node-rank", "1"], capsys
    )
    assert rc == 0 and out == lines[1] + "\n"
    rc, out, _ = run(["profiles", "show", "big"], capsys)
    assert rc == 0 and out.rstrip("\n").endswith(lines[1])


@pytest.mark.parametrize("fmt", ["slurm", "lws", "skypilot"])
def test_engine_formats_write_whole_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fmt: str
) -> None:
    save()
    target = tmp_path / f"out.{fmt}"
    rc, out, err = run(["profiles", "export", "big", "--format", fmt, "-o", str(target)], capsys)
    assert (rc, out) == (0, "") and "wrote" in err
    text = target.read_text()
    if fmt == "slurm":
        assert text.startswith("#!/bin/bash\n") and target.stat().st_mode & 0o100
    else:
        assert all(doc for doc in yaml.safe_load_all(text))
    assert "sk-" not in text


@pytest.mark.parametrize(
    ("args", "nodes", "expected"),
    [
        (["--format", "slurm"], 1, "nodes = 1"),
        (["--format", "lws"], 1, "nodes = 1"),
        (["--format", "skypilot"], 1, "nodes = 1"),
        (["--format", "command", "--node-rank", "0"], 1, "nodes = 1"),
        (["--format", "command", "--node-rank", "2"], 2, "use a rank from 0 to 1"),
        (["--format", "lws", "--image", "sglang\nimage: evil"], 2, "not a container image"),
        (["--format", "slurm", "--node-rank", "1"], 2, "drop --node-rank"),
        (["--format", "slurm", "--image", "a/b:c"], 2, "--image is for --format lws"),
        (["--format", "slurm", "--python", "py thon"], 2, "is not an interpreter"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    args: list[str],
    nodes: int,
    expected: str,
) -> None:
    save(nodes=nodes)
    target = tmp_path / "out"
    rc, out, err = run(["profiles", "export", "big", *args, "-o", str(target)], capsys)
    assert rc == 2 and out == ""
    [line] = err.strip().splitlines()
    assert expected in line and "Traceback" not in err
    assert not target.exists() and list(tmp_path.iterdir()) == []


def test_diff_names_a_change_of_nodes() -> None:
    a, b = save("a", nodes=1), save("b", nodes=2)
    assert [(d.key, d.old, d.new) for d in diff(a, b) if d.key == "nodes"] == [("nodes", 1, 2)]


def test_an_imported_line_with_nnodes_is_a_multi_node_profile(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = (
        "python -m sglang.launch_server --model-path /m --tp 16 --nnodes 2 --node-rank 1 "
        "--dist-init-addr 10.0.0.1:5000"
    )
    rc, _, _ = run(["profiles", "import", line, "--name", "two"], capsys)
    assert rc == 0 and ProfileStore().load("two").nodes == 2
    rc, out, _ = run(["profiles", "export", "two", "--format", "command"], capsys)
    ranks = [shlex.split(ln)[shlex.split(ln).index("--node-rank") + 1] for ln in out.splitlines()]
    assert rc == 0 and ranks == ["0", "1"] and "10.0.0.1:5000" in out
