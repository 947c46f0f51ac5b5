"""The built-in memory plan against sglang's own code, case by case (the CPU sglang environments).

For every example model and test model × H100/H200/A100-40GB/L40S/RTX 5090/B200
× TP 1/2/4/8 (1/4 on the older releases, where make test also runs it: 0.5.19 and
0.5.21) × three flag sets, one warm oracle resolves the launch and, with
the free memory emulated as the plan's baseline less its weights, runs sglang's
`_resolve_memory_pool_config` (sglaunch/in_sglang/memory_probe.py). The built-in
plan must equal it: the knobs sglang's resolution sets (mem_fraction_static,
chunked_prefill_size, the decode graph max_bs, page_size), the tokens, the
max_running_requests, the SWA and mamba pool sizes, and sglang's error text.

sglang must really run: without the oracle the module fails, it is never skipped.
`pytest -s` prints the counts and the time the matrix took.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from sglaunch.facts.model import model_path_for_sglang
from sglaunch.memory.oracle_request import oracle_memory_request, plan_numbers
from sglaunch.oracle import Oracle, OracleQuery
from sglaunch.oracle.answer import OracleAnswer
from sglaunch.validators.memory.plan import MemoryPlan, plan_memory
from sglaunch.validators.release_spans import key as version_key
from tests.conftest import MODELS, make_input
from tests.releases import RELEASES_VAR, REQUIRED_RELEASES, release_pythons
from tests.support.batched import answer_all

pytestmark = [pytest.mark.oracle, pytest.mark.timeout(900)]

EXAMPLES = [
    "example:llama-3.1-8b",
    "example:minicpm-sala",
    "example:minicpm-v-4.6",
    "example:minicpm4-8b",
]
TEST_MODELS = sorted(p.name for p in MODELS.iterdir() if (p / "config.json").is_file())
ALL_MODELS = EXAMPLES + TEST_MODELS
GPUS = ["H100x8", "H200x8", "A100-40GBx8", "L40Sx8", "RTX5090x8", "B200x8"]
TPS = [1, 2, 4, 8]
FLAG_SETS = [
    [],
    ["--mem-fraction-static", "0.6", "--kv-cache-dtype", "fp8_e4m3"],
    [
        "--max-total-tokens",
        "100000",
        "--chunked-prefill-size",
        "4096",
        "--cuda-graph-max-bs-decode",
        "64",
    ],
]
# the models whose pool sglaunch does not size (a problem line in the plan); sglang
# itself fails on these trimmed configs (see test_unsized_models_are_the_expected_ones)
UNSIZED = frozenset({"example:minicpm-v-4.6", "minicpmv-4.6", "minicpmv-4.7"})


@dataclass(frozen=True)
class Outcome:
    model: str
    gpu: str
    argv: tuple[str, ...]
    plan: MemoryPlan
    answer: OracleAnswer

    @property
    def label(self) -> str:
        return f"{self.model} {self.gpu} {' '.join(self.argv)}"


# DP attention, pipeline stages, pages and caps, on the models they matter for
EXTRA = [
    ("deepseek-v2-lite", "H100x8", ["--tp-size", "4", "--attn-dp-size", "4"]),
    ("deepseek-v2-lite", "B200x8", ["--tp-size", "8", "--enable-dp-attention", "--dp-size", "8"]),
    ("example:llama-3.1-8b", "H100x8", ["--tp-size", "4", "--attn-dp-size", "2"]),
    ("example:llama-3.1-8b", "H100x8", ["--tp-size", "2", "--pp-size", "2"]),
    ("example:llama-3.1-8b", "A100-40GBx8", ["--tp-size", "1", "--pp-size", "4"]),
    ("example:llama-3.1-8b", "H100x8", ["--page-size", "64", "--max-running-requests", "100"]),
    ("qwen3-next-80b", "H200x8", ["--tp-size", "2", "--pp-size", "2"]),
    (
        "qwen3-next-80b",
        "H100x8",
        ["--tp-size", "4", "--max-running-requests", "64", "--disable-radix-cache"],
    ),
    ("gpt-oss-20b-bf16", "H100x8", ["--tp-size", "2", "--pp-size", "2"]),
    ("gpt-oss-20b-bf16", "L40Sx8", ["--swa-full-tokens-ratio", "0.3"]),
    ("example:minicpm-sala", "H100x8", ["--pp-size", "2"]),
    ("example:minicpm-sala", "H100x8", ["--max-running-requests", "32"]),
    ("example:minicpm-sala", "RTX5090x8", ["--mem-fraction-static", "0.5"]),
]


# the older releases: both sides of the tp < 4 tier split, every model, GPU and flag set
OLD_TPS = [1, 4]


def _cases(tps: list[int]) -> Iterator[tuple[str, str, list[str]]]:
    for model in ALL_MODELS:
        for gpu in GPUS:
            for tp in tps:
                for flags in FLAG_SETS:
                    yield model, gpu, ["--tp-size", str(tp), *flags]
    yield from EXTRA


def test_the_memory_differential_runs_on_the_required_releases() -> None:
    have = release_pythons()
    missing = [v for v in REQUIRED_RELEASES if v not in have]
    assert not missing, (
        f"the memory differential must run on sglang {', '.join(REQUIRED_RELEASES)}; "
        f"{', '.join(missing)} missing (found {sorted(have)}). `make test` builds them "
        f"(.venv-sglang-VERSION) and names them in {RELEASES_VAR}"
    )


@pytest.fixture(scope="module", params=list(release_pythons()) or ["none"])
def release(request: pytest.FixtureRequest) -> str:
    """The release the module's tests run on (its own xdist group, tests/support/xdist_groups.py)."""
    return str(request.param)


