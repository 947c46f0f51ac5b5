"""`--nodes N` on check and fit: one server over N machines, each with the --gpu preset."""

from __future__ import annotations

import json

import pytest

from sglaunch.cli.main import main
from sglaunch.exitcodes import ExitCode

SALA = "example:minicpm-sala"
LLAMA = "example:llama-3.1-8b"
GOOD = ["--tp", "16", "--nnodes", "2", "--dist-init-addr", "10.0.0.5:20000", "--host", "0.0.0.0"]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's usage errors
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_check_names_the_nodes_and_json_carries_them(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        [
            "check",
            "--model",
            LLAMA,
            "--gpu",
            "H100x8",
            "--nodes",
            "2",
            "--no-oracle",
            "--json",
            "--",
            *GOOD,
        ],
        capsys,
    )
    assert code == ExitCode.OK, err
    assert "2 nodes × 8× NVIDIA H100" in err
    data = json.loads(out)
    assert data["gpu"]["nodes"] == 2 and data["gpu"]["count"] == 8


def test_the_line_nnodes_sets_the_nodes_without_the_option(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(
        ["check", "--model", LLAMA, "--gpu", "H100x8", "--no-oracle", "--json", "--", *GOOD], capsys
    )
    assert code == ExitCode.OK
    assert json.loads(out)["gpu"]["nodes"] == 2


@pytest.mark.parametrize(
    ("argv", "code"),
    [
        # tried as a new user would: both gave "no findings" and hang at start-up
        (["--tp", "16", "--nnodes", "2", "--node-rank", "2"], "node-rank-range"),
        (["--tp", "16", "--nnodes", "2"], "dist-init-addr-missing"),
        ([*GOOD[:2], "--nnodes", "3", *GOOD[4:]], "nodes-mismatch"),
    ],
)
def test_check_rejects_what_would_hang(
    argv: list[str], code: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = run(
        [
            "check",
            "--model",
            LLAMA,
            "--gpu",
            "H100x8",
            "--nodes",
            "2",
            "--no-oracle",
            "--json",
            "--",
            *argv,
        ],
        capsys,
    )
    assert rc == ExitCode.VALIDATION, err
    assert code in [f["code"] for f in json.loads(out)["findings"] if f["severity"] == "error"]


@pytest.mark.parametrize("bad", ["0", "two", "5000"])
def test_a_bad_node_count_is_one_line_and_exit_2(
    bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for command in (["check"], ["fit"]):
        rc, out, err = run([*command, "--model", LLAMA, "--gpu", "H100x8", "--nodes", bad], capsys)
        assert rc == ExitCode.USAGE
        assert out == "" and len(err.strip().splitlines()) == 1 and "--nodes" in err


def test_nodes_without_apply_says_where_it_goes(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run(["--nodes", "2"], capsys)
    assert rc == ExitCode.USAGE and "--nodes goes with --apply" in err


def test_fit_plans_the_whole_world_and_lists_layouts_across_nodes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, err = run(
        ["fit", "--model", SALA, "--gpu", "H100x8", "--nodes", "2", "--json", "--", "--tp", "16"],
        capsys,
    )
    assert rc == ExitCode.OK, err
    assert "Layouts on 2 nodes × 8 GPUs" in err
    assert "2 nodes × 8× NVIDIA H100" in err
    data = json.loads(out)
    assert data["gpu"]["nodes"] == 2
    # the plan is the asked tp 16 over both nodes: the fit made the line span them, so
    # how the nodes would meet is not the plan's business
    assert data["line_ok"] is True
    assert any("2 nodes: per GPU of the whole world" in a for a in data["assumptions"])
    layouts = data["layouts"]
    one_server = [x for x in layouts if x["nodes"] == 2 and x["servers"] == 1]
    routed = [x for x in layouts if x["router"]]
    assert {(x["tp"], x["pp"]) for x in one_server} >= {(16, 1), (8, 2)}
    tp16 = next(x for x in one_server if x["tp"] == 16 and x["pp"] == 1)
    assert tp16["flags"]["nnodes"] == 2 and tp16["verdict"] != "does-not-fit"
    # weights per GPU under tp 16 are half of those under tp 8 on one node
    tp8 = next(x for x in routed if x["tp"] == 8 and x["dp"] == 1 and x["pp"] == 1)
    assert tp16["weights_bytes"] * 2 == pytest.approx(tp8["weights_bytes"], rel=0.05)
    # replicas across nodes are separate servers behind the router, never --dp-size
    assert routed and all(x["servers"] == 2 and "nnodes" not in x["flags"] for x in routed)
    assert "servers + router" in err and "sglang refuses --dp-size replicas across nodes" in err


def test_fit_lists_the_asked_layout_even_when_it_cannot_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, _err = run(
        [
            "fit",
            "--model",
            SALA,
            "--gpu",
            "H100x8",
            "--nodes",
            "2",
            "--json",
            "--",
            "--tp",
            "4",
            "--pp-size",
            "3",
        ],
        capsys,
    )
    assert rc == ExitCode.VALIDATION
    asked = [x for x in json.loads(out)["layouts"] if (x["tp"], x["pp"]) == (4, 3)]
    assert asked and "pp-stages-nodes" in asked[0]["blocking"]


def test_apply_here_refuses_nodes_its_line_would_not_span(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from sglaunch.profiles import Profile, ProfileStore

    ProfileStore().save(Profile(name="big", model=LLAMA, flags={"tp_size": 16}, nodes=1))
    rc, out, err = run(
        ["--profile", "big", "--apply", "--gpu", "H100x8", "--nodes", "2", "--no-oracle", "--json"],
        capsys,
    )
    # a launch here is one node: two are an engine's (--target) or one line per node
    assert rc == ExitCode.USAGE, err
    [line] = err.strip().splitlines()
    assert "spans 2 nodes" in line and "--target slurm, lws or skypilot" in line
    assert "profiles export big --format command" in line
    assert out == ""


def test_fit_without_parallel_sizes_plans_one_server_over_every_gpu(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, err = run(
        ["fit", "--model", LLAMA, "--gpu", "H100x8", "--nodes", "2", "--json"], capsys
    )
    assert rc == ExitCode.OK, err
    assert "planned as one server over the 2 nodes: --tp-size 16 --nnodes 2" in err
    assert "Memory plan per GPU (tp 16 · dp 1 · pp 1 · over 2 nodes): fits" in err
    assert json.loads(out)["line_ok"] is True
