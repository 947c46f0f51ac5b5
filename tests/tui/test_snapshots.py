"""Snapshots of the key screens (pytest-textual-snapshot). Read the report before --snapshot-update."""

from __future__ import annotations

from tests.fakes.oracle import FakeOracle
from tests.tui.conftest import make_app
from tests.tui.scenes import DP_LINE, focus_findings, open_card, paste, settle


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
