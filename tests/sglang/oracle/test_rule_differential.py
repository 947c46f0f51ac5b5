"""The two tiers, case by case: the built-in rules against sglang's own resolution.

DESIGN ("Validation in two tiers"): when the two tiers disagree, the built-in
tier is wrong. Every case of the corpus (differential_corpus.py, ~2,000 launch
lines) runs through `check_flags` and through one warm oracle; the tests below
compare the verdicts. sglang must really run: without the oracle the module
fails (conftest), it is never skipped.

`pytest -s` prints the agreement counts and the sglang rejections that no
built-in rule covers yet (the list of rules to write next).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from sglaunch.checking import check_flags
from sglaunch.facts.model import load_model_facts
from sglaunch.facts.presets import parse_gpu_spec
from sglaunch.flags.schema import bundled_schema
from sglaunch.oracle import Oracle, OracleQuery
from sglaunch.oracle.answer import OracleAnswer
from sglaunch.oracle.answer_findings import oracle_findings
from sglaunch.validators.engine import all_rules, get_rule
from sglaunch.validators.facts import GpuFacts
from sglaunch.validators.findings import Finding, Severity
from tests.releases import RELEASES_VAR, REQUIRED_RELEASES, release_pythons
from tests.sglang.conftest import require_sglang_python
from tests.support.batched import answer_all
from tests.support.differential_corpus import (
    BLACKWELL,
    FLAG_SETS,
    GENERAL_CASES,
    GPUS,
    MODELS,
    SM100,
    Case,
    build_corpus,
)

# the corpus runs once, inside the first test's setup: ~2,000 answers take about
# two minutes on two cores, more than pytest's default 300 s leaves for a slow CI
pytestmark = [pytest.mark.oracle, pytest.mark.timeout(900)]

MINICPM_MESSAGES = frozenset(
    {
        "MiniCPM does not support DP attention",
        "MiniCPM SALA does not support hierarchical cache",
        "MiniCPM sparse attention does not support PD disaggregation",
    }
)
# what a rule mirrors decides whether sglang's resolution can check it: a
# "launch" rule predicts a failure after resolution, which the oracle never sees
CHECKABLE = frozenset({"parse", "config", "resolution"})
LAUNCH_RULES = frozenset(
    {
        "parallel-gpus",
        "port-range",
        "heads-divide-tp",
        "mem-fraction-range",
        "fa3-needs-sm80-sm90",
        "parallel-size-positive",
        "weights-exceed-gpu-memory",
    }
)
BACKEND_FLAGS = ("--attention-backend", "--prefill-attention-backend", "--decode-attention-backend")


@dataclass(frozen=True)
class Outcome:
    case: Case
    builtin: tuple[Finding, ...]
    answer: OracleAnswer
    version: str  # the sglang release both tiers checked for

    @property
    def builtin_errors(self) -> list[Finding]:
        return [f for f in self.builtin if f.severity is Severity.ERROR]

    def checkable_errors(self) -> list[Finding]:
        """Built-in errors from rules whose verdict sglang's resolution gives too."""
        out = []
        for f in self.builtin_errors:
            r = get_rule(f.code)
            if r is not None and r.mirrors in CHECKABLE:
                out.append(f)
        return out

    @property
    def sglang_message(self) -> str:
        return self.answer.error.message if self.answer.error is not None else ""

    @property
    def minicpm_rejection(self) -> bool:
        return self.sglang_message in MINICPM_MESSAGES

    def claimed_by(self) -> str | None:
        """The built-in rule whose card claims sglang's error (None when none does)."""
        if self.answer.ok or self.answer.error is None:
            return None
        [error] = [f for f in oracle_findings(self.answer) if f.severity is Severity.ERROR]
        r = get_rule(error.code)
        if r is not None and r.mirrors in CHECKABLE and r.exists_in(self.version):
            return r.code
        # a bare assert has no message to match a card; its file:line still names the
        # rule (only then: argparse raises every one of its errors from the same line)
        where = self.answer.error.where
        if where and not self.answer.error.message:
            for r in all_rules():
                if not (r.mirrors in CHECKABLE and r.exists_in(self.version)):
                    continue
                if r.ref_for(self.version).split(" ")[0] == where:
                    return r.code
        return None

    def label(self) -> str:
        return f"{self.case.id} [{' '.join(self.case.flags)}] env={self.case.env_dict}"


