"""Every raise and assert site of every supported release has a card, in the seed's shape."""

from __future__ import annotations

import pytest

from sglaunch.catalogue import catalogue, site_card_for
from sglaunch.flags.schema import bundled_schema
from sglaunch.validators.cards.sites import Condition, condition_words
from sglaunch.validators.release_spans import SUPPORTED


def test_the_catalogue_covers_every_supported_release() -> None:
    cat = catalogue()
    assert cat.releases == SUPPORTED
    for version in SUPPORTED:
        assert cat.counts[version] == len(cat.in_release(version)) > 400


@pytest.mark.parametrize("version", SUPPORTED)
def test_every_site_of_the_release_yields_a_card(version: str) -> None:
    cat = catalogue()
    cli = bundled_schema(version).cli_names()
    codes = {s.code for s in cat.sites}
    for site in cat.in_release(version):
        card = site_card_for(site, version)
        assert card.code == site.code and card.title
        assert card.ref == f"sglang/{site.file}:{site.releases[version]}"
        # the source shown is numbered with this release's lines and holds the raise
        numbered = [int(line.split()[0]) for line in card.source]
        assert site.releases[version] in numbered, site.code
        assert site.type in card.what
        for dest in site.flags:
            assert cli.get(dest, dest) in card.what
            assert any(cli.get(dest, dest) in s for s in card.solutions)
        assert version in card.when or "–" in card.when
        assert all(r in codes and r != site.code for r in card.related)


def test_a_guarded_site_says_which_flags_and_values_raise_it() -> None:
    site = catalogue().match("TensorRT-LLM MLA backend only supports kv-cache-dtype of fp8")
    assert site is not None
    card = site_card_for(site, "0.5.23")
    assert "--attention-backend is 'trtllm_mla'" in card.what
    assert "--kv-cache-dtype not in ['fp8_e4m3', 'bf16', 'auto']" in card.what
    assert any("view.kv_cache_dtype not in" in line for line in card.source)
    assert "0.5.21–0.5.23" in card.when


@pytest.mark.parametrize(
    ("test", "holds", "words"),
    [
        ("self.tp_size == 1", False, "--tp-size is not 1"),
        ("not self.enable_dp_attention", True, "--enable-dp-attention is off"),
        ("self.enable_dp_attention", False, "--enable-dp-attention is off"),
        ("self.speculative_algorithm is None", False, "--speculative-algorithm is set"),
        (
            "self.enable_lora and self.page_size > 1",
            False,
            "--enable-lora is off or --page-size <= 1",
        ),
    ],
)
def test_conditions_read_as_the_state_that_raises(test: str, holds: bool, words: str) -> None:
    cli = bundled_schema("0.5.23").cli_names()
    assert condition_words(Condition(test, holds), cli) == words
