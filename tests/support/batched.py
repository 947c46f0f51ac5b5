"""The differential corpora ask sglang in batches: one forked child answers many launches
(`Oracle.resolve_many`), about twice as fast as a child per launch. Every Nth launch is
asked again on its own, and the two answers must agree: the corpus proves on each release
that a batch answers as the product's one-launch path does."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sglaunch.oracle import Oracle, OracleAnswer, OracleQuery

# one launch in SPOT_EVERY is also asked alone
SPOT_EVERY = 40


def verdict_key(a: OracleAnswer) -> tuple[Any, ...]:
    """What an answer says, without its timings and the seed sglang draws at random
    (`random_seed`, unset: a fresh draw per launch, in a forked child as in a batch)."""

    def seedless(d: dict[str, Any] | None) -> dict[str, Any]:
        return {k: v for k, v in (d or {}).items() if k != "random_seed"}

    error = a.error and (a.error.type, a.error.message, a.error.where, a.error.stage)
    return (
        a.ok,
        error,
        seedless(a.resolved),
        seedless(a.changed),
        a.explicit,
        a.warnings,
        a.fault,
        a.memory,
    )


def answer_all(oracle: Oracle, queries: Sequence[OracleQuery]) -> list[OracleAnswer]:
    """sglang's answer to every query, in order; a fault (a worker that died or a child that
    overran on a busy machine) is asked once more on its own."""
    answers = oracle.resolve_many(queries)
    for i, (q, a) in enumerate(zip(queries, answers, strict=True)):
        if a.fault:
            answers[i] = oracle.resolve(q.argv, q.env, q.gpu, memory=q.memory, cwd=q.cwd)
    mismatched = []
    for i in range(0, len(queries), SPOT_EVERY):
        q = queries[i]
        alone = oracle.resolve(q.argv, q.env, q.gpu, memory=q.memory, cwd=q.cwd)
        if (
            not alone.fault
            and not answers[i].fault
            and verdict_key(alone) != verdict_key(answers[i])
        ):
            mismatched.append(f"{' '.join(q.argv)} env={dict(q.env or {})}")
    assert not mismatched, (
        f"{len(mismatched)} launches answered differently in a batch than alone: "
        + "; ".join(mismatched[:5])
    )
    return answers
