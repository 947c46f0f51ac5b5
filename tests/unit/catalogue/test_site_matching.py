"""A message sglang raised, with its values filled in, or a fragment of it, finds its site."""

from __future__ import annotations

import random

from sglaunch.catalogue import catalogue, find_site
from sglaunch.validators.cards.sites import Site

# the kinds of value sglang formats into its messages
VALUES = ("4", "fp8_e5m2", "None", "trtllm_mla", "0.85", "[1, 2]", "True", "DeepseekV3ForCausalLM")


def rendered(site: Site, rng: random.Random) -> str:
    text = "".join(rng.choice(VALUES) if s is None else s for s in site.segments)
    return f"{site.type}: {text}"


def same_message(found: Site | None, site: Site) -> bool:
    # one message may be raised at several places: any of them is its explanation
    return found is not None and found.segments == site.segments


def test_every_rendered_message_finds_its_own_site() -> None:
    rng = random.Random(20)
    missed = []
    for site in catalogue().sites:
        version = max(site.releases)
        if not same_message(find_site(rendered(site, rng), version=version), site):
            missed.append(site.code)
    assert missed == []


def test_the_raise_site_of_a_traceback_wins_over_the_text() -> None:
    cat = catalogue()
    site = next(s for s in cat.sites if len(s.releases) == 5)
    for version, line in site.releases.items():
        assert find_site("anything at all", f"{site.file}:{line}", version) is site


def test_a_fragment_finds_its_site() -> None:
    rng = random.Random(5)
    sites = [s for s in catalogue().sites if max(len(x or "") for x in s.segments) > 60]
    for site in rng.sample(sites, 40):
        longest = max((x for x in site.segments if x), key=len)
        words = longest.split()
        fragment = " ".join(words[1 : 1 + max(4, len(words) // 2)])
        found = catalogue().match(fragment)
        assert found is not None and fragment in " ".join(
            " ".join((x or "").split()) for x in found.segments
        ), (site.code, fragment)


def test_an_older_wording_finds_the_release_that_has_it() -> None:
    site = find_site("DeepSeekV4 only supports interleave CP strategy")
    assert site is not None and set(site.releases) == {"0.5.19", "0.5.20"}


def test_unknown_text_finds_nothing_but_has_close_messages() -> None:
    assert find_site("flux capacitor overheated") is None
    near = catalogue().closest("MLA backend only supports kv cache dtype fp8", n=3)
    assert any("MLA backend" in s.message for s in near)
