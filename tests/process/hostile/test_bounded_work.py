"""Class "bounded work": no rule or fix loops over a user's number, and NaN or infinity is
an error wherever a number is read (`--tp-size 99999999999999999999` never returned)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sglaunch.checking import build_input
from sglaunch.facts.model import load_model_facts
from sglaunch.facts.presets import parse_gpu_spec
from sglaunch.flags.schema import bundled_schema
from sglaunch.profiles.profile import FlagValueError, coerce_flag_value
from sglaunch.safeio import MAX_NUMBER
from sglaunch.validators.engine import validate
from tests.support.hostile import LAUNCH, Case, check, run_case

_EXAMPLE = "example:minicpm4-8b"


def _flags(*flags: str) -> object:
    return lambda _tmp: check(_EXAMPLE, *flags)


CASES = [
    Case("tp-beyond-64-bits", _flags("--tp-size", "99999999999999999999"), 2, "out of range"),
    Case("tp-10**18", _flags("--tp-size", str(10**18)), 1, "parallel-gpus"),
    Case(
        "tp-dp-pp-2**62",
        _flags("--tp-size", str(2**62), "--pp-size", str(2**62), "--dp-size", str(2**62)),
        1,
        "parallel-gpus",
    ),
    Case("human-int-huge", _flags("--max-total-tokens", "9" * 30 + "Ti"), 2, "out of range"),
    Case("mem-fraction-nan", _flags("--mem-fraction-static", "nan"), 2, "NaN is not a number"),
    Case("mem-fraction-inf", _flags("--mem-fraction-static", "inf"), 2, "infinite"),
    Case("mem-fraction-minus-inf", _flags("--mem-fraction-static=-inf"), 2, "infinite"),
    Case("mem-fraction-1e400", _flags("--mem-fraction-static", "1e400"), 2, "infinite"),
    Case("json-flag-nan", _flags("--preferred-sampling-params", '{"temperature": NaN}'), 2, "NaN"),
    Case(
        "json-flag-deep",
        _flags("--cuda-graph-config", "[" * 50_000 + "]" * 50_000),
        2,
        "nests deeper",
    ),
    Case(
        "thousands-of-unknown-tokens",
        lambda _tmp: ["profiles", "import", f"{LAUNCH} --model-path m " + "--x " * 30_000],
        2,
        "and 29980 more",
    ),
    Case(
        "launch-line-too-long",
        lambda _tmp: ["profiles", "import", "-"],
        2,
        "far longer than any sglang launch",
        stdin=LAUNCH + " \\\n" * 100_000 + " --tp 2",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_work_is_bounded(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def _int_dests() -> list[str]:
    schema = bundled_schema()
    return sorted(
        f.dest
        for f in schema.primary_flags()
        if f.type in ("int", "human_int") and f.takes_value and not f.is_list and f.choices is None
    )


@pytest.mark.parametrize("value", [MAX_NUMBER, -MAX_NUMBER, 0, 2**31])
@pytest.mark.parametrize("gpu", ["H100x1", "H100x64"])
def test_every_rule_is_bounded_for_every_integer_flag(value: int, gpu: str) -> None:
    """Every integer flag at once at the extremes of what the parser lets through: every
    rule finishes (pytest-timeout stops a loop) and none fails inside."""
    schema = bundled_schema()
    flags = {d: value for d in _int_dests()}
    for model in (_EXAMPLE, "example:minicpm-sala"):
        inp = build_input(
            flags, gpu=parse_gpu_spec(gpu), model=load_model_facts(model), env={}, schema=schema
        )
        report = validate(inp)
        broken = [f.message for f in report.findings if f.code == "internal-rule-error"]
        assert broken == []
        assert all(len(fix.set) <= 8 for f in report.findings for fix in f.fixes)


@pytest.mark.parametrize(
    ("dest", "value"),
    [
        ("mem_fraction_static", float("nan")),
        ("mem_fraction_static", float("inf")),
        ("tp_size", 2**64),
        ("max_total_tokens", -(2**70)),
    ],
)
def test_a_profile_value_is_a_number_sglang_can_mean(dest: str, value: float) -> None:
    spec = bundled_schema().get(dest)
    assert spec is not None
    with pytest.raises(FlagValueError, match=spec.name):
        coerce_flag_value(spec, value)
