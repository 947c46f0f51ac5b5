"""`sglaunch fit`: the plan and the layouts table, human and --json; exit codes; bad input."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from sglaunch.cli.main import main
from sglaunch.exitcodes import ExitCode

MEMORY_KEYS = {
    "verdict", "gpu_total_bytes", "baseline_free_bytes", "baseline_source", "weights_bytes",
    "weights_source", "mem_fraction_static", "mem_fraction_static_source", "reserved_mib",
    "chunked_prefill_size", "cuda_graph_max_bs", "kv_budget_bytes", "kv_cell_bytes", "kv_dtype",
    "page_size", "max_total_num_tokens", "usable_tokens", "max_running_requests", "slack_bytes",
    "tokens_per_gib", "assumptions",
}  # fmt: skip
DSV2 = "tests/data/models/deepseek-v2-lite"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_fit_json_is_the_memory_object_plus_layouts(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        ["fit", "--model", "example:minicpm-sala", "--gpu", "H100x8", "--json", "--", "--tp", "2"],
        capsys,
    )
    assert code == ExitCode.OK
    data = json.loads(out)
    assert set(data) == MEMORY_KEYS | {"layouts", "versions"}
    assert data["verdict"] == "fits" and data["baseline_source"] == "preset"
    assert data["mem_fraction_static_source"] == "default" and data["weights_source"] == "config"
    assert data["usable_tokens"] < data["max_total_num_tokens"]  # SALA's compressed-K reserve
    assert set(data["reserved_mib"]) >= {"constant", "activations", "parallel", "decode_cuda_graph"}
    layouts = data["layouts"]
    assert {(x["tp"], x["dp"], x["pp"], x["attn_dp"]) for x in layouts} >= {
        (8, 1, 1, 1),
        (2, 4, 1, 1),
        (1, 1, 1, 1),
    }
    assert all(set(x) >= MEMORY_KEYS for x in layouts)
    assert all(x["attn_dp"] == 1 for x in layouts)  # MiniCPM rejects DP attention
    assert "Layouts on 8 GPUs" in err and "Memory plan per GPU (tp 2" in err


def test_fit_offers_dp_attention_where_the_model_allows_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(
        ["fit", "--model", "tests/data/models/deepseek-v2-lite", "--gpu", "H100x4", "--json"],
        capsys,
    )
    assert code == ExitCode.OK
    adp = {(x["tp"], x["attn_dp"]) for x in json.loads(out)["layouts"]}
    assert (4, 4) in adp and (4, 2) in adp


@pytest.mark.parametrize(("release", "offered"), [("0.5.21", False), ("0.5.22", True)])
def test_fit_plans_for_the_named_release(
    release: str,
    offered: bool,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SGLAUNCH_SGLANG_PYTHON", raising=False)  # none installed: the named wins
    code, out, err = run(
        ["fit", "--model", DSV2, "--gpu", "H100x4", "--sglang-version", release, "--json"],
        capsys,
    )
    assert code == ExitCode.OK, err
    data = json.loads(out)
    assert f"for sglang {release} (named)" in err
    assert data["versions"]["checked_for"] == release
    # the start-up arithmetic is the release's own (its defaults where they differ)
    assert f"mirror of sglang {release}'s start-up arithmetic" in err
    # --attn-dp-size exists from 0.5.22: before it, attention DP is --enable-dp-attention --dp-size
    adp = [x for x in data["layouts"] if x["attn_dp"] > 1]
    assert adp and all(("attn_dp_size" in x["flags"]) is offered for x in adp)
    assert all(x["flags"].get("enable_dp_attention", False) is not offered for x in adp)


def test_fit_plans_for_the_installed_release(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # an interpreter that reports sglang 0.5.21 (the version probe only: fit reads no flags)
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\necho 0.5.21\n")
    python.chmod(0o755)
    monkeypatch.setenv("SGLAUNCH_SGLANG_PYTHON", str(python))
    code, out, err = run(
        ["fit", "--model", DSV2, "--gpu", "H100x4", "--json", "--sglang-version", "0.5.23"],
        capsys,
    )
    assert code == ExitCode.OK, err
    assert "for sglang 0.5.21 (installed)" in err
    assert "sglang 0.5.23 was named, but sglang 0.5.21 is installed" in err
    adp = [x for x in json.loads(out)["layouts"] if x["attn_dp"] > 1]
    assert adp and not any("attn_dp_size" in x["flags"] for x in adp)


def test_weights_that_do_not_fit_exit_one_with_the_fix(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        ["fit", "--model", "tests/data/models/qwen3-next-80b", "--gpu", "H100x4", "--json"], capsys
    )
    assert code == ExitCode.VALIDATION
    data = json.loads(out)
    assert data["verdict"] == "does-not-fit"
    fits = [x for x in data["layouts"] if x["verdict"] != "does-not-fit"]
    assert fits and all(x["tp"] * x["pp"] >= 4 for x in fits)
    assert "weights-exceed-gpu-memory" in err and "--tp-size 4" in err


def test_assume_free_gib_sets_the_baseline(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        [
            "fit",
            "--model",
            "example:llama-3.1-8b",
            "--gpu",
            "H100x1",
            "--assume-free-gib",
            "40",
            "--json",
        ],
        capsys,
    )
    assert code == ExitCode.OK
    data = json.loads(out)
    assert data["baseline_source"] == "assumed" and data["baseline_free_bytes"] == 40 << 30


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--assume-free-gib", "-3"], "give a positive number of GiB"),
        (["--assume-free-gib", "500"], "is more than the 79.6 GiB"),
        (["--assume-free-gib", "nan"], "give a positive number"),
        (["--gpu", "Z80x2"], "unknown GPU"),
    ],
)
def test_bad_input_is_one_line_exit_two(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        ["fit", "--model", "example:llama-3.1-8b", "--gpu", "H100x1", *argv], capsys
    )
    assert code == ExitCode.USAGE and out == ""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and fragment in lines[0]


def test_no_model_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["fit", "--gpu", "H100x1"], capsys)
    assert code == ExitCode.USAGE and "no model" in err


def test_check_json_has_the_memory_object() -> None:
    from sglaunch.cli.check import check_command

    out, err = io.StringIO(), io.StringIO()
    code = check_command(
        model="example:llama-3.1-8b",
        sglang_tokens=["--tp", "2", "--mem-fraction-static", "0.93"],
        gpu_spec="H100x8",
        as_json=True,
        use_oracle=False,
        env_pairs=None,
        sglang_python=None,
        oracle_timeout=5,
        out=out,
        err=err,
    )
    assert code == ExitCode.OK
    memory = json.loads(out.getvalue())["memory"]
    assert set(memory) == MEMORY_KEYS
    assert memory["mem_fraction_static"] == 0.93 and memory["mem_fraction_static_source"] == "flag"
    assert memory["verdict"] == "tight"  # the slack is below sglang's reserve
    assert "memory-slack-below-reserve" in err.getvalue()


@pytest.mark.parametrize(
    ("release", "spelling"),
    [("0.5.21", {"enable_dp_attention", "dp_size"}), ("0.5.22", {"attn_dp_size"})],
)
def test_dp_attention_layouts_are_spelled_as_the_release_spells_them(
    release: str, spelling: set[str]
) -> None:
    from dataclasses import replace

    from sglaunch.facts.model import load_model_facts
    from sglaunch.flags.schema import bundled_schema
    from sglaunch.session import LaunchSession
    from sglaunch.validators.engine import validate
    from sglaunch.validators.memory.layouts import plan_layouts
    from sglaunch.validators.memory.plan import plan_memory

    model = "tests/data/models/deepseek-v2-lite"
    session = LaunchSession(bundled_schema(release), planning_default="H100x4")
    session.set_sglang_version(release)
    session.request_model(model)
    assert session.model_loaded(model, load_model_facts(model))
    inp = session.check_input()
    adp = [x for x in plan_layouts(inp) if x.attn_dp > 1]
    assert {(x.tp, x.attn_dp) for x in adp} >= {(4, 4), (4, 2)}
    schema = bundled_schema(release)
    for layout in adp:
        flags = layout.flags()
        assert spelling <= set(flags) and all(dest in schema.by_dest for dest in flags)
        # the line that release accepts, and that it reads as this attention-DP layout
        fixed = replace(inp, flags={**inp.flags, **flags})
        assert not validate(fixed).errors, (release, flags)
        knobs = plan_memory(fixed).knobs
        assert (knobs.tp, knobs.dp, knobs.attn_dp) == (layout.tp, 1, layout.attn_dp)
