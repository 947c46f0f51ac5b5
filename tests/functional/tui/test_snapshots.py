"""Snapshots of the key screens (pytest-textual-snapshot). Read the report before --snapshot-update."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.oracle import FakeOracle
from tests.support.scenes import (
    DP_LINE,
    FrozenMonitor,
    focus_findings,
    gpu_dialog,
    monitor_ready,
    open_card,
    paste,
    pin_paths,
    profiles_picker,
    resolved_view,
    saved_profiles,
    settle,
)
from tests.support.tui import make_app


@pytest.fixture(autouse=True)
def _paths_wherever_the_checkout_is(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The same screens on any machine: the examples' folder and the time zone pinned."""
    pin_paths(monkeypatch.setattr)
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_main_screen(snap_compare) -> None:  # type: ignore[no-untyped-def]
    app = make_app(oracle=FakeOracle(), gpu_spec="H100x8", argv=DP_LINE)
    assert snap_compare(app, terminal_size=(160, 50), run_before=settle)


def test_card(snap_compare) -> None:  # type: ignore[no-untyped-def]
    app = make_app(oracle=FakeOracle(), gpu_spec="H100x8", argv=DP_LINE)
    assert snap_compare(app, terminal_size=(160, 50), run_before=open_card)


def test_paste_modal(snap_compare) -> None:  # type: ignore[no-untyped-def]
    app = make_app(oracle=FakeOracle(), gpu_spec="H100x8")
    assert snap_compare(app, terminal_size=(120, 36), run_before=paste)


def test_narrow_layout(snap_compare) -> None:  # type: ignore[no-untyped-def]
    app = make_app(oracle=FakeOracle(), gpu_spec="H100x8", argv=DP_LINE)
    assert snap_compare(app, terminal_size=(80, 24), run_before=focus_findings)


def test_card_at_80x24(snap_compare) -> None:  # type: ignore[no-untyped-def]
    app = make_app(oracle=FakeOracle(), gpu_spec="H100x8", argv=DP_LINE)
    assert snap_compare(app, terminal_size=(80, 24), run_before=open_card)


def test_monitor_ready(snap_compare) -> None:  # type: ignore[no-untyped-def]
    app = make_app(gpu_spec="H100x8", model="example:llama-3.1-8b", server_factory=FrozenMonitor)
    app.session.default_python = "/opt/sglang/bin/python"
    assert snap_compare(app, terminal_size=(160, 50), run_before=monitor_ready)


def test_profiles_picker(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    saved_profiles(tmp_path)
    app = make_app(oracle=FakeOracle(), gpu_spec="H100x8", profile_dir=tmp_path)
    assert snap_compare(app, terminal_size=(120, 36), run_before=profiles_picker)


def test_gpu_dialog(snap_compare) -> None:  # type: ignore[no-untyped-def]
    app = make_app(oracle=FakeOracle(), gpu_spec="H100x8")
    assert snap_compare(app, terminal_size=(120, 36), run_before=gpu_dialog)


def test_resolved_view(snap_compare) -> None:  # type: ignore[no-untyped-def]
    app = make_app(oracle=FakeOracle(), gpu_spec="B200x8", argv=["--tp", "2"])
    assert snap_compare(app, terminal_size=(120, 36), run_before=resolved_view)
