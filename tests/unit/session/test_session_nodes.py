"""The session's topology: N nodes, each with the chosen GPUs; chosen, or read from the line."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sglaunch.errors import UserError
from sglaunch.facts.model import load_model_facts
from sglaunch.flags.schema import bundled_schema
from sglaunch.session import LaunchSession

LLAMA = "example:llama-3.1-8b"
LINE = [
    "--model-path",
    "m",
    "--tp",
    "16",
    "--dist-init-addr",
    "10.0.0.5:20000",
    "--host",
    "0.0.0.0",
]


def session(argv: list[str]) -> LaunchSession:
    s = LaunchSession(bundled_schema())
    s.choose_preset("H100x8")
    s.load_argv(argv)
    s.request_model(LLAMA)
    assert s.model_loaded(LLAMA, load_model_facts(LLAMA))
    return s


def test_one_node_unless_chosen_or_the_line_says() -> None:
    s = session(LINE)
    assert s.nodes == 1 and s.gpu.nodes == 1
    assert not s.gpu.describe().startswith("1 nodes")


def test_the_line_nnodes_is_the_topology_when_none_is_chosen() -> None:
    s = session([*LINE, "--nnodes", "2"])
    assert s.nodes == 2 and not s.nodes_chosen
    assert s.gpu.describe() == "2 nodes × 8× NVIDIA H100 80GB HBM3"
    assert s.check_input().gpu.nodes == 2
    # the GPUs stay one node's
    assert s.gpu.count == 8
    assert "nodes-mismatch" not in s.report.codes()


def test_choosing_nodes_revalidates_and_the_status_names_them() -> None:
    s = session([*LINE, "--nnodes", "2"])
    revision = s.revision
    report = s.set_nodes(4)
    assert s.revision > revision
    assert s.gpu.nodes == 4 and "4 nodes × 8× " in s.gpu.status
    (f,) = [f for f in report.findings if f.code == "nodes-mismatch"]
    assert "--nnodes 2" in f.message and "4 nodes × 8×" in f.message
    # back to the line's own count
    s.set_nodes(None)
    assert s.nodes == 2 and "nodes-mismatch" not in s.report.codes()


@pytest.mark.parametrize("bad", [0, -1, 100_000])
def test_a_node_count_no_deployment_has_is_refused(bad: int) -> None:
    s = session(LINE)
    with pytest.raises(UserError, match="nodes must be from 1 to"):
        s.set_nodes(bad)
    assert s.nodes == 1


def test_the_profile_carries_the_nodes_both_ways() -> None:
    s = session([*LINE, "--nnodes", "2"])
    s.set_nodes(2)
    profile = s.to_profile("big")
    assert profile.nodes == 2
    again = LaunchSession.from_profile(profile, bundled_schema())
    assert again.nodes == 2 and again.nodes_chosen
    assert not again.dirty
    again.set_nodes(3)
    assert again.dirty
    # a one-node profile leaves the count to its line (profiles saved before `nodes`)
    old = LaunchSession.from_profile(replace(profile, nodes=1), bundled_schema())
    assert old.nodes == 2 and not old.nodes_chosen


def test_the_other_rank_is_a_worker_for_the_head_and_the_head_for_a_worker() -> None:
    assert session(LINE).other_rank() is None
    head = session([*LINE, "--nnodes", "2"])
    assert head.other_rank() == 1
    argv = head.rank_argv(1)
    assert argv[argv.index("--node-rank") + 1] == "1"
    assert "--node-rank" not in head.argv()
    worker = session([*LINE, "--nnodes", "2", "--node-rank", "1"])
    assert worker.other_rank() == 0
    assert worker.rank_argv(0)[worker.rank_argv(0).index("--node-rank") + 1] == "0"


def test_nodes_chosen_in_an_editor_are_the_lines_nnodes() -> None:
    s = session(["--model-path", "m", "--tp", "16"])
    s.choose_nodes(2)
    assert s.nodes == 2 and s.flags["nnodes"] == 2
    codes = {f.code for f in s.report.findings}
    # what `sglaunch check -- --tp 16 --nnodes 2` says of the line, not a mismatch
    assert "dist-init-addr-missing" in codes and "nodes-mismatch" not in codes
    s.set_flag("node_rank", 1)
    s.choose_nodes(1)
    assert s.nodes == 1 and "nnodes" not in s.flags and "node_rank" not in s.flags
    with pytest.raises(UserError, match="--nodes"):
        s.choose_nodes(0)
