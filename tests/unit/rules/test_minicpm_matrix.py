"""Every MiniCPM rule over the whole matrix, against the reference table, in every release.

models × flag sets × GPUs × SGLANG_MINICPM_FORCE_DENSE × sglang 0.5.19–0.5.23 — the
expected outcome of each case is written out below from
docs/reference/sglang-0.5.23-resolution.md ("The MiniCPM rules, exactly") and
from each release's srt/arg_groups/model_overrides/minicpm*.py, one function per
table row, independent of the rule code. What differs by release: before 0.5.22
the DP rule tests --enable-dp-attention itself and --attn-dp-size does not exist;
MiniCPM-V 4.7 gets the SM100 rule from 0.5.23. Golden rows follow the matrix.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest

from sglaunch.validators.release_spans import SUPPORTED
from tests.conftest import run_rules

# --- the matrix --------------------------------------------------------------------


@dataclass(frozen=True)
class M:
    """A model in the matrix and the two facts sglang derives for it."""

    name: str
    arch: str
    sparse: bool
    lightning: bool


MODELS = [
    M("minicpm-plain", "MiniCPMForCausalLM", False, False),
    M("sala-dense", "MiniCPMSALAForCausalLM", False, False),
    M("sala-sparse", "MiniCPMSALAForCausalLM", True, False),
    M("sala-lightning", "MiniCPMSALAForCausalLM", False, True),
    M("sala-sparse-lightning", "MiniCPMSALAForCausalLM", True, True),
    M("minicpm-arch-sala-config", "MiniCPMForCausalLM", True, True),
    M("minicpmv-4.6", "MiniCPMV4_6ForConditionalGeneration", False, False),
    M("minicpmv-4.7", "MiniCPMV4_7ForConditionalGeneration", False, False),
]

BACKEND_FLAGS = ("--attention-backend", "--prefill-attention-backend", "--decode-attention-backend")
SPARSE = ("minicpm_flashattn", "minicpm_flashinfer")

FLAG_SETS: dict[str, list[str]] = {
    "none": [],
    "dp-attention-deprecated": ["--enable-dp-attention", "--dp-size", "2", "--tp-size", "2"],
    "attn-dp-size": ["--attn-dp-size", "2", "--tp-size", "2"],
    "dp-replicas": ["--dp-size", "2"],
    "enable-dp-attention-alone": ["--enable-dp-attention"],
    "ep-join-scale": ["--elastic-ep-join-mode", "scale"],
    "hicache": ["--enable-hierarchical-cache"],
    "pd-prefill": ["--disaggregation-mode", "prefill"],
    "pd-prefill-fa3": ["--disaggregation-mode", "prefill", "--attention-backend", "fa3"],
}
for _flag, _backend in itertools.product(BACKEND_FLAGS, SPARSE):
    FLAG_SETS[f"{_flag[2:]}={_backend}"] = [_flag, _backend]
    FLAG_SETS[f"pd+{_flag[2:]}={_backend}"] = ["--disaggregation-mode", "decode", _flag, _backend]

# GPU -> (is_blackwell, is_sm100) per sglang (majors 10/11/12, CUDA >= 12.8; presets carry CUDA 12.9)
GPUS = {
    "H100x2": (False, False),
    "B200x2": (True, True),
    "RTX5090x2": (True, False),
    "A100x2": (False, False),
}


def _flags(argv: list[str]) -> dict[str, str | bool]:
    out: dict[str, str | bool] = {}
    i = 0
    while i < len(argv):
        name = argv[i][2:].replace("-", "_")
        if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            out[name] = argv[i + 1]
            i += 2
        else:
            out[name] = True
            i += 1
    return out


# --- the reference table, row by row -------------------------------------------------


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def expected(
    m: M, argv: list[str], blackwell: bool, sm100: bool, force_dense: bool, version: str = "0.5.23"
) -> tuple[set[str], dict[str, object]]:
    """(error messages, {field: overridden value}) the reference says sglang `version` produces."""
    errors: set[str] = set()
    overrides: dict[str, object] = {}
    f = _flags(argv)
    new_dp = _release(version) >= (0, 5, 22)
    if not new_dp:
        # --attn-dp-size does not exist there: the parser stops at it (unknown-flag)
        f.pop("attn_dp_size", None)
    minicpm = m.arch in ("MiniCPMForCausalLM", "MiniCPMSALAForCausalLM")
    backends = {
        k: f.get(k)
        for k in ("attention_backend", "prefill_attention_backend", "decode_attention_backend")
    }
    if minicpm and not new_dp and f.get("enable_dp_attention"):
        # row 1, 0.5.19-0.5.21: `if cfg.enable_dp_attention: raise`
        errors.add("MiniCPM does not support DP attention")
    if minicpm:
        # step 1: --enable-dp-attention --dp-size N becomes attn_dp_size=N
        attn_dp = int(f.get("attn_dp_size", 1))
        if f.get("enable_dp_attention") and attn_dp == 1:
            attn_dp = int(f.get("dp_size", 1))
        # row 1, 0.5.22 on
        if new_dp and (attn_dp > 1 or f.get("elastic_ep_join_mode") == "scale"):
            errors.add("MiniCPM does not support DP attention")
        hybrid = m.sparse or m.lightning
        # rows 2, 3
        if hybrid and f.get("enable_hierarchical_cache"):
            errors.add("MiniCPM SALA does not support hierarchical cache")
        if hybrid:
            overrides["disable_radix_cache"] = True
        if force_dense:
            # row 4
            for field, value in backends.items():
                if value == "minicpm_flashattn":
                    overrides[field] = "fa4" if blackwell else "fa3"
                elif value == "minicpm_flashinfer":
                    overrides[field] = "flashinfer"
        elif m.sparse:
            unset = all(v is None for v in backends.values())
            uses_sparse = unset or any(v in SPARSE for v in backends.values())
            # row 5
            if uses_sparse and f.get("disaggregation_mode", "null") != "null":
                errors.add("MiniCPM sparse attention does not support PD disaggregation")
            # row 6
            if unset:
                overrides["attention_backend"] = (
                    "minicpm_flashinfer" if blackwell else "minicpm_flashattn"
                )
    elif (
        sm100
        and backends["attention_backend"] is None
        and (m.arch.startswith("MiniCPMV4_6") or _release(version) >= (0, 5, 23))
    ):
        # MiniCPM-V rule: 4.6 from 0.5.19, 4.7 from 0.5.23
        overrides["attention_backend"] = "triton"
    return errors, overrides


CASES = [
    pytest.param(m, fs, gpu, fd, v, id=f"{v}|{m.name}|{fs}|{gpu}|{'dense' if fd else 'sparse'}")
    for v, m, fs, gpu, fd in itertools.product(SUPPORTED, MODELS, FLAG_SETS, GPUS, (False, True))
]

MINICPM_CODES = {
    "minicpm-dp-attention",
    "minicpm-sala-hierarchical-cache",
    "minicpm-sala-radix-cache",
    "minicpm-force-dense-backend",
    "minicpm-sparse-pd-disaggregation",
    "minicpm-sparse-backend",
    "minicpmv-sm100-triton",
}


@pytest.mark.parametrize(("m", "flag_set", "gpu", "force_dense", "version"), CASES)
def test_matrix(m: M, flag_set: str, gpu: str, force_dense: bool, version: str) -> None:
    argv = FLAG_SETS[flag_set]
    env = {"SGLANG_MINICPM_FORCE_DENSE": "1"} if force_dense else {}
    report = run_rules(m.name, argv, gpu=gpu, env=env, version=version)
    blackwell, sm100 = GPUS[gpu]
    want_errors, want_overrides = expected(m, argv, blackwell, sm100, force_dense, version)
    ours = [f for f in report.findings if f.code in MINICPM_CODES]
    got_errors = {f.message for f in ours if f.is_error}
    got_overrides = {f.override.field: f.override.value for f in ours if f.override is not None}
    # fields the user already set to the value sglang would force are not changes
    for field, value in list(want_overrides.items()):
        if _flags(argv).get(field) == value:
            del want_overrides[field]
    assert got_errors == want_errors
    assert got_overrides == want_overrides


def test_matrix_is_large() -> None:
    # the issue asks for the full product; guard against a silently shrunk matrix
    assert len(CASES) == len(SUPPORTED) * len(MODELS) * len(FLAG_SETS) * len(GPUS) * 2
    assert len(CASES) >= 5 * 8 * 20 * 4 * 2


# --- golden rows, spelled out -------------------------------------------------------

GOLDEN = [
    # (model, argv, gpu, env, errors, overrides)
    (
        "sala-sparse-lightning",
        [],
        "H100x8",
        {},
        set(),
        {"disable_radix_cache": True, "attention_backend": "minicpm_flashattn"},
    ),
    (
        "sala-sparse-lightning",
        [],
        "B200x8",
        {},
        set(),
        {"disable_radix_cache": True, "attention_backend": "minicpm_flashinfer"},
    ),
    (
        "sala-sparse-lightning",
        [],
        "RTX5090x1",
        {},
        set(),
        {"disable_radix_cache": True, "attention_backend": "minicpm_flashinfer"},
    ),
    ("sala-lightning", [], "H100x8", {}, set(), {"disable_radix_cache": True}),
    ("sala-dense", ["--enable-hierarchical-cache"], "H100x8", {}, set(), {}),
    (
        "minicpm-plain",
        ["--tp", "4", "--enable-dp-attention", "--dp", "4"],
        "H100x8",
        {},
        {"MiniCPM does not support DP attention"},
        {},
    ),
    ("minicpm-plain", ["--enable-dp-attention"], "H100x8", {}, set(), {}),
    ("minicpm-plain", ["--dp-size", "2"], "H100x8", {}, set(), {}),
    (
        "sala-sparse",
        ["--disaggregation-mode", "prefill"],
        "H100x8",
        {},
        {"MiniCPM sparse attention does not support PD disaggregation"},
        {"disable_radix_cache": True, "attention_backend": "minicpm_flashattn"},
    ),
    (
        "sala-sparse",
        ["--disaggregation-mode", "prefill", "--attention-backend", "fa3"],
        "H100x8",
        {},
        set(),
        {"disable_radix_cache": True},
    ),
    (
        "sala-sparse",
        ["--disaggregation-mode", "prefill"],
        "H100x8",
        {"SGLANG_MINICPM_FORCE_DENSE": "yes"},
        set(),
        {"disable_radix_cache": True},
    ),
    (
        "sala-sparse",
        ["--prefill-attention-backend", "minicpm_flashattn"],
        "B200x8",
        {"SGLANG_MINICPM_FORCE_DENSE": "TRUE"},
        set(),
        {"disable_radix_cache": True, "prefill_attention_backend": "fa4"},
    ),
    (
        "sala-sparse",
        ["--decode-attention-backend", "minicpm_flashinfer"],
        "H100x8",
        {"SGLANG_MINICPM_FORCE_DENSE": "1"},
        set(),
        {"disable_radix_cache": True, "decode_attention_backend": "flashinfer"},
    ),
    # an invalid value is a warning in sglang and counts as off
    (
        "sala-sparse",
        ["--attention-backend", "minicpm_flashattn"],
        "H100x8",
        {"SGLANG_MINICPM_FORCE_DENSE": "maybe"},
        set(),
        {"disable_radix_cache": True},
    ),
    ("minicpmv-4.6", [], "B200x8", {}, set(), {"attention_backend": "triton"}),
    ("minicpmv-4.6", [], "RTX5090x1", {}, set(), {}),
    (
        "minicpmv-4.7",
        ["--prefill-attention-backend", "fa3"],
        "B200x8",
        {},
        set(),
        {"attention_backend": "triton"},
    ),
    ("minicpmv-4.7", ["--attention-backend", "fa4"], "B200x8", {}, set(), {}),
    (
        "minicpm-arch-sala-config",
        ["--enable-hicache"],
        "H100x8",
        {},
        {"MiniCPM SALA does not support hierarchical cache"},
        {"disable_radix_cache": True, "attention_backend": "minicpm_flashattn"},
    ),
]


@pytest.mark.parametrize(("model", "argv", "gpu", "env", "errors", "overrides"), GOLDEN)
def test_golden(
    model: str, argv: list[str], gpu: str, env: dict[str, str], errors: set[str], overrides: dict
) -> None:
    report = run_rules(model, argv, gpu=gpu, env=env)
    ours = [f for f in report.findings if f.code in MINICPM_CODES]
    assert {f.message for f in ours if f.is_error} == errors
    assert {f.override.field: f.override.value for f in ours if f.override} == overrides


def test_blackwell_needs_cuda_12_8() -> None:
    """A B200 on a CUDA 12.6 driver is not 'Blackwell' to sglang: the non-Blackwell backend is chosen."""
    from sglaunch.facts.presets import find_preset, planning_facts
    from sglaunch.validators.engine import validate
    from tests.conftest import make_input

    inp = make_input("sala-sparse", [], gpu="B200x1")
    preset = find_preset("B200")
    assert preset is not None
    old_cuda = planning_facts(preset, 1, cuda_version="12.6")
    from dataclasses import replace

    report = validate(replace(inp, gpu=old_cuda))
    backend = {f.override.field: f.override.value for f in report.findings if f.override}[
        "attention_backend"
    ]
    assert backend == "minicpm_flashattn"


def test_dp_attention_fix_unsets_the_translated_flags() -> None:
    report = run_rules(
        "sala-sparse-lightning", ["--tp", "4", "--enable-dp-attention", "--dp-size", "4"]
    )
    finding = next(f for f in report.findings if f.code == "minicpm-dp-attention")
    assert "--attn-dp-size 4" in finding.detail
    first = finding.fixes[0]
    assert set(first.unset) == {"enable_dp_attention", "dp_size"}
    from dataclasses import replace

    from sglaunch.validators.engine import validate
    from tests.conftest import make_input

    inp = make_input(
        "sala-sparse-lightning", ["--tp", "4", "--enable-dp-attention", "--dp-size", "4"]
    )
    fixed = validate(replace(inp, flags=first.apply(inp.flags)))
    assert not [f for f in fixed.findings if f.code == "minicpm-dp-attention"]