def _lines(items: list[str], limit: int = 25) -> str:
    more = f"\n  ... and {len(items) - limit} more" if len(items) > limit else ""
    return "\n  " + "\n  ".join(items[:limit]) + more


def _releases() -> list[str]:
    return list(release_pythons()) or ["none"]


def test_the_corpus_runs_on_the_required_releases() -> None:
    have = release_pythons()
    missing = [v for v in REQUIRED_RELEASES if v not in have]
    assert not missing, (
        f"the differential corpus must run on sglang {', '.join(REQUIRED_RELEASES)}; "
        f"{', '.join(missing)} missing (found {sorted(have)}). `make test` builds them "
        f"(.venv-sglang-VERSION) and names them in {RELEASES_VAR}"
    )


@pytest.fixture(scope="module", params=_releases())
def release(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def oracle(release: str) -> Iterator[Oracle]:
    """The one warm worker every case of this module asks, once per release."""
    python = release_pythons().get(release) or require_sglang_python()
    o = Oracle(python, timeout=60.0)
    status = o.start()
    if not status.available:
        o.close()
        # never a skip: a green run must mean sglang's own resolution really ran
        pytest.fail(
            f"the differential corpus needs sglang's own resolution: {status.reason}",
            pytrace=False,
        )
    try:
        yield o
    finally:
        o.close()


@pytest.fixture(scope="module")
def outcomes(oracle: Oracle) -> list[Outcome]:
    """Every corpus case through both tiers, with the one warm oracle of this module.

    The built-in tier checks for the oracle's release: its bundled schema, its
    model-type facts and its rules."""
    version = oracle.status.sglang_version
    assert version, oracle.status
    schema = bundled_schema(version)
    assert schema.sglang_version == version, f"no bundled schema for sglang {version}"
    facts = {m.source: load_model_facts(m.source, sglang_version=version) for m in MODELS}
    gpus: dict[str, GpuFacts] = {}
    t0 = time.perf_counter()
    corpus = build_corpus()
    queries: list[OracleQuery] = []
    builtin: list[tuple[Finding, ...]] = []
    for case in corpus:
        gpu = gpus.setdefault(case.gpu, parse_gpu_spec(case.gpu))
        model = facts.get(case.model.source) or load_model_facts(
            case.model.source, sglang_version=version
        )
        argv = case.argv()
        result = check_flags(
            argv, schema=schema, gpu=gpu, model=model, env=case.env_dict, sglang_version=version
        )
        builtin.append(tuple(result.builtin.findings))
        queries.append(OracleQuery(argv, case.env_dict, gpu))
    answers = answer_all(oracle, queries)
    out = [
        Outcome(case, found, answer, version)
        for case, found, answer in zip(corpus, builtin, answers, strict=True)
    ]
    wall = time.perf_counter() - t0
    faults = [f"{o.label()}: {o.answer.fault}" for o in out if o.answer.fault]
    # a case without sglang's verdict compares nothing: the corpus is void
    assert not faults, f"{len(faults)} cases got no verdict from the oracle:" + _lines(faults)
    accepted = sum(o.answer.ok for o in out)
    print(
        f"\n[differential sglang {version}] {len(out)} cases ({sum(o.case.group == 'matrix' for o in out)} MiniCPM "
        f"matrix, {sum(o.case.group == 'general' for o in out)} general-rule) in {wall:.1f} s "
        f"({wall / max(len(out), 1) * 1000:.0f} ms a case); sglang accepts {accepted}, "
        f"rejects {len(out) - accepted}"
    )
    return out


# --- the corpus itself -------------------------------------------------------------


def test_the_corpus_is_the_whole_matrix() -> None:
    cases = build_corpus()
    matrix = [c for c in cases if c.group == "matrix"]
    minicpm = [m for m in MODELS if m.minicpm]
    others = [m for m in MODELS if not m.minicpm]
    no_trust = sum(m.remote_code for m in MODELS) * len(FLAG_SETS)
    want = len(FLAG_SETS) * len(GPUS) * (2 * len(minicpm) + len(others)) + no_trust
    assert len(matrix) == want, (len(matrix), want)
    assert len({c.id for c in cases}) == len(cases), "case ids must be unique"
    general = [c for c in cases if c.group == "general"]
    assert sum(c.own_gpu for c in general) == len(GENERAL_CASES)
    assert len(cases) >= 1500


# --- 1. MiniCPM errors -------------------------------------------------------------


def test_every_minicpm_rejection_is_raised_by_the_builtin_tier(outcomes: list[Outcome]) -> None:
    """Where sglang raises a MiniCPM error, the built-in tier raises the same message."""
    rejected = [o for o in outcomes if o.minicpm_rejection]
    missed = [
        f"{o.label()}: sglang {o.sglang_message!r}; built-in {[f.message for f in o.builtin_errors]}"
        for o in rejected
        if o.sglang_message not in {f.message for f in o.builtin_errors}
    ]
    counts = Counter(o.sglang_message for o in rejected)
    summary = f"MiniCPM rejections by sglang: {len(rejected)} ({dict(counts)}); agree {len(rejected) - len(missed)}/{len(rejected)}"
    print(f"[1] {summary}")
    assert rejected, "the corpus must contain MiniCPM rejections"
    assert not missed, summary + _lines(missed)


def test_a_claimed_sglang_rejection_is_raised_by_its_rule(outcomes: list[Outcome]) -> None:
    """When sglang's error is one a built-in rule's card claims (by message, or by file:line
    for a bare assert), that rule fires too, in sglang's exact words for a resolution rule."""
    claimed = [(o, code) for o in outcomes if (code := o.claimed_by()) is not None]
    problems = []
    for o, code in claimed:
        ours = [f for f in o.builtin_errors if f.code == code]
        if not ours:
            problems.append(
                f"{o.label()}: sglang {o.sglang_message[:120]!r} ({o.answer.error.where if o.answer.error else ''}) "
                f"is {code}'s, which did not fire; built-in {[f.code for f in o.builtin_errors]}"
            )
            continue
        r = get_rule(code)
        exact = r is not None and r.mirrors == "resolution" and o.sglang_message
        if exact and o.sglang_message not in {f.message for f in ours}:
            problems.append(
                f"{o.label()}: {code} says {ours[0].message[:120]!r}, sglang {o.sglang_message[:120]!r}"
            )
    summary = f"sglang rejections claimed by a built-in rule: {len(claimed)}; agree {len(claimed) - len(problems)}/{len(claimed)}"
    print(f"[1b] {summary}")
    assert not problems, summary + _lines(problems)


# --- 2 and 3. accept/reject agreement ------------------------------------------------


def test_no_builtin_error_where_sglang_accepts(outcomes: list[Outcome]) -> None:
    """Where sglang accepts, no rule that mirrors parse/config/resolution raises an error."""
    accepted = [o for o in outcomes if o.answer.ok]
    wrong = [
        f"{o.label()}: {[(f.code, f.message[:100]) for f in o.checkable_errors()]}"
        for o in accepted
        if o.checkable_errors()
    ]
    launch_only = sum(bool(o.builtin_errors) and not o.checkable_errors() for o in accepted)
    summary = (
        f"sglang accepts {len(accepted)}; built-in tier agrees (no parse/config/resolution error) "
        f"{len(accepted) - len(wrong)}/{len(accepted)}; launch-rule errors kept out: {launch_only}"
    )
    print(f"[2] {summary}")
    assert not wrong, summary + _lines(wrong)


def test_minicpm_errors_only_before_the_provider_passed(outcomes: list[Outcome]) -> None:
    """A MiniCPM error the built-in tier raises needs sglang to reject: where sglang got past
    resolve_once (it accepts, or rejects only in check_server_args), the provider passed."""
    passed = [
        o
        for o in outcomes
        if o.answer.ok or (o.answer.error is not None and o.answer.error.stage == "check")
    ]
    wrong = [
        f"{o.label()}: {[f.message for f in o.builtin_errors if f.message in MINICPM_MESSAGES]}"
        for o in passed
        if any(f.message in MINICPM_MESSAGES for f in o.builtin_errors)
    ]
    assert not wrong, f"{len(wrong)} built-in MiniCPM errors sglang did not raise:" + _lines(wrong)


def test_builtin_errors_match_sglang_rejections_and_report_the_rest(
    outcomes: list[Outcome],
) -> None:
    """Where sglang rejects with a non-MiniCPM error: count the cases the built-in tier also
    rejects, and list the ones it misses (not failures: the rules to write next)."""
    rejected = [o for o in outcomes if not o.answer.ok and not o.minicpm_rejection]
    caught = [o for o in rejected if o.builtin_errors]
    missed = [o for o in rejected if not o.builtin_errors]
    by_kind: Counter[tuple[str, str, str]] = Counter()
    example: dict[tuple[str, str, str], str] = {}
    for o in missed:
        err = o.answer.error
        assert err is not None
        key = (err.type, err.message, err.where)
        by_kind[key] += 1
        example.setdefault(key, o.label())
    summary = (
        f"sglang rejects {len(rejected)} with a non-MiniCPM error; the built-in tier also rejects "
        f"{len(caught)}, misses {len(missed)} ({len(by_kind)} distinct)"
    )
    print(f"[3] {summary}")
    for (etype, message, where), n in by_kind.most_common():
        print(
            f"    {n:4d}x {etype}: {message!r} at {where or '?'}  e.g. {example[(etype, message, where)]}"
        )
    # a miss that a built-in rule claims is a failure (see the claimed-rejection test);
    # every other miss is reported above and does not fail
    claimed = [f"{o.label()}: {o.claimed_by()}" for o in missed if o.claimed_by()]
    assert not claimed, summary + _lines(claimed)


# --- 4. MiniCPM overrides against sglang's resolved values ---------------------------


def _has_flag(case: Case, *names: str) -> bool:
    return any(n in case.flags for n in names)


def test_minicpm_overrides_match_the_resolved_values(outcomes: list[Outcome]) -> None:
    accepted = [o for o in outcomes if o.answer.ok]
    checked = 0
    wrong = []
    for o in accepted:
        resolved = o.answer.resolved
        assert resolved is not None
        for f in o.builtin:
            if not f.code.startswith("minicpm") or f.override is None:
                continue
            checked += 1
            got = resolved.get(f.override.field)
            if got != f.override.value:
                wrong.append(
                    f"{o.label()}: {f.code} predicts {f.override.field}={f.override.value!r}, sglang resolved {got!r}"
                )
    summary = f"MiniCPM override findings on accepted cases: {checked}; match sglang {checked - len(wrong)}/{checked}"
    print(f"[4] {summary}")
    assert checked > 0
    assert not wrong, summary + _lines(wrong)


def test_sparse_backend_and_radix_cache_follow_the_model(outcomes: list[Outcome]) -> None:
    """The converse of the override check: what sglang resolved, the built-in tier predicted."""
    backend_checked = triton_checked = radix_checked = 0
    wrong = []
    for o in outcomes:
        c = o.case
        if not o.answer.ok or c.group != "matrix":
            continue
        resolved = o.answer.resolved
        assert resolved is not None
        predicted = {
            f.override.field: f.override.value
            for f in o.builtin
            if f.override and f.code.startswith("minicpm")
        }
        m = c.model
        if m.sparse and not c.force_dense and not _has_flag(c, *BACKEND_FLAGS):
            backend_checked += 1
            want = "minicpm_flashinfer" if BLACKWELL[c.gpu] else "minicpm_flashattn"
            got = (resolved["attention_backend"], predicted.get("attention_backend"))
            if got != (want, want):
                wrong.append(
                    f"{o.label()}: attention_backend (sglang, built-in) = {got}, want {want}"
                )
        if m.vision_in(o.version) and SM100[c.gpu] and not _has_flag(c, "--attention-backend"):
            # minicpmv.py:16: on SM100 an unset --attention-backend becomes triton
            triton_checked += 1
            got = (resolved["attention_backend"], predicted.get("attention_backend"))
            if got != ("triton", "triton"):
                wrong.append(
                    f"{o.label()}: attention_backend (sglang, built-in) = {got}, want triton"
                )
        # sglang's MiniCPM provider turns the radix cache off for hybrid layers
        # (minicpm.py:27); a PD decode server turns it off for every model
        # (pd_disaggregation_hook.py:125), which no MiniCPM rule predicts
        radix_checked += 1
        decode = "decode" in c.flags
        hybrid = m.sparse or m.lightning
        if resolved["disable_radix_cache"] is not (hybrid or decode):
            wrong.append(
                f"{o.label()}: sglang resolved disable_radix_cache={resolved['disable_radix_cache']}, hybrid={hybrid}"
            )
        if (predicted.get("disable_radix_cache") is True) is not hybrid:
            wrong.append(
                f"{o.label()}: the built-in radix-cache override is {predicted.get('disable_radix_cache')}, hybrid={hybrid}"
            )
    summary = (
        f"sparse-backend picks checked {backend_checked}, MiniCPM-V triton picks {triton_checked}, "
        f"radix-cache outcomes checked {radix_checked}; "
        f"disagreements {len(wrong)}"
    )
    print(f"[4b] {summary}")
    assert backend_checked >= 4 * len(GPUS) and triton_checked > 0
    assert not wrong, summary + _lines(wrong)


# --- 5. the general rules' bad cases -------------------------------------------------


def _general_bad_cases(outcomes: list[Outcome]) -> Iterator[Outcome]:
    for o in outcomes:
        c = o.case
        if c.group != "general" or not c.own_gpu or c.expected is not Severity.ERROR:
            continue
        if c.rule in LAUNCH_RULES:
            continue
        yield o


def test_general_bad_cases_are_rejected_by_sglang(outcomes: list[Outcome]) -> None:
    """A rule that mirrors parse/config/resolution invents no error: on each of its bad cases
    from the general-rules table (on the row's own GPU), sglang rejects too."""
    bad = list(_general_bad_cases(outcomes))
    for o in bad:
        r = get_rule(o.case.rule)
        assert r is not None and r.mirrors in CHECKABLE, (o.case.rule, r and r.mirrors)
    wrong = [f"{o.label()}: {o.case.rule} says error, sglang accepts" for o in bad if o.answer.ok]
    summary = (
        f"general-rule bad cases (parse/config/resolution rules): {len(bad)}; "
        f"sglang rejects {len(bad) - len(wrong)}/{len(bad)} "
        f"(rules: {len({o.case.rule for o in bad})})"
    )
    print(f"[5] {summary}")
    # every error row of the table for such a rule is here, on its own GPU
    assert len(bad) == sum(
        row[5] is Severity.ERROR and row[0] not in LAUNCH_RULES for row in GENERAL_CASES
    )
    assert not wrong, summary + _lines(wrong)
