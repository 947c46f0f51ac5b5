"""The general rules, from data: for each rule a table of cases, good and bad.

Each bad case names the severity and a piece of the message (sglang's own
words where sglang has them); each good case must not produce the code.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from sglaunch.validators.engine import all_rules, validate
from sglaunch.validators.findings import Severity
from tests.conftest import make_input, run_rules

LLAMA = "example:llama-3.1-8b"  # 32 heads, 8 KV heads, 131072 context
SALA = "example:minicpm-sala"
MINICPM4 = "example:minicpm4-8b"  # remote code

E, W, INFO = Severity.ERROR, Severity.WARNING, Severity.INFO

# (code, model, argv, gpu, env, expected severity or None, message fragment)
CASES = [
    # --- flags (argparse) ---
    (
        "unknown-flag",
        LLAMA,
        ["--tensor-paralel-size", "2"],
        "H100x8",
        {},
        E,
        "unrecognized arguments: --tensor-paralel-size",
    ),
    ("unknown-flag", LLAMA, ["--tp", "2"], "H100x8", {}, None, ""),
    (
        "invalid-flag-value",
        LLAMA,
        ["--tp-size", "two"],
        "H100x8",
        {},
        E,
        "invalid int value: 'two'",
    ),
    (
        "invalid-flag-value",
        LLAMA,
        ["--kv-cache-dtype", "fp8"],
        "H100x8",
        {},
        E,
        "invalid choice: 'fp8'",
    ),
    ("invalid-flag-value", LLAMA, ["--kv-cache-dtype", "fp8_e4m3"], "H100x8", {}, None, ""),
    (
        "ambiguous-flag",
        LLAMA,
        ["--dis", "1"],
        "H100x8",
        {},
        E,
        "ambiguous option: --dis could match",
    ),
    (
        "deprecated-flag",
        LLAMA,
        ["--disable-cuda-graph"],
        "H100x8",
        {},
        W,
        "'--disable-cuda-graph' is deprecated",
    ),
    # --- parallel ---
    (
        "deprecated-dp-attention",
        LLAMA,
        ["--enable-dp-attention", "--dp-size", "2", "--tp", "2"],
        "H100x8",
        {},
        W,
        "Use '--attn-dp-size <dp-size>' instead.",
    ),
    (
        "deprecated-dp-attention",
        LLAMA,
        ["--attn-dp-size", "2", "--tp", "2"],
        "H100x8",
        {},
        None,
        "",
    ),
    (
        "attn-dp-size-positive",
        LLAMA,
        ["--attn-dp-size", "0"],
        "H100x8",
        {},
        E,
        "--attn-dp-size must be positive (got 0).",
    ),
    (
        "dp-with-attn-dp",
        LLAMA,
        ["--dp-size", "2", "--attn-dp-size", "2", "--tp", "2"],
        "H100x8",
        {},
        E,
        "--dp-size 2 with --attn-dp-size 2",
    ),
    (
        "dp-with-attn-dp",
        LLAMA,
        ["--enable-dp-attention", "--dp-size", "2", "--tp", "2"],
        "H100x8",
        {},
        None,
        "",
    ),
    (
        "attn-dp-divides-tp",
        LLAMA,
        ["--enable-dp-attention", "--dp-size", "2"],
        "H100x8",
        {},
        E,
        "does not divide --tp-size 1",
    ),
    (
        "attn-dp-divides-tp",
        LLAMA,
        ["--attn-dp-size", "3", "--tp", "2"],
        "H100x8",
        {},
        E,
        "--attn-dp-size 3",
    ),
    ("attn-dp-divides-tp", LLAMA, ["--attn-dp-size", "2", "--tp", "4"], "H100x8", {}, None, ""),
    (
        "nnodes-divides-tp",
        LLAMA,
        ["--nnodes", "3", "--tp", "2"],
        "H100x8",
        {},
        E,
        "tp_size must be divisible by number of nodes",
    ),
    ("nnodes-divides-tp", LLAMA, ["--nnodes", "2", "--tp", "4"], "H100x8", {}, None, ""),
    # sglang's own words for --nnodes 0 (check_server_args divides by it); the multi-node
    # rules have their table in test_multinode_rules.py, this row puts one in the differential
    (
        "nnodes-positive",
        LLAMA,
        ["--nnodes", "0", "--tp", "2"],
        "H100x8",
        {},
        E,
        "integer modulo by zero",
    ),
    (
        "multinode-dp-replicas",
        LLAMA,
        ["--nnodes", "2", "--tp", "2", "--dp-size", "2"],
        "H100x8",
        {},
        E,
        "multi-node data-parallel replicas",
    ),
    (
        "elastic-ep-join",
        LLAMA,
        ["--elastic-ep-join-mode", "scale"],
        "H100x8",
        {},
        E,
        "--elastic-ep-join-mode requires --elastic-ep-backend to be set.",
    ),
    (
        "elastic-ep-join",
        LLAMA,
        ["--elastic-ep-join-mode", "recover", "--elastic-ep-backend", "mooncake"],
        "H100x8",
        {},
        None,
        "",
    ),
    ("parallel-size-positive", LLAMA, ["--tp-size", "0"], "H100x8", {}, E, "--tp-size 0"),
    ("parallel-size-positive", LLAMA, ["--pp-size", "-1"], "H100x8", {}, E, "--pp-size -1"),
    (
        "parallel-gpus",
        LLAMA,
        ["--tp", "4", "--dp-size", "4"],
        "H100x8",
        {},
        E,
        "needs 16 GPUs but 8 are in the planned machine",
    ),
    ("parallel-gpus", LLAMA, ["--tp", "2"], "RTX5090x1", {}, E, "needs 2 GPUs but 1 is"),
    ("parallel-gpus", LLAMA, ["--tp", "4", "--dp-size", "2"], "H100x8", {}, None, ""),
    (
        "parallel-gpus",
        LLAMA,
        ["--tp", "8", "--attn-dp-size", "8"],
        "H100x8",
        {},
        None,
        "",
    ),  # attention DP adds no GPUs
    ("parallel-gpus", LLAMA, ["--tp", "2", "--base-gpu-id", "7"], "H100x8", {}, E, "needs 9 GPUs"),
    (
        "heads-divide-tp",
        LLAMA,
        ["--tp", "3"],
        "H100x8",
        {},
        E,
        "32 attention heads do not divide by --tp-size 3",
    ),
    (
        "heads-divide-tp",
        LLAMA,
        ["--tp", "16"],
        "H100x8",
        {},
        None,
        "",
    ),  # 8 KV heads replicated twice
    (
        "heads-divide-tp",
        MINICPM4,
        ["--tp", "4", "--trust-remote-code"],
        "H100x8",
        {},
        None,
        "",
    ),  # 2 KV heads, replicated
    (
        "heads-divide-tp",
        MINICPM4,
        ["--tp", "6", "--trust-remote-code"],
        "H100x8",
        {},
        E,
        "32 attention heads do not divide",
    ),
    # --- model config ---
    (
        "trust-remote-code",
        MINICPM4,
        [],
        "H100x8",
        {},
        E,
        "contains custom code which must be executed",
    ),
    ("trust-remote-code", MINICPM4, ["--trust-remote-code"], "H100x8", {}, None, ""),
    ("trust-remote-code", SALA, [], "H100x8", {}, None, ""),  # sglang's own config type
    (
        "context-length-exceeds-model",
        MINICPM4,
        ["--trust-remote-code", "--context-length", "65536"],
        "H100x8",
        {},
        E,
        "User-specified context_length (65536) is greater than the derived context_length (32768)",
    ),
    (
        "context-length-exceeds-model",
        MINICPM4,
        ["--trust-remote-code", "--context-length", "65536"],
        "H100x8",
        {"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"},
        W,
        "is greater than the derived",
    ),
    (
        "context-length-exceeds-model",
        LLAMA,
        ["--context-length", "128k"],
        "H100x8",
        {},
        None,
        "",
    ),  # 128000 < 131072
    # --- memory ---
    (
        "mem-fraction-range",
        LLAMA,
        ["--mem-fraction-static", "1.2"],
        "H100x8",
        {},
        E,
        "outside (0, 1)",
    ),
    (
        "mem-fraction-range",
        LLAMA,
        ["--mem-fraction-static", "0"],
        "H100x8",
        {},
        E,
        "outside (0, 1)",
    ),
    (
        "mem-fraction-range",
        LLAMA,
        ["--mem-fraction-static", "0.97"],
        "H100x8",
        {},
        W,
        "Capture cuda graph failed",
    ),
    ("mem-fraction-range", LLAMA, ["--mem-fraction-static", "0.85"], "H100x8", {}, None, ""),
    # --- backends x GPU ---
    (
        "backend-needs-gpu-arch",
        LLAMA,
        ["--attention-backend", "trtllm_mha"],
        "A100x1",
        {},
        E,
        "TRTLLM MHA backend for prefill requires Hopper",
    ),
    (
        "backend-needs-gpu-arch",
        LLAMA,
        ["--decode-attention-backend", "trtllm_mha"],
        "L40Sx1",
        {},
        E,
        "TRTLLM MHA backend for decode",
    ),
    (
        "backend-needs-gpu-arch",
        LLAMA,
        ["--attention-backend", "trtllm_mha"],
        "H100x1",
        {},
        None,
        "",
    ),
    (
        "backend-needs-gpu-arch",
        LLAMA,
        ["--attention-backend", "trtllm_mha", "--kv-cache-dtype", "fp8_e4m3"],
        "RTX5090x1",
        {},
        E,
        "TRTLLM FMHAv2 prefill on SM120",
    ),
    (
        "backend-needs-gpu-arch",
        LLAMA,
        ["--attention-backend", "trtllm_mla"],
        "H100x1",
        {},
        E,
        "TRTLLM MLA backend is only supported on Blackwell",
    ),
    (
        "backend-needs-gpu-arch",
        LLAMA,
        ["--attention-backend", "trtllm_mla"],
        "RTX5090x1",
        {},
        None,
        "",
    ),
    (
        "backend-needs-gpu-arch",
        LLAMA,
        ["--attention-backend", "cutedsl_mla"],
        "RTX5090x1",
        {},
        E,
        "CuteDSL MLA backend is only supported",
    ),
    (
        "fa3-needs-sm80-sm90",
        LLAMA,
        ["--attention-backend", "fa3"],
        "B200x1",
        {},
        E,
        "FlashAttention v3 Backend requires SM>=80 and SM<=90",
    ),
    ("fa3-needs-sm80-sm90", LLAMA, ["--attention-backend", "fa3"], "A100x1", {}, None, ""),
    (
        "kv-cache-dtype-needs-gpu-arch",
        LLAMA,
        ["--kv-cache-dtype", "mxfp8"],
        "H100x1",
        {},
        E,
        "mxfp8 requires an SM100+",
    ),
    (
        "kv-cache-dtype-needs-gpu-arch",
        LLAMA,
        ["--kv-cache-dtype", "mxfp8"],
        "RTX5090x1",
        {},
        None,
        "",
    ),
    (
        "kv-cache-dtype-needs-gpu-arch",
        LLAMA,
        ["--kv-cache-dtype", "nvfp4"],
        "H200x1",
        {},
        E,
        "nvfp4 requires Blackwell SM100 or SM120",
    ),
    (
        "hicache-excludes-no-radix",
        LLAMA,
        ["--enable-hierarchical-cache", "--disable-radix-cache"],
        "H100x8",
        {},
        E,
        "mutually exclusive",
    ),
    ("hicache-excludes-no-radix", LLAMA, ["--enable-hierarchical-cache"], "H100x8", {}, None, ""),
    # --- serving (check_server_args) ---
    (
        "chunked-prefill-page-size",
        LLAMA,
        ["--chunked-prefill-size", "1000", "--page-size", "64"],
        "H100x8",
        {},
        E,
        "chunked_prefill_size must be divisible by page_size",
    ),
    (
        "chunked-prefill-page-size",
        LLAMA,
        ["--chunked-prefill-size", "1024", "--page-size", "64"],
        "H100x8",
        {},
        None,
        "",
    ),
    (
        "served-model-name-colon",
        LLAMA,
        ["--served-model-name", "llama3:8b"],
        "H100x8",
        {},
        E,
        "cannot contain a colon",
    ),
    ("port-range", LLAMA, ["--port", "99999"], "H100x8", {}, E, "--port 99999 is not a TCP port"),
    ("port-range", LLAMA, ["--port", "0"], "H100x8", {}, E, "the system picks"),
    ("port-range", LLAMA, ["--port", "-1"], "H100x8", {}, E, "fails when it binds it"),
    ("port-range", LLAMA, ["--port", "65535"], "H100x8", {}, None, ""),
    ("port-range", LLAMA, ["--port", "1"], "H100x8", {}, None, ""),
    (
        "invalid-json-flag",
        LLAMA,
        ["--json-model-override-args", "{rope_scaling:{factor:4}}"],
        "H100x8",
        {},
        E,
        "--json-model-override-args is not valid JSON",
    ),
    (
        "invalid-json-flag",
        LLAMA,
        ["--json-model-override-args", '{"rope_scaling": {"factor": 4}}'],
        "H100x8",
        {},
        None,
        "",
    ),
]


@pytest.mark.parametrize(
    ("code", "model", "argv", "gpu", "env", "severity", "fragment"),
    CASES,
    ids=[f"{c[0]}|{' '.join(c[2]) or 'none'}|{c[3]}|{'bad' if c[5] else 'good'}" for c in CASES],
)
def test_rule(code, model, argv, gpu, env, severity, fragment) -> None:  # type: ignore[no-untyped-def]
    report = run_rules(model, argv, gpu=gpu, env=env)
    hits = [f for f in report.findings if f.code == code]
    if severity is None:
        assert hits == [], hits
    else:
        assert hits, [f.code for f in report.findings]
        assert hits[0].severity is severity
        assert fragment in hits[0].message


def test_every_rule_has_cases() -> None:
    """A rule nobody tested from data cannot be trusted: every general rule appears, good and bad."""
    from tests.unit.memory.test_memory_rules import MEMORY_CODES
    from tests.unit.rules.test_minicpm_matrix import MINICPM_CODES
    from tests.unit.rules.test_multinode_rules import MULTINODE_CODES

    covered_bad = {c[0] for c in CASES if c[5] is not None}
    covered_good = {c[0] for c in CASES if c[5] is None}
    general = (
        {r.code for r in all_rules()}
        - MINICPM_CODES
        - MEMORY_CODES  # tested from data in tests/unit/memory/test_memory_rules.py
        - MULTINODE_CODES  # tested from data in tests/unit/rules/test_multinode_rules.py
        - {"model-config-invalid", "architecture-without-rules", "weights-exceed-gpu-memory"}
    )
    assert general <= covered_bad
    assert (
        general
        - {
            "attn-dp-size-positive",
            "ambiguous-flag",
            "deprecated-flag",
            "multinode-dp-replicas",
            "parallel-size-positive",
            "served-model-name-colon",
        }
        <= covered_good
    )


def test_every_fix_applies_cleanly() -> None:
    """The first fix of every error above removes that error (or at least that code)."""
    for code, model, argv, gpu, env, severity, _ in CASES:
        if severity is not Severity.ERROR:
            continue
        inp = make_input(model, argv, gpu=gpu, env=env)
        finding = next(f for f in validate(inp).findings if f.code == code)
        if not finding.fixes or finding.code in {
            "unknown-flag",
            "ambiguous-flag",
            "invalid-flag-value",
        }:
            continue
        fixed = validate(replace(inp, flags=finding.fixes[0].apply(inp.flags)))
        assert code not in [f.code for f in fixed.findings if f.is_error], (
            code,
            argv,
            finding.fixes[0],
        )


def test_every_rule_mirrors_something_and_has_a_card() -> None:
    from sglaunch.validators.registry import get_card

    for r in all_rules():
        assert r.mirrors in ("parse", "config", "resolution", "launch")
        assert r.ref, r.code
        card = get_card(r.code)
        assert card is not None, r.code
        assert card.what and card.when and card.solutions, r.code


def test_rules_never_raise_or_mutate(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Purity: odd values must not crash a rule, and the input is untouched."""
    weird = [
        ["--tp-size", "-5", "--dp-size", "0", "--attn-dp-size", "-2", "--nnodes", "0"],
        ["--mem-fraction-static", "nan"],
        ["--context-length", "0", "--page-size", "0", "--chunked-prefill-size", "-1"],
    ]
    for argv in weird:
        inp = make_input(LLAMA, argv)
        before = dict(inp.flags)
        report = validate(inp)
        assert "internal-rule-error" not in report.codes()
        assert dict(inp.flags) == before