@pytest.fixture(scope="module")
def outcomes(release: str, sglang_python: str) -> list[Outcome]:
    python = release_pythons().get(release) or sglang_python
    t0 = time.perf_counter()
    with Oracle(python, timeout=60.0) as oracle:
        assert oracle.status.available, oracle.status.reason
        version = oracle.status.sglang_version  # the plan for the release that answers
        newest = not release_pythons() or version == max(release_pythons(), key=version_key)
        asked: list[tuple[str, str, list[str], MemoryPlan]] = []
        queries: list[OracleQuery] = []
        for model, gpu, argv in _cases(TPS if newest else OLD_TPS):
            inp = make_input(model, argv, gpu, version=version)
            plan = plan_memory(inp)
            source = model if model.startswith("example:") else str(MODELS / model)
            full = ["--model-path", model_path_for_sglang(source), *argv]
            asked.append((model, gpu, argv, plan))
            queries.append(
                OracleQuery(full, {}, inp.gpu, memory=oracle_memory_request(plan, inp.model))
            )
        answers = answer_all(oracle, queries)
    out = [
        Outcome(model, gpu, tuple(argv), plan, answer)
        for (model, gpu, argv, plan), answer in zip(asked, answers, strict=True)
    ]
    elapsed = time.perf_counter() - t0
    print(
        f"\nmemory differential, sglang {version}: {len(out)} launches through sglang "
        f"in {elapsed:.0f} s"
    )
    return out


def _resolved(o: Outcome) -> dict[str, Any]:
    return o.answer.resolved or {}


def test_the_oracle_answered_every_case(outcomes: list[Outcome]) -> None:
    faults = [f"{o.label}: {o.answer.fault}" for o in outcomes if o.answer.fault]
    assert faults == []
    accepted = [o for o in outcomes if o.answer.ok]
    assert len(accepted) > len(outcomes) // 2, "most launches should resolve"


def test_knobs_equal_sglangs_resolution(outcomes: list[Outcome]) -> None:
    """The built-in mirror's defaults are sglang's: fraction, chunked prefill, graph max_bs, page size."""
    wrong = []
    for o in outcomes:
        if not o.answer.ok:
            continue
        r = _resolved(o)
        k = o.plan.knobs
        decode = (r.get("cuda_graph_config") or {}).get("decode") or {}
        theirs = (
            r.get("mem_fraction_static"),
            r.get("chunked_prefill_size"),
            decode.get("max_bs"),
            r.get("page_size"),
        )
        ours = (k.mem_fraction_static, k.chunked_prefill_size, k.decode_max_bs, k.page_size)
        if theirs != ours:
            wrong.append(f"{o.label}: sglang {theirs} built-in {ours}")
    assert wrong == [], "\n".join(wrong[:60])


def test_pool_equals_sglangs_pool_configurator(outcomes: list[Outcome]) -> None:
    """Tokens, requests, SWA and state pools, or sglang's exact error, for the same budget."""
    wrong = []
    compared = Counter[str]()
    for o in outcomes:
        mem = o.answer.memory
        if not o.answer.ok or mem is None or o.model in UNSIZED:
            continue
        ours = plan_numbers(o.plan)
        if mem.get("error"):
            if mem["error"].get("fault"):  # the probe's stub, not sglang: never a pass
                wrong.append(f"{o.label}: the probe could not run sglang's code: {mem['error']}")
                continue
            compared["error"] += 1
            if ours["error"] != mem["error"]["message"]:
                wrong.append(
                    f"{o.label}: sglang raised {mem['error']['message']!r}, built-in {ours['error']!r}"
                )
            continue
        compared["sized"] += 1
        theirs = {
            k: mem.get(k)
            for k in (
                "max_total_num_tokens",
                "max_running_requests",
                "swa_tokens",
                "max_mamba_cache_size",
            )
        }
        mine = {k: ours[k] for k in theirs}
        if (
            ours["error"] is not None
            and o.plan.error is not None
            and o.plan.error.kind == "sala-page"
        ):
            mine["max_running_requests"] = theirs[
                "max_running_requests"
            ]  # fails later, at backend init
        if theirs != mine:
            wrong.append(f"{o.label}: sglang {theirs} built-in {mine} ({ours['error']})")
    print(f"pool comparisons: {dict(compared)}")
    assert wrong == [], "\n".join(wrong[:60])
    assert compared["sized"] > 100 and compared["error"] > 10


def test_unsized_models_are_the_expected_ones(outcomes: list[Outcome]) -> None:
    """Where the plan has no token count, it says why, and sglang's own sizing fails too."""
    unsized = {
        o.model
        for o in outcomes
        if o.answer.ok and o.plan.max_total_num_tokens is None and o.plan.error is None
    }
    assert unsized == UNSIZED
    for o in outcomes:
        if o.model in UNSIZED and o.answer.ok and o.answer.memory is not None:
            assert o.plan.problems
            assert o.answer.memory.get("error"), o.label
