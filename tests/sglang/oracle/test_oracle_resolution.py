"""sglang's real resolution through the warm oracle, with the GPU emulated."""

from __future__ import annotations

from pathlib import Path

import pytest

from sglaunch.oracle import Oracle, oracle_findings
from sglaunch.validators.facts import GpuFacts, GpuMode
from sglaunch.validators.findings import Severity

pytestmark = pytest.mark.oracle

MINICPM_DP = "srt/arg_groups/model_overrides/minicpm.py:18"


def test_canary_proves_the_emulation(oracle: Oracle) -> None:
    status = oracle.status
    assert status.available, status.reason
    assert status.sglang_version == "0.5.23"
    assert status.reason == ""
    assert status.import_s is not None and status.import_s > 0
    assert oracle.worker_pid is not None


def test_minicpm_dp_attention_error_with_file_and_line(
    oracle: Oracle, models: dict[str, Path], h100x2: GpuFacts
) -> None:
    argv = ["--model-path", str(models["minicpm"]), "--attn-dp-size", "2", "--tp-size", "2"]
    answer = oracle.resolve(argv, {}, h100x2)
    assert answer.answered and not answer.ok
    assert answer.error is not None
    assert answer.error.type == "ValueError"
    assert answer.error.message == "MiniCPM does not support DP attention"
    assert answer.error.where == MINICPM_DP
    assert answer.error.stage == "resolve"
    assert answer.resolved is None

    [finding] = [f for f in oracle_findings(answer) if f.severity is Severity.ERROR]
    assert finding.code == "minicpm-dp-attention"  # the catalogue card's code
    assert finding.source == f"sglang:{MINICPM_DP}"
    assert finding.message == "MiniCPM does not support DP attention"


def test_deprecated_dp_attention_spelling_is_translated_then_rejected(
    oracle: Oracle, models: dict[str, Path], h100x2: GpuFacts
) -> None:
    argv = [
        "--model-path",
        str(models["minicpm"]),
        "--enable-dp-attention",
        "--dp",
        "2",
        "--tp",
        "2",
    ]
    answer = oracle.resolve(argv, {}, h100x2)
    assert answer.error is not None
    assert answer.error.message == "MiniCPM does not support DP attention"
    # step 1 warns about the deprecated spelling before the provider rejects it
    assert any("enable-dp-attention" in w or "attn-dp-size" in w for w in answer.warnings), (
        answer.warnings
    )


def test_dp_replicas_alone_are_accepted(
    oracle: Oracle, models: dict[str, Path], h100x2: GpuFacts
) -> None:
    answer = oracle.resolve(["--model-path", str(models["minicpm"]), "--dp-size", "2"], {}, h100x2)
    assert answer.ok, answer.error
    assert answer.resolved is not None
    assert answer.resolved["dp_size"] == 2
    assert answer.resolved["attn_dp_size"] == 1


def test_gpu_emulation_picks_the_attention_backend(
    oracle: Oracle, models: dict[str, Path], h100x1: GpuFacts, b200x1: GpuFacts
) -> None:
    argv = ["--model-path", str(models["minicpm"])]
    on_h100 = oracle.resolve(argv, {}, h100x1)
    on_b200 = oracle.resolve(argv, {}, b200x1)
    assert on_h100.ok and on_b200.ok, (on_h100.error, on_b200.error)
    assert on_h100.resolved is not None and on_b200.resolved is not None
    assert on_h100.resolved["attention_backend"] == "fa3"
    assert on_b200.resolved["attention_backend"] == "trtllm_mha"
    assert on_h100.resolved["page_size"] == 1
    assert on_b200.resolved["page_size"] == 64
    # mem_fraction_static comes from the emulated GPU memory
    assert on_h100.resolved["mem_fraction_static"] == pytest.approx(0.83)
    assert on_b200.resolved["mem_fraction_static"] == pytest.approx(0.854)


def test_sala_sparse_backend_follows_the_gpu(
    oracle: Oracle, models: dict[str, Path], h100x1: GpuFacts, b200x1: GpuFacts
) -> None:
    argv = ["--model-path", str(models["sala"])]
    on_h100 = oracle.resolve(argv, {}, h100x1)
    on_b200 = oracle.resolve(argv, {}, b200x1)
    assert on_h100.ok and on_b200.ok, (on_h100.error, on_b200.error)
    assert on_h100.changed["attention_backend"] == (None, "minicpm_flashattn")
    assert on_b200.changed["attention_backend"] == (None, "minicpm_flashinfer")
    assert on_h100.changed["disable_radix_cache"] == (False, True)


