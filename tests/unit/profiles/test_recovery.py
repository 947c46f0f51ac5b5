"""Unsaved edits kept when the terminal goes away (profiles/recovery.py), without a UI."""

from __future__ import annotations

from datetime import datetime

from sglaunch.facts.model import load_model_facts
from sglaunch.flags.launchline import parse_launch_line
from sglaunch.flags.schema import bundled_schema
from sglaunch.profiles import ProfileStore
from sglaunch.profiles.recovery import MARKER, keep_unsaved, take_recovered
from sglaunch.session import LaunchSession

AT = datetime(2026, 12, 1, 23, 4, 5)
LINE = "python -m sglang.launch_server --model-path example:minicpm-sala --tp 2 --api-key sk-kept-9"


def edited() -> LaunchSession:
    session = LaunchSession(bundled_schema())
    source = session.load_launch_line(parse_launch_line(LINE))
    assert source is not None
    session.request_model(source)
    assert session.model_loaded(source, load_model_facts(source))
    assert session.dirty
    return session


def keep(session: LaunchSession, store: ProfileStore, at: datetime = AT) -> str:
    return keep_unsaved(store, lambda name: session.to_profile(name), now=at)


def test_the_edits_are_kept_as_a_new_profile_and_reported_once() -> None:
    store = ProfileStore()
    session = edited()
    name = keep(session, store)
    assert name == "unsaved-20261201-230405"
    profile = store.load(name)
    assert profile.flags["tp_size"] == 2 and profile.model == "example:minicpm-sala"
    # a typed secret is kept as a reference, as in every profile, never as text
    assert profile.secrets == {"api_key": "SGLAUNCH_API_KEY"}
    assert "sk-kept-9" not in store.path(name).read_text()
    assert take_recovered(store) == [name]
    assert take_recovered(store) == []  # said once
    assert not (store.root / MARKER).exists()


def test_two_in_the_same_second_get_two_names() -> None:
    store = ProfileStore()
    first, second = keep(edited(), store), keep(edited(), store)
    assert (first, second) == ("unsaved-20261201-230405", "unsaved-20261201-230405-2")
    assert take_recovered(store) == [first, second]


def test_the_loaded_profile_is_never_overwritten() -> None:
    store = ProfileStore()
    session = edited()
    saved = store.save(session.to_profile("sala"))
    session.mark_saved(saved)
    before = store.path("sala").read_bytes()
    session.set_flag("tp_size", 4)
    name = keep(session, store)
    assert store.path("sala").read_bytes() == before
    assert store.load(name).flags["tp_size"] == 4


def test_a_kept_profile_deleted_since_is_not_reported_and_junk_in_the_marker_is_ignored() -> None:
    store = ProfileStore()
    gone = keep(edited(), store)
    store.delete(gone)
    with (store.root / MARKER).open("a") as marker:
        marker.write("../../etc/passwd\n\x1b[2Jclear\n\n")
    assert take_recovered(store) == []
    assert store.names() == []  # the marker is not a profile


def test_a_name_taken_by_another_sglaunch_meanwhile_is_skipped_not_lost() -> None:
    store = ProfileStore()
    session = edited()

    def racing(name: str):  # type: ignore[no-untyped-def]
        if name == "unsaved-20261201-230405":  # the other process saves first
            ProfileStore().save(session.to_profile(name))
        return session.to_profile(name)

    assert keep_unsaved(store, racing, now=AT) == "unsaved-20261201-230405-2"
    assert take_recovered(store) == ["unsaved-20261201-230405-2"]
