"""`sglaunch explain` for any error sglang's argument resolution raises, from the catalogue."""

from __future__ import annotations

import json

import pytest

from sglaunch.cli.main import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = int(exc.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(autouse=True)
def _no_installed_sglang(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SGLAUNCH_SGLANG_PYTHON", raising=False)


def test_a_message_without_a_hand_written_card_gets_its_site_card(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, _ = run(
        ["explain", "TensorRT-LLM MLA backend only supports kv-cache-dtype of fp8"], capsys
    )
    assert rc == 0
    for head in ("What it means", "Where sglang raises it", "When it happens", "How to fix it"):
        assert head in out
    assert "srt/arg_groups/overrides.py:1215" in out
    assert "1214          if view.kv_cache_dtype not in" in out
    assert "Go to --kv-cache-dtype" in out
    assert "related: sglang-" in out


def test_a_check_from_an_older_release_says_which_have_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, _ = run(["explain", "DeepSeekV4 only supports interleave CP strategy"], capsys)
    assert rc == 0
    assert "--enable-prefill-cp is on" in out and "--cp-strategy is not 'interleave'" in out
    assert "sglang 0.5.23 has no such check: it exists in 0.5.19, 0.5.20" in out


def test_hand_written_cards_win(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(["explain", "ValueError: MiniCPM does not support DP attention"], capsys)
    assert rc == 0 and out.startswith("minicpm-dp-attention")


def test_unknown_text_lists_the_closest_messages_and_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, err = run(["explain", "flux capacitor backend only supports plutonium"], capsys)
    assert rc == 2 and out == ""
    (line,) = err.splitlines()  # bad input: one line
    assert line.startswith("sglaunch: no explanation for")
    assert "the closest messages sglang raises" in line and "backend only supports" in line


def test_list_counts_the_sites_per_release(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(["explain", "--list"], capsys)
    assert rc == 0
    assert "0.5.19 423" in out and "0.5.23 748" in out


@pytest.mark.parametrize("text", ["flux capacitor overloaded at 88 mph", "x"])
def test_any_unknown_text_still_lists_the_nearest_messages(
    capsys: pytest.CaptureFixture[str], text: str
) -> None:
    rc, out, err = run(["explain", text], capsys)
    assert rc == 2 and out == ""
    (line,) = err.splitlines()
    hint = line.partition("; the closest messages sglang raises: ")[2]
    assert len(hint.split(" | ")) == 3, line


def test_a_fragment_of_several_messages_names_the_others(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, _ = run(["explain", "tp_size must be divisible"], capsys)
    assert rc == 0
    head, _, card = out.partition("\n\n")
    assert "other messages too" in head
    shown = out.split("\n\n", 1)[1].split(" — ", 1)[0]  # the card explained
    assert shown in card and shown not in head
    assert "sglang-tp-size-must-be-divisible-by-number" in out
    rc, out, _ = run(["explain", "--json", "tp_size must be divisible"], capsys)
    others = {o["code"] for o in json.loads(out)["other_matches"]}
    assert "sglang-tp-size-must-be-divisible-by-attn" in others | {json.loads(out)["code"]}
    assert len(others) >= 3


def test_a_whole_message_names_no_other(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = run(["explain", "tp_size must be divisible by moe_dp_size"], capsys)
    assert rc == 0 and "other messages" not in out
