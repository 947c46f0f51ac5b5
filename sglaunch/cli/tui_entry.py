"""The headless CLI's one way into the TUI: `sglaunch` with no subcommand, and `sglaunch attach`
without --json, both open it from here."""

from __future__ import annotations

from typing import Any


def open_tui(**options: Any) -> int:
    """The TUI, imported only now: the one place the headless CLI reaches into it."""
    from sglaunch.tui.launch import run_tui  # heavy: textual, loaded only when the TUI opens

    return run_tui(**options)
