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
    assert set(data) == MEMORY_KEYS | {"layouts", "versions", "findings", "ok", "line_ok", "gpu"}
    assert data["gpu"] == {
        "describe": "8× NVIDIA H100 80GB HBM3",
        "preset": "H100x8",
        "count": 8,
        "nodes": 1,
    }
    assert data["ok"] is True and data["line_ok"] is True
    assert not [f for f in data["findings"] if f["severity"] == "error"]
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


REJECTED_LINES = [
    # MiniCPM refuses DP attention (sglang raises before any memory is sized)
    (
        "example:minicpm-sala",
        "H100x4",
        ["--tp", "4", "--enable-dp-attention", "--dp-size", "4"],
        "minicpm-dp-attention",
    ),
    # 16 ranks on one GPU: the launch dies at the first rank past the last GPU
    ("example:llama-3.1-8b", "H100", ["--tp", "16"], "parallel-gpus"),
]


@pytest.mark.parametrize(("model", "gpu", "flags", "code"), REJECTED_LINES)
def test_a_line_check_rejects_is_rejected_by_fit_too(
    model: str, gpu: str, flags: list[str], code: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from sglaunch.cli.check import check_command

    out, err = io.StringIO(), io.StringIO()
    checked = check_command(
        model=model,
        sglang_tokens=flags,
        gpu_spec=gpu,
        as_json=True,
        use_oracle=False,
        env_pairs=None,
        sglang_python=None,
        oracle_timeout=5,
        out=out,
        err=err,
    )
    check_data = json.loads(out.getvalue())
    message = next(f["message"] for f in check_data["findings"] if f["code"] == code)

    code_json, out_json, _ = run(
        ["fit", "--model", model, "--gpu", gpu, "--json", "--", *flags], capsys
    )
    assert code_json == checked == ExitCode.VALIDATION
    data = json.loads(out_json)
    assert data["verdict"] == "rejected" and data["ok"] is False and data["line_ok"] is False
    # the same findings `check` reports, with their fixes
    assert data["findings"] == check_data["findings"]
    assert check_data["memory"]["verdict"] == "rejected"
    assert data["layouts"]  # the alternatives are still listed

    code_text, _, text = run(["fit", "--model", model, "--gpu", gpu, "--", *flags], capsys)
    assert code_text == ExitCode.VALIDATION
    header = next(ln for ln in text.splitlines() if ln.startswith("Memory plan per GPU"))
    assert header.endswith(f"): rejected: {message}") and "fits" not in header
    assert f"✗ error    {code}  {message}" in text
    fixes = next(f["fixes"] for f in check_data["findings"] if f["code"] == code)
    assert fixes and f"fix: {fixes[0]['label']}" in text


def test_an_accepted_line_that_fits_still_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        ["fit", "--model", "example:llama-3.1-8b", "--gpu", "H100x2", "--json", "--", "--tp", "2"],
        capsys,
    )
    data = json.loads(out)
    assert code == ExitCode.OK and data["ok"] is True and data["line_ok"] is True
    assert data["verdict"] in ("fits", "tight") and "rejected" not in err


def test_the_kv_cell_is_known_when_the_plan_does_not_fit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = ["fit", "--model", "example:llama-3.1-8b", "--gpu", "H100x1", "--json"]
    _, roomy_out, _ = run([*base, "--assume-free-gib", "60"], capsys)
    roomy = json.loads(roomy_out)
    code, out, err = run([*base, "--assume-free-gib", "5"], capsys)
    assert code == ExitCode.VALIDATION
    data = json.loads(out)
    assert data["verdict"] == "does-not-fit" and data["max_total_num_tokens"] is None
    # the cell is the model's and the flags', whatever the memory
    assert data["kv_cell_bytes"] == roomy["kv_cell_bytes"] and data["kv_cell_bytes"]
    assert data["kv_dtype"] == roomy["kv_dtype"] and data["page_size"] == roomy["page_size"]
    cell = next(ln for ln in err.splitlines() if ln.strip().startswith("KV cell"))
    assert f"{data['kv_cell_bytes']:g} B/token" in cell and data["kv_dtype"] in cell
    for layout in data["layouts"]:
        assert layout["kv_cell_bytes"] and layout["kv_dtype"] == data["kv_dtype"]

    from sglaunch.cli.check import check_command

    out_check = io.StringIO()
    check_command(
        model="example:llama-3.1-8b",
        sglang_tokens=["--mem-fraction-static", "0.1"],
        gpu_spec="H100x1",
        as_json=True,
        use_oracle=False,
        env_pairs=None,
        sglang_python=None,
        oracle_timeout=5,
        out=out_check,
        err=io.StringIO(),
    )
    memory = json.loads(out_check.getvalue())["memory"]
    assert memory["max_total_num_tokens"] is None
    assert memory["kv_cell_bytes"] == roomy["kv_cell_bytes"] and memory["kv_dtype"]


def test_layouts_count_tokens_per_replica_and_in_total(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        ["fit", "--model", "tests/data/models/deepseek-v2-lite", "--gpu", "H100x4", "--json"],
        capsys,
    )
    assert code == ExitCode.OK
    layouts = json.loads(out)["layouts"]
    for x in layouts:
        per = x["max_total_num_tokens"]
        assert x["kv_tokens_per_replica"] == per
        assert x["replicas"] == x["dp"] * x["attn_dp"]
        assert x["kv_tokens_total"] == per * x["replicas"]
        reqs = x["full_context_requests"]
        assert x["full_context_requests_total"] == reqs * x["replicas"]
    by = {(x["tp"], x["dp"], x["pp"], x["attn_dp"]): x for x in layouts}
    assert by[(1, 4, 1, 1)]["kv_tokens_total"] == 4 * by[(1, 4, 1, 1)]["kv_tokens_per_replica"]
    assert by[(4, 1, 1, 4)]["kv_tokens_total"] == 4 * by[(4, 1, 1, 4)]["kv_tokens_per_replica"]

    table = err[err.index("Layouts on 4 GPUs") :].splitlines()
    assert "KV tokens/replica" in table[1] and "KV tokens total" in table[1]
    rows = {tuple(int(c) for c in ln.split()[:4]): ln.split() for ln in table[2:] if ln.strip()}
    assert len(rows) == len(layouts)
    for key, cells in rows.items():
        x = by[key]
        # one format for every count: digits with thousands separators
        assert cells[7] == f"{x['kv_tokens_per_replica']:,}"
        assert cells[8] == f"{x['kv_tokens_total']:,}"
        assert cells[9] == f"{x['full_context_requests_total']:,}"
