"""The README's key table is the bindings: every key it lists is bound where it says, and
every key bound on those screens and widgets is in it."""

from __future__ import annotations

import re
from pathlib import Path

from textual.binding import Binding

from sglaunch.tui.app import SglaunchApp
from sglaunch.tui.screens.card import CardScreen
from sglaunch.tui.screens.monitor import MonitorScreen
from sglaunch.tui.screens.profiles import ProfilesScreen
from sglaunch.tui.widgets.findings import FindingsPanel
from sglaunch.tui.widgets.flag_editor import FlagEditor

README = Path(__file__).resolve().parents[3] / "README.md"
SHOWN_AS = {"?": "question_mark", "/": "slash"}
# README's "where" -> the classes whose BINDINGS it documents, and keys they get from a
# widget they hold (an OptionList's enter, the row list's enter, Textual's palette)
SCOPES: dict[str, tuple[tuple[type, ...], set[str]]] = {
    "editor": ((SglaunchApp,), {"ctrl+p"}),
    # the flag search and the flag table are one widget, the FlagEditor
    "flag table": ((FlagEditor,), {"enter"}),
    "findings": ((FindingsPanel,), {"enter"}),
    "card": ((CardScreen,), set()),
    "monitor": ((MonitorScreen,), set()),
    "profiles": ((ProfilesScreen,), set()),
}


def documented() -> dict[str, set[str]]:
    text = README.read_text(encoding="utf-8")
    table = text.split("| where | keys | action |", 1)[1].split("\n\n", 1)[0]
    out: dict[str, set[str]] = {}
    for row in table.strip().splitlines()[1:]:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        keys = {SHOWN_AS.get(k, k) for k in re.findall(r"`([^`]+)`", cells[1])}
        out.setdefault(cells[0], set()).update(keys)
    return out


def bound(classes: tuple[type, ...]) -> set[str]:
    keys: set[str] = set()
    for cls in classes:
        for b in cls.BINDINGS:
            assert isinstance(b, Binding)
            keys.update(k.strip() for k in b.key.split(","))
    return keys


def test_every_documented_key_is_bound_and_every_binding_documented() -> None:
    docs = documented()
    anywhere = docs.pop("anywhere")
    assert anywhere == {"f1", "question_mark", "ctrl+p"}
    docs["flag table"] |= docs.pop("flag search")
    assert set(docs) == set(SCOPES)
    for scope, (classes, held) in SCOPES.items():
        keys = bound(classes) | held
        # f1 / ? are on every screen: "anywhere" covers them
        assert docs[scope] == keys - anywhere, scope
