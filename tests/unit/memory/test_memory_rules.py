"""The memory rules from data: each code bad and good, with sglang's exact text, and every
offered fix re-validated by the whole rule engine on the fixed flags."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sglaunch.validators.engine import validate
from sglaunch.validators.findings import Severity
from tests.conftest import make_input

LLAMA = "example:llama-3.1-8b"
SALA = "example:minicpm-sala"
GPT_OSS = "gpt-oss-20b-bf16"
QWEN_NEXT = "qwen3-next-80b"
E, W = Severity.ERROR, Severity.WARNING

MEMORY_CODES = frozenset(
    {
        "memory-no-kv-room",
        "memory-pool-empty",
        "memory-pool-below-context",
        "memory-slack-below-reserve",
        "memory-swa-pool-too-small",
        "memory-state-cache-too-small",
        "memory-plan-shape",
        "memory-tp-unbalanced",
        "weights-exceed-gpu-memory",
    }
)

# (code, model, argv, gpu, severity or None, message fragment)
CASES = [
    (
        "memory-no-kv-room",
        LLAMA,
        ["--mem-fraction-static", "0.4"],
        "RTX5090x1",
        E,
        "Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.4. "
        "Raise --mem-fraction-static above 0.489",
    ),
    ("memory-no-kv-room", LLAMA, [], "RTX5090x1", None, ""),
    (
        "memory-pool-empty",
        LLAMA,
        ["--tp", "2", "--max-total-tokens", "0"],
        "H100x8",
        E,
        "Not enough memory. Please try to increase --mem-fraction-static.",
    ),
    ("memory-pool-empty", LLAMA, ["--tp", "2"], "H100x8", None, ""),
    (
        "memory-pool-below-context",
        LLAMA,
        [],
        "RTX5090x1",
        W,
        "KV pool holds 72514 tokens, fewer than --context-length 131072.",
    ),
    ("memory-pool-below-context", LLAMA, ["--tp", "2"], "H100x8", None, ""),
    (
        "memory-slack-below-reserve",
        LLAMA,
        ["--tp", "2", "--mem-fraction-static", "0.93"],
        "H100x8",
        W,
        "sglang's own reserve heuristic assumes 13.13 GiB",
    ),
    (
        "memory-slack-below-reserve",
        LLAMA,
        ["--tp", "2", "--mem-fraction-static", "0.8"],
        "H100x8",
        None,
        "",
    ),
    ("memory-slack-below-reserve", LLAMA, ["--tp", "2"], "H100x8", None, ""),
    (
        "memory-swa-pool-too-small",
        GPT_OSS,
        ["--swa-full-tokens-ratio", "0.00001"],
        "H100x8",
        E,
        "SWA pool (11 tokens) cannot hold even one request: the prefill admission floor is "
        "sliding_window_size (127) + page_size (1).",
    ),
    ("memory-swa-pool-too-small", GPT_OSS, [], "H100x8", None, ""),
    (
        "memory-state-cache-too-small",
        QWEN_NEXT,
        ["--tp", "4", "--max-mamba-cache-size", "0"],
        "H100x8",
        E,
        "Not enough GPU memory for hybrid (mamba/linear-attention) state cache. Computed max_mamba_cache_size=0",
    ),
    ("memory-state-cache-too-small", QWEN_NEXT, ["--tp", "4"], "H100x8", None, ""),
    (
        "memory-plan-shape",
        SALA,
        ["--page-size", "16"],
        "H100x8",
        E,
        "MiniCPM sparse attention requires page_size=1",
    ),
    ("memory-plan-shape", SALA, [], "H100x8", None, ""),
    ("weights-exceed-gpu-memory", QWEN_NEXT, [], "H100x8", E, "loading runs out of memory"),
    ("weights-exceed-gpu-memory", QWEN_NEXT, ["--tp", "4"], "H100x8", None, ""),
]


@pytest.mark.parametrize(
    ("code", "model", "argv", "gpu", "severity", "fragment"),
    CASES,
    ids=[f"{c[0]}|{' '.join(c[2]) or 'none'}|{c[3]}|{'bad' if c[4] else 'good'}" for c in CASES],
)
def test_rule(
    code: str, model: str, argv: list[str], gpu: str, severity: Severity | None, fragment: str
) -> None:
    report = validate(make_input(model, argv, gpu))
    hits = [f for f in report.findings if f.code == code]
    if severity is None:
        assert hits == [], [f.message for f in hits]
        return
    assert hits, [f.code for f in report.findings]
    assert hits[0].severity is severity
    assert fragment in hits[0].message


def test_every_memory_rule_has_a_bad_and_a_good_case() -> None:
    # memory-tp-unbalanced needs NVML facts (busy GPUs): test_tp_memory_balance has its cases
    table = MEMORY_CODES - {"memory-tp-unbalanced"}
    assert {c[0] for c in CASES if c[4] is not None} == table
    assert {c[0] for c in CASES if c[4] is None} == table


BAD = [c for c in CASES if c[4] is not None]


@pytest.mark.parametrize(
    ("code", "model", "argv", "gpu", "severity", "fragment"), BAD, ids=[c[0] for c in BAD]
)
def test_every_fix_clears_the_finding_without_a_new_error(
    code: str, model: str, argv: list[str], gpu: str, severity: Severity, fragment: str
) -> None:
    inp = make_input(model, argv, gpu)
    before = validate(inp)
    finding = next(f for f in before.findings if f.code == code)
    errors_before = {f.code for f in before.findings if f.severity is Severity.ERROR}
    assert finding.fixes, f"{code}: no fix offered"
    for fix in finding.fixes:
        after = validate(replace(inp, flags=fix.apply(inp.flags)))
        codes = {f.code for f in after.findings}
        assert code not in codes, (fix.label, code)
        new_errors = {
            f.code for f in after.findings if f.severity is Severity.ERROR
        } - errors_before
        assert not new_errors, (fix.label, new_errors)


def test_fixes_go_the_right_way() -> None:
    """'No room' is fixed by a HIGHER fraction, 'slack' by a LOWER one (sglang#4330)."""
    no_room = validate(make_input(LLAMA, ["--mem-fraction-static", "0.4"], "RTX5090x1"))
    f = next(x for x in no_room.findings if x.code == "memory-no-kv-room")
    fractions = [
        fix.set["mem_fraction_static"] for fix in f.fixes if "mem_fraction_static" in fix.set
    ]
    assert fractions and all(v > 0.489 for v in fractions)
    slack = validate(make_input(LLAMA, ["--tp", "2", "--mem-fraction-static", "0.93"], "H100x8"))
    g = next(x for x in slack.findings if x.code == "memory-slack-below-reserve")
    lowered = [
        fix.set["mem_fraction_static"] for fix in g.fixes if "mem_fraction_static" in fix.set
    ]
    assert lowered and all(v < 0.93 for v in lowered)


def _busy_gpus(busy_gib: float, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    from sglaunch.validators.facts import GpuDevice, GpuFacts, GpuMode

    total = 81559 << 20
    frees = [total - (1 << 29), total - int(busy_gib * (1 << 30))]
    devices = tuple(
        GpuDevice(i, "NVIDIA H100 80GB HBM3", total, (9, 0), memory_free=f)
        for i, f in enumerate(frees)
    )
    inp = make_input(LLAMA, ["--tp", "2"], "H100x2", env=env)
    return replace(
        inp,
        gpu=GpuFacts(mode=GpuMode.NVML, devices=devices, driver_version="575", cuda_version="12.9"),
    )


def test_tp_memory_balance() -> None:
    """bootstrap.py:441-452: MIN baseline < 0.9 × a rank's own raises (environ.py:500 makes it raise)."""
    bad = [f for f in validate(_busy_gpus(20)).findings if f.code == "memory-tp-unbalanced"]
    assert [f.severity for f in bad] == [E]
    assert bad[0].message.startswith(
        "The memory capacity is unbalanced. Some GPUs may be occupied by other processes. pre_model_load_memory="
    )
    warn = validate(_busy_gpus(20, {"SGLANG_ENABLE_TP_MEMORY_INBALANCE_CHECK": "0"}))
    assert [f.severity for f in warn.findings if f.code == "memory-tp-unbalanced"] == [W]
    assert not [f for f in validate(_busy_gpus(2)).findings if f.code == "memory-tp-unbalanced"]
    # planning presets have no other processes
    assert not [
        f
        for f in validate(make_input(LLAMA, ["--tp", "2"], "H100x2")).findings
        if f.code == "memory-tp-unbalanced"
    ]


def test_topology_fixes_stay_within_the_gpus() -> None:
    report = validate(make_input(QWEN_NEXT, [], "H100x2"))
    f = next(x for x in report.findings if x.code == "weights-exceed-gpu-memory")
    tps = [fix.set.get("tp_size") for fix in f.fixes if "tp_size" in fix.set]
    assert all(tp is not None and tp <= 2 for tp in tps)
