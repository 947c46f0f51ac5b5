"""The profile picker: load, save as, delete and diff saved launches."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from sglaunch.errors import UserError
from sglaunch.profiles import validate_name


@dataclass
class ProfileAction:
    kind: str  # "load" | "save_as" | "delete"
    name: str


class ProfilesScreen(ModalScreen[ProfileAction | None]):
    """Lists the saved profiles; the App performs what the user picks."""

    HELP_TITLE = "profiles"
    BINDINGS = [
        Binding("escape", "cancel", "Close"),
        Binding("f1", "app.show_keys", "Keys"),
        Binding("enter", "load", "Load", show=False),
        Binding("ctrl+d", "delete", "Delete"),
        Binding("ctrl+f", "diff", "Diff with current"),
    ]

    def __init__(
        self,
        infos: list[Any],
        current: str | None,
        diff_with: Any,
        *,
        save_as: str | None = None,
        note: str = "",
        running: dict[str, list[str]] | None = None,
    ) -> None:
        super().__init__()
        # profile name -> where its servers run ("http://127.0.0.1:30000 (pid 4242)")
        self.running = running or {}
        self.note = note  # why the dialog opened, when it is not obvious (a model change)
        self.infos = infos
        self.current = current
        # opened to save (ctrl+s on an unnamed launch): the name field, with a suggestion
        self.save_as = save_as
        # callable: name -> list of DiffLine between the launch being edited and that profile
        self.diff_with = diff_with

    def compose(self) -> ComposeResult:
        with Vertical(id="profiles", classes="dialog"):
            yield Static(Text("Profiles", style="bold"), classes="dialog-title")
            if self.note:
                yield Static(Text(self.note, style="yellow"), id="profile-note")
            options = []
            for info in self.infos:
                when = (
                    time.strftime("%Y-%m-%d %H:%M", time.localtime(info.mtime))
                    if info.mtime
                    else ""
                )
                if info.error:
                    prompt = Text.assemble(
                        (info.name, "bold red"), "  ", (f"cannot read: {info.error}", "red")
                    )
                else:
                    mark = "● " if info.name == self.current else "  "
                    prompt = Text.assemble(
                        mark,
                        (info.name, "bold"),
                        "  ",
                        (info.model or "no model", ""),
                        "  ",
                        (when, "dim"),
                    )
                    for where in self.running.get(info.name, ()):
                        prompt.append(f"  ▶ running {where}", style="bold green")
                options.append(Option(prompt, id=info.name))
            if not options:
                options.append(
                    Option(
                        Text("no profiles yet: save this launch with a name below", style="dim"),
                        disabled=True,
                    )
                )
            yield OptionList(*options, id="profile-list")
            with Horizontal(classes="dialog-buttons"):
                yield Input(
                    placeholder="new profile name",
                    id="profile-name",
                    value=self.save_as or self.current or "",
                )
                yield Button("Save as", id="profile-save-as", variant="primary")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Load (enter)", id="profile-load")
                yield Button("Diff with current (ctrl+f)", id="profile-diff")
                yield Button("Delete (ctrl+d)", id="profile-delete", variant="error")
                yield Button("Close", id="profile-close")
            yield Label("", id="profile-error")
            table: DataTable[str] = DataTable(id="profile-diff-table", cursor_type="row")
            table.display = False
            yield table

    def on_mount(self) -> None:
        if self.save_as is not None:
            self.query_one("#profile-name", Input).focus()
        else:
            self.query_one("#profile-list", OptionList).focus()

    def _selected(self) -> str | None:
        ol = self.query_one("#profile-list", OptionList)
        if ol.highlighted is None:
            return None
        option = ol.get_option_at_index(ol.highlighted)
        return option.id if not option.disabled else None

    def _error(self, text: str) -> None:
        self.query_one("#profile-error", Label).update(Text(text, style="red"))

    @on(OptionList.OptionSelected, "#profile-list")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.action_load()

    def action_load(self) -> None:
        name = self._selected()
        if name is None:
            self._error("no profile selected")
            return
        info = next((i for i in self.infos if i.name == name), None)
        if info is not None and info.error:
            self._error(f"{name} cannot be read: {info.error}")
            return
        self.dismiss(ProfileAction("load", name))

    @on(Button.Pressed, "#profile-load")
    def _load_pressed(self) -> None:
        self.action_load()

    @on(Button.Pressed, "#profile-save-as")
    @on(Input.Submitted, "#profile-name")
    def _save_as(self) -> None:
        name = self.query_one("#profile-name", Input).value.strip()
        if not name:
            self._error("type a name for the profile")
            return
        try:
            validate_name(name)
        except UserError as exc:
            self._error(exc.message)  # the dialog stays open with the name to correct
            return
        if name != self.current and any(i.name == name for i in self.infos):
            self._error(f"a profile named {name} exists: choose another name, or load it first")
            return
        self.dismiss(ProfileAction("save_as", name))

    @on(Button.Pressed, "#profile-delete")
    def action_delete(self) -> None:
        name = self._selected()
        if name is None:
            self._error("no profile selected")
            return
        self.dismiss(ProfileAction("delete", name))

    @on(Button.Pressed, "#profile-diff")
    def action_diff(self) -> None:
        name = self._selected()
        if name is None:
            self._error("no profile selected")
            return
        try:
            lines = self.diff_with(name)
        except Exception as exc:  # a broken profile: say so, keep the picker open
            self._error(str(exc))
            return
        table = self.query_one("#profile-diff-table", DataTable)
        table.clear(columns=True)
        table.add_columns("setting", f"{name}", "current")
        for d in lines:
            table.add_row(
                d.label, "—" if d.old is None else str(d.old), "—" if d.new is None else str(d.new)
            )
        if not lines:
            table.add_row("—", "the same", "the same")
        table.display = True

    @on(Button.Pressed, "#profile-close")
    def action_cancel(self) -> None:
        self.dismiss(None)
