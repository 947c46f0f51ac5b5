"""The command palette's entries (ctrl+p): every editor action, and a "Fix: …" per finding."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol

from textual.app import SystemCommand

if TYPE_CHECKING:
    from sglaunch.validators.findings import Finding, Fix


class EditorActions(Protocol):
    """What the palette calls: the App's actions on the editor."""

    def action_search(self) -> None: ...
    def action_save_profile(self) -> None: ...
    def action_profiles(self) -> None: ...
    def action_open_model(self) -> None: ...
    def action_paste(self) -> None: ...
    def action_pick_gpus(self) -> None: ...
    def action_resolved(self) -> None: ...
    def action_launch(self) -> None: ...
    def action_copy_command(self) -> None: ...
    def action_toggle_preview(self) -> None: ...
    def action_layouts(self) -> None: ...
    def action_retry_oracle(self) -> None: ...
    def action_show_keys(self) -> None: ...
    def apply_fix(self, fix: Fix) -> None: ...
    def action_export_nodes(self, fmt: str) -> None: ...
    def action_engine_launch(self, target: str) -> None: ...


# a multi-node launch's exports: (format, what the palette calls it)
NODE_EXPORTS = (
    ("slurm", "Slurm (a batch script for sbatch)"),
    ("lws", "LeaderWorkerSet (Kubernetes)"),
    ("skypilot", "SkyPilot (a task file)"),
    ("command", "per-node commands (a line per node)"),
)


def editor_commands(
    app: EditorActions, findings: Iterable[Finding], *, nodes: int = 1
) -> Iterable[SystemCommand]:
    entries: list[tuple[str, str, Callable[[], object]]] = [
        ("Search flags", "Find a flag by name or help text", app.action_search),
        ("Save profile", "Save this launch (ctrl+s); names it first", app.action_save_profile),
        ("Profiles", "Load, save as, diff or delete saved launches", app.action_profiles),
        ("Open model", "Open a model folder, a cached repo or an example", app.action_open_model),
        (
            "Paste launch line",
            "Load a python -m sglang.launch_server / sglang serve line",
            app.action_paste,
        ),
        ("Choose GPUs", "Pick GPUs or a planning preset", app.action_pick_gpus),
        (
            "Show what sglang will change",
            "The resolved view: you asked → sglang will use",
            app.action_resolved,
        ),
        ("Launch server", "Launch sglang with these flags and monitor it", app.action_launch),
        ("Copy launch command", "Copy the launch line to the clipboard", app.action_copy_command),
        (
            "Toggle YAML preview",
            "Show the flags as sglang --config YAML",
            app.action_toggle_preview,
        ),
        (
            "Layouts that fit",
            "The tp × dp × pp layouts these GPUs hold, with their KV tokens (m)",
            app.action_layouts,
        ),
        (
            "Retry sglang check",
            "Look for sglang again (after `sglaunch oracle setup`, say)",
            app.action_retry_oracle,
        ),
    ]
    for title, help_text, action in entries:
        yield SystemCommand(title, help_text, action)
    if nodes > 1:  # one server across machines: an engine runs it
        for fmt, what in NODE_EXPORTS:
            yield SystemCommand(
                f"Export for {what.split(' (')[0]}",
                f"Write {what} as `sglaunch profiles export --format {fmt}` does",
                lambda fmt=fmt: app.action_export_nodes(fmt),
            )
        yield SystemCommand(
            "Launch on Slurm…",
            "The command that submits this profile to Slurm (--apply --target slurm)",
            lambda: app.action_engine_launch("slurm"),
        )
    for f in findings:
        if f.fixes:
            fix = f.fixes[0]
            yield SystemCommand(
                f"Fix: {fix.label}", f"{f.code}: {f.message}", lambda fix=fix: app.apply_fix(fix)
            )


def keys_command(app: EditorActions) -> SystemCommand:
    """Replaces Textual's "Keys" panel: a modal that does not squash the editor."""
    return SystemCommand("Keys", "The keys of this screen (? or F1)", app.action_show_keys)