def test_force_dense_env_maps_sparse_backends_to_dense(
    oracle: Oracle, models: dict[str, Path], h100x1: GpuFacts, b200x1: GpuFacts
) -> None:
    argv = ["--model-path", str(models["sala"]), "--attention-backend", "minicpm_flashattn"]
    dense = {"SGLANG_MINICPM_FORCE_DENSE": "1"}
    on_h100 = oracle.resolve(argv, dense, h100x1)
    on_b200 = oracle.resolve(argv, dense, b200x1)
    sparse = oracle.resolve(argv, {}, h100x1)
    assert on_h100.resolved is not None and on_b200.resolved is not None
    assert on_h100.resolved["attention_backend"] == "fa3"
    assert on_b200.resolved["attention_backend"] == "fa4"
    # each request gets a fresh process: the env of the previous one is gone
    assert sparse.resolved is not None
    assert sparse.resolved["attention_backend"] == "minicpm_flashattn"


def test_changed_fields_become_override_findings(
    oracle: Oracle, models: dict[str, Path], h100x1: GpuFacts
) -> None:
    argv = [
        "--model-path",
        str(models["sala"]),
        "--attention-backend",
        "minicpm_flashattn",
        "--tp",
        "1",
    ]
    answer = oracle.resolve(argv, {"SGLANG_MINICPM_FORCE_DENSE": "yes"}, h100x1)
    assert answer.ok, answer.error
    assert answer.changed["attention_backend"] == ("minicpm_flashattn", "fa3")
    assert "attention_backend" in answer.explicit
    assert "tp_size" in answer.explicit  # --tp is argparse's prefix of --tp-size
    assert "random_seed" in answer.changed  # kept in the answer ...
    messages = {f.override.field: f.message for f in oracle_findings(answer) if f.override}
    assert "random_seed" not in messages  # ... but not an override finding
    assert messages["attention_backend"] == (
        "sglang will set attention_backend=fa3 (you asked for minicpm_flashattn)"
    )
    assert (
        messages["disable_radix_cache"]
        == "sglang will set disable_radix_cache=true (you left it unset)"
    )
    assert all(f.severity is Severity.OVERRIDE for f in oracle_findings(answer))


def test_argparse_errors_come_back_with_argparse_message(
    oracle: Oracle, models: dict[str, Path], h100x1: GpuFacts
) -> None:
    bad_value = oracle.resolve(
        ["--model-path", str(models["minicpm"]), "--tp-size", "two"], {}, h100x1
    )
    assert bad_value.error is not None
    assert bad_value.error.type == "SystemExit"
    assert bad_value.error.exit_code == 2
    assert bad_value.error.stage == "parse"
    assert (
        bad_value.error.message
        == "argument --tp-size/--tensor-parallel-size: invalid int value: 'two'"
    )

    ambiguous = oracle.resolve(["--model-path", str(models["minicpm"]), "--pp", "2"], {}, h100x1)
    assert ambiguous.error is not None
    assert ambiguous.error.message.startswith("ambiguous option: --pp could match --pp-size")
    [finding] = oracle_findings(ambiguous)
    assert finding.severity is Severity.ERROR
    assert finding.source.startswith("sglang:srt/server_args.py:")


def test_without_a_gpu_sglang_says_so(oracle: Oracle, models: dict[str, Path]) -> None:
    answer = oracle.resolve(
        ["--model-path", str(models["minicpm"])], {}, GpuFacts(mode=GpuMode.PLANNING)
    )
    assert answer.error is not None
    assert "No accelerator" in answer.error.message
    [finding] = oracle_findings(answer)
    assert finding.code == "sglang-error"
    assert finding.source.startswith("sglang:srt/")


def test_answers_are_json_safe(oracle: Oracle, models: dict[str, Path], b200x1: GpuFacts) -> None:
    import json

    answer = oracle.resolve(["--model-path", str(models["sala"])], {}, b200x1)
    assert answer.ok
    text = json.dumps(answer.to_json(), allow_nan=False)
    assert '"attention_backend": "minicpm_flashinfer"' in text
    assert answer.sglang_version == "0.5.23"
    assert set(answer.timing) >= {"total_s", "child_s"}
