"""The TUI starts with cyclic garbage collection off and turns it on at its first frame, with
what the start-up made frozen; `sglaunch` (run_tui) and the bench start it the same way."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from sglaunch.tui.launch import pause_collection
from tests.support.tui import child_report, make_app


@pytest.fixture
def collection_restored() -> Iterator[None]:
    was_on, frozen = gc.isenabled(), gc.get_freeze_count()
    yield
    if gc.get_freeze_count() > frozen:
        gc.unfreeze()  # this test process's objects are collectable again
    (gc.enable if was_on else gc.disable)()


def test_paused_until_resumed_then_on_with_the_start_up_frozen(collection_restored: None) -> None:
    gc.enable()
    resume = pause_collection()
    assert not gc.isenabled()
    resume()
    assert gc.isenabled() and gc.get_freeze_count() > 0
    resume()  # twice (the first frame, then the launcher's finally): still on, once
    assert gc.isenabled()


def test_a_collection_someone_else_turned_off_stays_off(collection_restored: None) -> None:
    gc.disable()
    pause_collection()()
    assert not gc.isenabled()


async def test_the_app_hands_its_first_frame_to_the_launcher_once() -> None:
    calls: list[float | None] = []
    app = make_app(gpu_spec="H100x8", on_first_frame=lambda: calls.append(app.first_frame_at))
    async with app.run_test(size=(160, 50)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert calls == [app.first_frame_at] and calls[0] is not None


STARTED = r"""
import gc, json
from sglaunch.tui.launch import build_app, pause_collection

resume = pause_collection()
app = build_app(gpu="H100x8", with_oracle=False, on_first_frame=resume)
seen = {}
compose = app.get_default_screen

def screen():
    seen["while_composing"] = gc.isenabled()
    return compose()

app.get_default_screen = screen

async def ready(pilot):
    while app.first_frame_at is None:
        await pilot.pause(0.01)
    seen["after_first_frame"] = gc.isenabled()
    seen["frozen"] = gc.get_freeze_count() > 0
    print(json.dumps(seen), flush=True)
    app.exit()

app.run(headless=True, size=(160, 50), auto_pilot=ready)
"""


def test_collection_is_off_while_the_app_starts_and_on_from_its_first_frame() -> None:
    assert child_report(STARTED) == {
        "while_composing": False,
        "after_first_frame": True,
        "frozen": True,
    }
