"""Multi-node lines against sglang's own resolution, on every release built here.

sglang's own rejections (tp × pp over the nodes, replicas across nodes, --nnodes 0) must be
rejected by sglang with the built-in rule's words; what sglang lets through (reference §2.2)
must be accepted by sglang and caught by a built-in launch-stage rule. And the verdict asks
sglang for the head's line and a worker's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from sglaunch.checking import build_input
from sglaunch.facts.model import load_model_facts
from sglaunch.facts.presets import parse_gpu_spec
from sglaunch.flags.argv import parse_argv
from sglaunch.flags.schema import bundled_schema
from sglaunch.oracle import Oracle
from sglaunch.oracle.answer import OracleAnswer, OracleStatus
from sglaunch.session import LaunchSession
from sglaunch.validators.engine import get_rule, validate
from sglaunch.validators.facts import GpuFacts
from tests.releases import REQUIRED_RELEASES, release_pythons
from tests.sglang.conftest import require_sglang_python

pytestmark = [pytest.mark.oracle, pytest.mark.timeout(600)]

ADDR = ["--dist-init-addr", "10.0.0.5:20000", "--host", "0.0.0.0"]
# sglang rejects these while resolving: (argv, the built-in code, sglang's words per release)
REJECTED = [
    (
        ["--tp", "4", "--nnodes", "3", *ADDR],
        "nnodes-divides-tp",
        "tp_size must be divisible by number of nodes",
    ),
    (["--tp", "8", "--nnodes", "0"], "nnodes-positive", "integer modulo by zero"),
    (["--tp", "8", "--dp-size", "2", "--nnodes", "2", *ADDR], "multinode-dp-replicas", None),
]
DP_WORDS = {
    "0.5.19": "multi-node data parallel is not supported unless dp attention!",
    "0.5.21": "multi-node data parallel is not supported unless dp attention!",
    "0.5.23": "multi-node data-parallel replicas are not supported",
}
# sglang accepts these, then hangs or fails while starting: a launch-stage rule says so
LET_THROUGH = [
    (["--tp", "16", "--nnodes", "2", "--node-rank", "5", *ADDR], "node-rank-range"),
    (["--tp", "16", "--nnodes", "2"], "dist-init-addr-missing"),
    (
        ["--tp", "16", "--nnodes", "2", "--dist-init-addr", "fd00::1:5000"],
        "dist-init-addr-bare-ipv6",
    ),
    (["--tp", "16", "--nnodes", "2", "--dist-init-addr", "10.0.0.5"], "dist-init-addr-port"),
    (["--tp", "16", "--nnodes", "2", "--dist-timeout", "0", *ADDR], "dist-timeout-positive"),
    (
        ["--tp", "16", "--nnodes", "2", "--dist-init-addr", "10.0.0.5:30000"],
        "dist-init-port-equals-port",
    ),
    (["--tp", "32", "--nnodes", "2", *ADDR], "gpus-per-node"),
    (["--tp", "4", "--pp-size", "3", "--nnodes", "2", *ADDR], "pp-stages-nodes"),
]


def releases() -> list[str]:
    return [r for r in REQUIRED_RELEASES if r in release_pythons()] or ["0.5.23"]


@pytest.fixture(scope="module")
def gpu() -> GpuFacts:
    return parse_gpu_spec("H100x8").on_nodes(2)


def builtin(argv: list[str], gpu: GpuFacts, release: str) -> list[str]:
    schema = bundled_schema(release)
    parsed = parse_argv(argv, schema)
    model = load_model_facts(parsed.values["model_path"], sglang_version=release)
    inp = build_input(
        parsed.values, gpu=gpu, model=model, env={}, schema=schema, sglang_version=release
    )
    return [f.code for f in validate(inp).errors]


@pytest.mark.parametrize("release", releases())
def test_multinode_lines_against_sglang(
    release: str, models: dict[str, Path], gpu: GpuFacts
) -> None:
    python = release_pythons().get(release) or require_sglang_python()
    model = ["--model-path", str(models["minicpm"])]
    with Oracle(python, timeout=60.0) as oracle:
        assert oracle.status.available, oracle.status.reason
        assert oracle.status.sglang_version == release
        for argv, code, words in REJECTED:
            answer = oracle.resolve([*model, *argv], {}, gpu)
            assert not answer.fault, answer.fault
            assert not answer.ok, argv
            assert answer.error is not None
            assert (words or DP_WORDS[release]) in answer.error.message
            assert code in builtin([*model, *argv], gpu, release)
            rule = get_rule(code)
            assert rule is not None and rule.mirrors == "resolution"
        for argv, code in LET_THROUGH:
            answer = oracle.resolve([*model, *argv], {}, gpu)
            assert not answer.fault, answer.fault
            # sglang's argument checks let it through (reference §2.2) ...
            assert answer.ok, (argv, answer.error)
            # ... and sglaunch's own launch-stage rule stops it before launch
            assert code in builtin([*model, *argv], gpu, release), argv
            rule = get_rule(code)
            assert rule is not None and rule.mirrors == "launch"


class Recording:
    """The real oracle, with the lines it was asked about."""

    def __init__(self, oracle: Oracle) -> None:
        self.oracle = oracle
        self.asked: list[list[str]] = []

    def start(self) -> OracleStatus:
        return self.oracle.status

    def resolve(
        self, argv: Sequence[str], env: Mapping[str, str] | None, gpu: GpuFacts
    ) -> OracleAnswer:
        self.asked.append(list(argv))
        return self.oracle.resolve(argv, env, gpu)

    def close(self) -> None:
        return None


def test_the_verdict_asks_sglang_as_the_head_and_as_a_worker(models: dict[str, Path]) -> None:
    from sglaunch.verdict import TwoTier

    session = LaunchSession(bundled_schema())
    session.choose_preset("H100x8")
    source = str(models["minicpm"])
    session.load_argv(["--model-path", source, "--tp", "16", "--nnodes", "2", *ADDR])
    session.request_model(source)
    assert session.model_loaded(source, load_model_facts(source))
    with Oracle(require_sglang_python(), timeout=60.0) as oracle:
        recording = Recording(oracle)
        verdict = TwoTier(recording).check(session)
    ranks = [a[a.index("--node-rank") + 1] if "--node-rank" in a else "0" for a in recording.asked]
    assert ranks == ["0", "1"]
    assert verdict.answer is not None and verdict.answer.ok
    assert verdict.answer.resolved is not None
    assert verdict.answer.resolved["nnodes"] == 2 and verdict.answer.resolved["node_rank"] == 0
