"""sglang's question leaves before the built-in rules run, and the verdict is the same.

A client that can answer later (`submit`) is sent the question as soon as the launch is
known (`check`: worked out from the launch alone, before its session and rules load);
`check` reads that answer instead of asking again, and an answer for a revision that has
since changed, or for another launch, is read off and dropped, never mistaken for the next.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from sglaunch.cli import check as check_cli
from sglaunch.facts.model import load_model_facts
from sglaunch.flags.schema import bundled_schema
from sglaunch.oracle.answer import OracleAnswer
from sglaunch.session import LaunchSession
from sglaunch.validators.facts import GpuFacts
from sglaunch.verdict import TwoTier
from tests.fakes.oracle import FakeOracle

EXAMPLE = "example:minicpm-sala"
BAD = ["--attn-dp-size", "2", "--tp-size", "2"]


@dataclass
class LaterOracle(FakeOracle):
    """The fake oracle, able to take a question now and give its answer later."""

    events: list[str] = field(default_factory=list)

    def submit(
        self, argv: Sequence[str], env: Mapping[str, str] | None, gpu: GpuFacts
    ) -> Callable[[], OracleAnswer]:
        self.events.append("sent")
        answer = FakeOracle.resolve(self, argv, env, gpu)

        def read() -> OracleAnswer:
            self.events.append("read")
            return answer

        return read

    def resolve(
        self, argv: Sequence[str], env: Mapping[str, str] | None, gpu: GpuFacts
    ) -> OracleAnswer:
        self.events.append("asked")
        return FakeOracle.resolve(self, argv, env, gpu)


def _session(flags: list[str]) -> LaunchSession:
    session = LaunchSession(bundled_schema())
    session.request_model(EXAMPLE)
    session.model_loaded(EXAMPLE, load_model_facts(EXAMPLE))
    session.choose_preset("H100x2")
    session.load_argv(["--model-path", session.model_path() or "", *flags], {})
    session.validate()
    return session


def _same(a: Any, b: Any) -> None:
    assert (a.findings, a.status, a.oracle_status, a.tone) == (
        b.findings,
        b.status,
        b.oracle_status,
        b.tone,
    )


def test_an_early_question_gives_the_verdict_asking_later_gives() -> None:
    later = LaterOracle()
    tiers = TwoTier(later)
    session = _session(BAD)
    tiers.send_early(session)
    assert later.events == ["sent"]
    verdict = tiers.check(session)
    assert later.events == ["sent", "read"]  # read, not asked a second time
    assert len(later.requests) == 1
    _same(verdict, TwoTier(FakeOracle()).check(_session(BAD)))
    assert verdict.errors and verdict.answered


def test_an_answer_for_an_older_revision_is_read_off_and_dropped() -> None:
    later = LaterOracle()
    tiers = TwoTier(later)
    session = _session(BAD)
    tiers.send_early(session)
    session.set_flag("attn_dp_size", None)
    session.validate()
    verdict = tiers.check(session)
    # the early reply leaves the connection first, then the current revision is asked
    assert later.events == ["sent", "read", "asked"]
    assert later.requests[-1][0] == session.argv()
    _same(verdict, TwoTier(FakeOracle()).check(session))
    assert not verdict.errors


def test_a_client_that_cannot_answer_later_is_asked_as_before() -> None:
    plain = FakeOracle()
    tiers = TwoTier(plain)
    session = _session(BAD)
    tiers.send_early(session)
    assert plain.requests == []
    tiers.check(session)
    assert len(plain.requests) == 1


def test_check_sends_the_question_before_the_built_in_rules_run(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    later = LaterOracle()
    monkeypatch.setattr(check_cli, "_oracle", lambda *a, **k: later)
    monkeypatch.setattr(check_cli, "_known_version", lambda python: None)
    validate = LaunchSession.validate

    def noted(self: LaunchSession) -> Any:
        later.events.append("rules")
        return validate(self)

    monkeypatch.setattr(LaunchSession, "validate", noted)
    rc = check_cli.run(["--model", EXAMPLE, "--gpu", "H100x2", "--", *BAD])
    err = capsys.readouterr().err
    assert rc == 1
    # the question leaves before the session is built (and runs its rules), once; its
    # answer is read after the check's own run of the rules
    assert later.events[0] == "sent" and later.events.count("sent") == 1
    assert later.events[-2:] == ["rules", "read"]
    assert "rejected by sglang 0.5.23" in err


def test_a_question_sent_ahead_stands_for_the_sessions_own_when_it_is_the_same() -> None:
    later = LaterOracle()
    tiers = TwoTier(later)
    session = _session(BAD)
    tiers.send_ahead(session.argv(), session.check_env(), session.gpu)
    tiers.send_early(session)
    verdict = tiers.check(session)
    assert later.events == ["sent", "read"]
    _same(verdict, TwoTier(FakeOracle()).check(_session(BAD)))


def test_a_question_sent_ahead_for_another_launch_is_dropped_and_the_session_asked() -> None:
    later = LaterOracle()
    tiers = TwoTier(later)
    session = _session(BAD)
    other = _session([])
    tiers.send_ahead(other.argv(), other.check_env(), other.gpu)
    tiers.send_early(session)
    verdict = tiers.check(session)
    # the answer ahead is read off the connection first, never taken for this launch's
    assert later.events == ["sent", "read", "sent", "read"]
    assert later.requests[-1][0] == session.argv()
    _same(verdict, TwoTier(FakeOracle()).check(_session(BAD)))
    assert verdict.errors


@pytest.mark.parametrize(
    ("gpu", "flags"),
    [
        ("H100x2", BAD),
        ("H100x8", ["--tp", "8", "--mem-fraction-static", "0.9", "--enable-metrics"]),
        ("B200x1", []),
    ],
)
def test_the_question_worked_out_from_the_launch_is_the_sessions(
    gpu: str, flags: list[str]
) -> None:
    schema = bundled_schema()
    facts = load_model_facts(EXAMPLE)
    argv = check_cli.with_model_path(flags, check_cli.model_path_for_sglang(EXAMPLE), schema)
    env = {"SGLANG_ENABLE_TORCH_COMPILE": "1"}
    ahead = check_cli.question_ahead(schema, argv, env, EXAMPLE, gpu, None)
    session = check_cli.checked_session(schema, argv, env, EXAMPLE, facts, gpu)
    assert ahead == (session.argv(), session.check_env(), session.gpu)


@pytest.mark.parametrize(
    ("gpu", "flags", "env"),
    [
        (None, [], {}),  # the local GPUs: probed with the session
        ("H100x2", ["--tp-sise", "2"], {}),  # a parse error: sglang is not asked
        ("H100x2", ["--nnodes", "2"], {}),  # two nodes: two questions
        ("H100x2", [], {"CUDA_VISIBLE_DEVICES": "0"}),
        ("H100x0", [], {}),  # no such preset: the session says so
    ],
)
def test_no_question_is_worked_out_ahead_where_the_session_could_ask_another(
    gpu: str | None, flags: list[str], env: dict[str, str]
) -> None:
    schema = bundled_schema()
    argv = check_cli.with_model_path(flags, check_cli.model_path_for_sglang(EXAMPLE), schema)
    assert check_cli.question_ahead(schema, argv, env, EXAMPLE, gpu, None) is None
