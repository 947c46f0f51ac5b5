"""A batch of launches answered by one forked child equals one child per launch.

`Oracle.resolve_many` is how the differential corpora ask sglang (twice as fast as a
child per launch); the product asks one launch at a time. Each launch of a batch runs
isolated (its environment, working directory, logging and argparse hook put back, the
random state reseeded as after a fork), and a batch that a launch hangs or kills is asked
again one launch at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sglaunch.facts.presets import parse_gpu_spec
from sglaunch.oracle import Oracle, OracleQuery
from sglaunch.validators.facts import GpuFacts
from tests.support.batched import verdict_key
from tests.support.differential_corpus import FORCE_DENSE, build_corpus

pytestmark = pytest.mark.oracle

HANG = {"SGLAUNCH_ORACLE_TEST_HANG": "1"}
CRASH = {"SGLAUNCH_ORACLE_TEST_CRASH": "1"}


@pytest.fixture(scope="module")
def oracle(sglang_python: str) -> Iterator[Oracle]:
    with Oracle(sglang_python, timeout=60.0) as o:
        assert o.status.available, o.status.reason
        yield o


def _sample() -> list[OracleQuery]:
    """Every 40th corpus launch (models, GPUs, flag sets, accepted and rejected), and each
    launch that sets the environment followed by the same launch without it."""
    gpus: dict[str, GpuFacts] = {}
    out = []
    for i, case in enumerate(build_corpus()):
        gpu = gpus.setdefault(case.gpu, parse_gpu_spec(case.gpu))
        if i % 40 == 0 or (case.env_dict and i % 53 == 0):
            out.append(OracleQuery(case.argv(), case.env_dict, gpu))
            if case.env_dict:
                out.append(OracleQuery(case.argv(), {}, gpu))
    return out


def test_a_batch_answers_as_one_child_per_launch(oracle: Oracle) -> None:
    queries = _sample()
    assert any(q.env and FORCE_DENSE in q.env for q in queries)
    batched = oracle.resolve_many(queries, batch=16)
    alone = [oracle.resolve(q.argv, q.env, q.gpu) for q in queries]
    assert not [a for a in alone if a.fault]
    assert sum(a.ok for a in alone) and sum(not a.ok for a in alone), "accepted and rejected"
    differ = [
        f"{' '.join(q.argv)} env={q.env}"
        for q, b, a in zip(queries, batched, alone, strict=True)
        if verdict_key(b) != verdict_key(a)
    ]
    assert differ == []


def test_an_environment_does_not_leak_into_the_next_launch(
    oracle: Oracle, models: dict[str, Path], h100x1: GpuFacts
) -> None:
    argv = ["--model-path", str(models["sala"])]
    with_env = OracleQuery(argv, {FORCE_DENSE: "1"}, h100x1)
    without = OracleQuery(argv, {}, h100x1)
    first, second = oracle.resolve_many([with_env, without])
    assert verdict_key(first) != verdict_key(second), "the variable must change the verdict"
    assert verdict_key(second) == verdict_key(oracle.resolve(argv, {}, h100x1))


def test_a_launch_that_hangs_or_kills_its_child_is_asked_alone(
    sglang_python: str, h100x1: GpuFacts
) -> None:
    with Oracle(sglang_python, timeout=2.0) as short:
        assert short.status.available, short.status.reason
        fine = OracleQuery(["--tp-size", "x"], {}, h100x1)
        hang = OracleQuery(["--model-path", "x"], HANG, h100x1)
        crash = OracleQuery(["--model-path", "x"], CRASH, h100x1)
        answers = short.resolve_many([fine, hang, fine, crash, fine])
    assert [a.fault for a in answers] == [
        "",
        "sglang's resolution did not finish within 2 s",
        "",
        "the resolving process died without an answer (killed by signal 9)",
        "",
    ]
    for i in (0, 2, 4):
        assert answers[i].error is not None and answers[i].error.exit_code == 2
