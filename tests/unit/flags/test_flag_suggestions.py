"""An unknown flag one typing slip away from a real one is offered that flag first."""

from __future__ import annotations

import pytest

from sglaunch.flags.argv import parse_argv, suggest
from sglaunch.flags.schema import bundled_schema
from sglaunch.validators.facts import FlagIssueKind

S = bundled_schema()


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("--mem-fraction-statc", "--mem-fraction-static"),  # a letter dropped
        ("--mem-fraction-staticc", "--mem-fraction-static"),  # a letter doubled
        ("--mem-fractoin-static", "--mem-fraction-static"),  # two letters swapped
        ("--attn-pc-size", "--attn-cp-size"),
        ("--f4p-gemm-backend", "--fp4-gemm-backend"),
        ("--fp-4gemm-backend", "--fp4-gemm-backend"),
        ("--enabled-ecoder-swa-bounded-replay", "--enable-decoder-swa-bounded-replay"),
        ("--attention-backedn", "--attention-backend"),
        ("--kv-cahce-dtype=fp8_e4m3", "--kv-cache-dtype"),
        ("--contxt-length", "--context-length"),
    ],
)
def test_first_suggestion_is_the_flag_one_slip_away(typed: str, meant: str) -> None:
    assert suggest(typed, S)[0] == meant
    issues = [i for i in parse_argv([typed, "1"], S).issues if i.kind is FlagIssueKind.UNKNOWN]
    assert issues and issues[0].suggestions[0] == meant


def test_suggestions_stay_bounded_and_distinct() -> None:
    found = suggest("--mem-fraction-statc", S)
    assert len(found) == len(set(found)) <= 3
    assert suggest("--zzzzzzzzzzzz", S) == ()


def test_every_flag_one_slip_away_comes_before_looser_matches() -> None:
    # `--pd-size` is one slip from both --dp-size (swap) and --pp-size (one letter)
    assert set(suggest("--pd-size", S)[:2]) == {"--dp-size", "--pp-size"}
