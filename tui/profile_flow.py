"""Profiles in the TUI: open, save (and save as), the picker, delete — on the session.

The App delegates its profile actions here; the store and the session do the work, this
only asks (a model change, unsaved edits, a delete) and says what happened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sglaunch.errors import UserError
from sglaunch.profiles import ProfileStore, validate_name
from sglaunch.profiles.diff import diff
from sglaunch.profiles.profile import name_from_model
from sglaunch.profiles.recovery import keep_unsaved, take_recovered

if TYPE_CHECKING:
    from sglaunch.tui.app import SglaunchApp
    from sglaunch.tui.screens.profiles import ProfileAction


def running_servers() -> dict[str, list[str]]:
    """Profile name -> its servers running here (run directories; /proc only, no HTTP)."""
    # not before the first frame: the runtime loads when the picker first opens
    from sglaunch.runtime.runs import running_by_profile

    try:
        runs = running_by_profile()
    except Exception:  # a mark in a picker must never cost the picker (a corrupt run, …)
        return {}
    return {name: [f"{r.url or '?'} (pid {r.pid})" for r in found] for name, found in runs.items()}


class ProfileFlow:
    def __init__(self, app: SglaunchApp) -> None:
        self.app = app

    def store(self) -> ProfileStore:
        return ProfileStore(self.app.c.profile_dir)

    def open(self, name: str) -> None:
        try:
            profile = self.store().load(name)
            self.app.session.load_profile(profile)
        except UserError as exc:
            self.app.notify(exc.message, title="Profile not loaded", severity="error", timeout=8)
            return
        self.app.profile_opened(profile)
        if profile.model:
            self.app._load_model(profile.model)
        self.app.after_load()

    def save(self, name: str) -> bool:
        session = self.app.session
        try:
            validate_name(name)
            # validated with: sglang's own check when it answered, else the rules' version
            version = self.app.tiers.version or self.app.active.version
            profile = session.to_profile(name, sglang_version=version)
            saved = self.store().save(profile)
        except UserError as exc:
            self.app.notify(exc.message, title="Not saved", severity="error", timeout=10)
            return False
        typed = [d for d in saved.secrets if d in session.flags]
        for name_ in session.unsaved_env():
            self.app.notify(
                f"{name_} looks like a secret and was not saved: export it in the shell that "
                "starts sglaunch (the server inherits it)",
                timeout=8,
            )
        session.mark_saved(saved)
        for dest in typed:  # typed in: the profile keeps only a reference
            self.app.notify(
                f"{self.app.schema.cli_name(dest)} is saved as a reference: "
                f"export {saved.secrets[dest]}=<the value> before launching",
                timeout=8,
            )
        self.app.notify(f"saved profile {saved.name}", timeout=4)
        self.app.update_title()
        return True

    def keep_unsaved(self) -> str | None:
        """The terminal went away with unsaved edits: keep them as a new profile
        (profiles/recovery.py); its name, or None when nothing was unsaved or kept."""
        session = self.app.session
        if not session.dirty:
            return None
        version = self.app.tiers.version or self.app.active.version
        try:
            return keep_unsaved(
                self.store(), lambda name: session.to_profile(name, sglang_version=version)
            )
        except Exception:  # nobody is left to tell; the server is stopped all the same
            return None

    def report_recovered(self) -> None:
        """Say once which launches an earlier hang-up kept."""
        try:
            kept = take_recovered(self.store())
        except (UserError, OSError):
            return
        for name in kept:
            self.app.notify(
                f"kept when the terminal closed with unsaved edits: profile {name} "
                "(F2 opens the profiles)",
                title="Unsaved launch kept",
                timeout=15,
            )

    def save_current(self) -> None:
        session = self.app.session
        suggestion = name_from_model(session.model_source) if session.model_source else ""
        if session.profile is None:
            self.picker(save_as=suggestion)
        elif session.model_changed():
            # another model's line was pasted over this profile: overwriting is a choice
            was = session.profile.model or "no model"
            note = (
                f"The model changed from {was} to {session.model_source}. Save as a new "
                f"profile, or type {session.profile.name} to overwrite it."
            )
            self.picker(save_as=suggestion, note=note)
        else:
            self.save(session.profile.name)

    def picker(self, save_as: str | None = None, note: str = "") -> None:
        from sglaunch.tui.screens.profiles import ProfilesScreen  # loads when opened

        store = self.store()

        def diff_with(name: str) -> list[Any]:
            return diff(store.load(name), self.app.session.to_profile(name), self.app.schema)

        def done(action: ProfileAction | None) -> None:
            if action is None:
                return
            if action.kind == "load":
                self._confirm_discard(action.name)
            elif action.kind == "save_as":
                self.save(action.name)
            elif action.kind == "delete":
                self._confirm_delete(store, action.name)

        current = self.app.session.profile_name
        screen = ProfilesScreen(
            store.list(), current, diff_with, save_as=save_as, note=note, running=running_servers()
        )
        self.app.push_screen(screen, done)

    def _confirm_discard(self, name: str) -> None:
        if not self.app.dirty:
            self.open(name)
            return
        from sglaunch.tui.screens.dialogs import ConfirmScreen  # loads when one opens

        screen = ConfirmScreen(
            "Discard unsaved changes?",
            f"Loading {name} replaces the launch you are editing.",
            yes="Load (y)",
        )
        self.app.push_screen(screen, lambda yes: self.open(name) if yes else None)

    def _confirm_delete(self, store: ProfileStore, name: str) -> None:
        def delete(yes: bool | None) -> None:
            if not yes:
                return
            try:
                backup = store.delete(name)
            except UserError as exc:
                self.app.notify(exc.message, severity="error")
                return
            if self.app.session.profile_name == name:
                self.app.session.forget_profile()
            self.app.notify(f"deleted {name} (its last version is in {backup})", timeout=6)
            self.app.update_title()

        from sglaunch.tui.screens.dialogs import ConfirmScreen  # loads when one opens

        screen = ConfirmScreen(
            f"Delete profile {name}?", "Its last version stays in a .bak file.", yes="Delete (y)"
        )
        self.app.push_screen(screen, delete)