def test_unknown_architecture_is_info_only(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["FancyNewForCausalLM"],
                "model_type": "llama",
                "num_attention_heads": 8,
                "hidden_size": 512,
                "num_hidden_layers": 2,
            }
        )
    )
    report = run_rules(str(tmp_path), ["--tp", "2"])
    assert [f.severity for f in report.findings if f.code == "architecture-without-rules"] == [INFO]
    assert not [f for f in report.findings if f.code.startswith("minicpm")]


def test_invalid_sala_config_is_an_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["MiniCPMSALAForCausalLM"],
                "model_type": "minicpm_sala",
                "num_hidden_layers": 4,
                "mixer_types": ["mamba"],
            }
        )
    )
    report = run_rules(str(tmp_path), [])
    f = next(f for f in report.findings if f.code == "model-config-invalid")
    assert f.message == "Unsupported mixer type: mamba"
    assert f.severity is E


def test_weights_that_cannot_fit(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import json

    (tmp_path / "config.json").write_text(
        (
            __import__("pathlib").Path(__file__).parents[2] / "data/models/sala-dense/config.json"
        ).read_text()
    )
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 140 * 10**9}})
    )
    bad = run_rules(str(tmp_path), [], gpu="H100x8")
    assert [f.severity for f in bad.findings if f.code == "weights-exceed-gpu-memory"] == [E]
    good = run_rules(str(tmp_path), ["--tp", "2"], gpu="H100x8")
    assert not [f for f in good.findings if f.code == "weights-exceed-gpu-memory"]


def test_a_rule_card_beats_the_runtime_card_for_the_same_message() -> None:
    from sglaunch.validators.registry import match_card

    assert match_card("sglang serve: error: unrecognized arguments: --x").code == "unknown-flag"  # type: ignore[union-attr]
    assert (
        match_card("sglang serve: error: argument --tp-size: invalid int value: 'two'").code  # type: ignore[union-attr]
        == "invalid-flag-value"
    )
    # a parser failure no rule explains keeps the runtime card
    assert (
        match_card("sglang serve: error: the following arguments are required: --model-path").code  # type: ignore[union-attr]
        == "runtime-argparse-error"
    )


def test_rules_run_in_the_registry_order() -> None:
    from sglaunch.validators import registry

    modules = [r.func.__module__ for r in all_rules()]
    order = [m.__name__ for m in registry.MODULES]
    ranks = [order.index(m) for m in modules]
    assert ranks == sorted(ranks)
    assert modules[-1].endswith("minicpmv")  # model rules last: their overrides win
