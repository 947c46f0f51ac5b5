"""sglang's verdict across nodes: the line is resolved as the head and as a worker runs it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sglaunch.facts.model import load_model_facts
from sglaunch.flags.schema import bundled_schema
from sglaunch.oracle.answer import OracleAnswer, OracleError
from sglaunch.session import LaunchSession
from sglaunch.validators.facts import GpuFacts
from sglaunch.verdict import Tone, TwoTier
from tests.fakes.oracle import FakeOracle

LLAMA = "example:llama-3.1-8b"
LINE = [
    "--model-path",
    "m",
    "--tp",
    "16",
    "--dist-init-addr",
    "10.0.0.5:20000",
    "--host",
    "0.0.0.0",
]


def session(argv: list[str]) -> LaunchSession:
    s = LaunchSession(bundled_schema())
    s.choose_preset("H100x8")
    s.load_argv(argv)
    s.request_model(LLAMA)
    assert s.model_loaded(LLAMA, load_model_facts(LLAMA))
    return s


def rank_of(argv: Sequence[str]) -> str:
    return argv[argv.index("--node-rank") + 1] if "--node-rank" in argv else "0"


@dataclass
class RefusesRank(FakeOracle):
    """sglang that stops the node at one --node-rank (as a rank-dependent check would)."""

    refused: str = "1"

    def resolve(
        self, argv: Sequence[str], env: Mapping[str, str] | None, gpu: GpuFacts
    ) -> OracleAnswer:
        answer = super().resolve(argv, env, gpu)
        if rank_of(argv) != self.refused:
            return answer
        return OracleAnswer(
            ok=False,
            error=OracleError("ValueError", "node rank refused", where="srt/x.py:1"),
            sglang_version=self.version,
        )


def test_one_node_is_asked_once() -> None:
    oracle = FakeOracle()
    TwoTier(oracle).check(session(LINE))
    assert [rank_of(a) for a, _, _ in oracle.requests] == ["0"]


def test_the_head_line_is_asked_as_the_head_and_as_a_worker() -> None:
    oracle = FakeOracle()
    verdict = TwoTier(oracle).check(session([*LINE, "--nnodes", "2"]))
    assert [rank_of(a) for a, _, _ in oracle.requests] == ["0", "1"]
    # the same line but the rank, for the same GPUs of a node
    head, worker = (a for a, _, _ in oracle.requests)
    assert [t for t in worker if t not in ("--node-rank", "1")] == head
    assert all(gpu.nodes == 2 for _, _, gpu in oracle.requests)
    assert verdict.ok and verdict.tone is Tone.OK


def test_a_worker_line_is_asked_as_the_head_too() -> None:
    oracle = FakeOracle()
    TwoTier(oracle).check(session([*LINE, "--nnodes", "2", "--node-rank", "1"]))
    assert [rank_of(a) for a, _, _ in oracle.requests] == ["1", "0"]


def test_a_rank_sglang_refuses_is_the_verdict_and_named() -> None:
    verdict = TwoTier(RefusesRank()).check(session([*LINE, "--nnodes", "2"]))
    assert not verdict.ok and verdict.tone is Tone.ERROR
    (error,) = [f for f in verdict.errors if "node rank refused" in f.message]
    assert "--node-rank 1" in error.detail


def test_the_line_own_rejection_stands_without_asking_the_other_rank() -> None:
    oracle = RefusesRank(refused="0")
    verdict = TwoTier(oracle).check(session([*LINE, "--nnodes", "2"]))
    assert not verdict.ok
    assert [rank_of(a) for a, _, _ in oracle.requests][:1] == ["0"]
    assert "1" not in [rank_of(a) for a, _, _ in oracle.requests]
