"""The small modals: paste a launch line, open a model, choose GPUs, the resolved view, confirm."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.suggester import Suggester
from textual.widgets import (
    Button,
    Input,
    Label,
    OptionList,
    Select,
    SelectionList,
    Static,
    TextArea,
)
from textual.widgets.option_list import Option

from sglaunch.display import shown_value
from sglaunch.errors import UserError
from sglaunch.examples import EXAMPLES
from sglaunch.facts.presets import PRESETS
from sglaunch.flags.launchline import LaunchLine, parse_launch_line
from sglaunch.oracle.answer_findings import meaningful_changes
from sglaunch.profiles.profile import MAX_NODES
from sglaunch.secrets import mask_json, mask_text, secret_values
from sglaunch.session import GpuChoice, LaunchSession
from sglaunch.validators.facts import GpuFacts, GpuMode
from sglaunch.verdict import Phase, Tone, TwoTier, Verdict

PASTE_HINT = (
    "python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 \\\n"
    "    --tp 8 --enable-dp-attention --dp-size 8 --trust-remote-code"
)


class PasteScreen(ModalScreen[LaunchLine | None]):
    """Paste a `python -m sglang.launch_server …` or `sglang serve …` line (backslashes welcome)."""

    HELP_TITLE = "paste a launch line"
    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "load", "Load"),
        Binding("f1", "app.show_keys", "Keys"),
    ]

    def compose(self) -> ComposeResult:
        with Vertical(id="paste", classes="dialog"):
            yield Static(Text("Paste a launch line", style="bold"), classes="dialog-title")
            yield Static(
                Text(
                    "python -m sglang.launch_server … or sglang serve …; multi-line with \\ is fine. ctrl+s loads.",
                    style="dim",
                )
            )
            yield TextArea(id="paste-text", soft_wrap=True, show_line_numbers=False)
            yield Label("", id="paste-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Load (ctrl+s)", id="paste-load", variant="primary")
                yield Button("Cancel", id="paste-cancel")

    def on_mount(self) -> None:
        area = self.query_one("#paste-text", TextArea)
        area.placeholder = PASTE_HINT
        area.focus()

    def action_load(self) -> None:
        text = self.query_one("#paste-text", TextArea).text
        try:
            line = parse_launch_line(text)
        except UserError as exc:
            self.query_one("#paste-error", Label).update(Text(exc.message, style="red"))
            return
        self.dismiss(line)

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#paste-load")
    def _load(self) -> None:
        self.action_load()

    @on(Button.Pressed, "#paste-cancel")
    def _cancel(self) -> None:
        self.dismiss(None)


class PathSuggester(Suggester):
    """Completes folder names as you type a model path."""

    def __init__(self) -> None:
        super().__init__(use_cache=False, case_sensitive=True)

    async def get_suggestion(self, value: str) -> str | None:
        if not value or value.startswith("example:"):
            for name in EXAMPLES:
                if f"example:{name}".startswith(value):
                    return f"example:{name}"
            return None
        expanded = os.path.expanduser(value)
        folder, prefix = os.path.split(expanded)
        try:
            names = sorted(
                n
                for n in os.listdir(folder or ".")
                if n.startswith(prefix) and os.path.isdir(os.path.join(folder or ".", n))
            )
        except OSError:
            return None
        if not names:
            return None
        completed = os.path.join(folder, names[0]) + os.sep
        return (
            value[: len(value) - len(expanded)] + completed if value.startswith("~") else completed
        )


class OpenModelScreen(ModalScreen[str | None]):
    """A folder (with completion), a cached Hugging Face repo id, or a bundled example."""

    HELP_TITLE = "open a model"
    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("f1", "app.show_keys", "Keys")]

    def __init__(self, cached_repos: Iterable[str] = (), current: str | None = None) -> None:
        super().__init__()
        self.cached_repos = list(cached_repos)
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="open-model", classes="dialog"):
            yield Static(Text("Open a model", style="bold"), classes="dialog-title")
            yield Input(
                value=self.current or "",
                placeholder="/path/to/model, org/name from your HF cache, or example:NAME",
                suggester=PathSuggester(),
                id="model-input",
            )
            yield Label("", id="model-error")
            options = [
                Option(Text.assemble((f"example:{n}", "bold"), "  ", (d, "dim")), id=f"example:{n}")
                for n, d in EXAMPLES.items()
            ]
            options += [
                Option(Text.assemble((r, "bold"), "  ", ("local HF cache", "dim")), id=r)
                for r in self.cached_repos
            ]
            yield OptionList(*options, id="model-choices")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Open", id="model-open", variant="primary")
                yield Button("Cancel", id="model-cancel")

    def on_mount(self) -> None:
        self.query_one("#model-input", Input).focus()

    @on(Input.Submitted, "#model-input")
    @on(Button.Pressed, "#model-open")
    def _open(self) -> None:
        value = self.query_one("#model-input", Input).value.strip()
        if not value:
            self.query_one("#model-error", Label).update(
                Text("type a path, a repo id or pick an example", style="red")
            )
            return
        self.dismiss(value)

    @on(OptionList.OptionSelected, "#model-choices")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.dismiss(event.option.id)

    @on(Button.Pressed, "#model-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


def no_gpu_line(real: GpuFacts | None) -> str:
    """The GPU dialog's first line when there is no GPU to choose: why not."""
    if real is None:  # a --gpu preset, or the probe has not answered yet
        return "Planning mode: this machine's GPUs were not probed."
    why = (real.status or "").split(" — ")[0]
    if not why or why.startswith("planning mode"):
        return "No GPU was found on this machine."
    return f"No GPU was found on this machine: {why}."


@dataclass(frozen=True)
class GpuPick:
    """What the GPU dialog chose: the GPUs of a node (None: as they were) and the nodes."""

    choice: GpuChoice | None
    nodes: int = 1


class GpuScreen(ModalScreen["GpuPick | None"]):
    """Pick which GPUs to use (CUDA_VISIBLE_DEVICES), or a planning preset, on how many nodes."""

    HELP_TITLE = "choose GPUs"
    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("f1", "app.show_keys", "Keys")]

    def __init__(
        self, gpu: GpuFacts, real: GpuFacts | None, visible: str | None, nodes: int = 1
    ) -> None:
        super().__init__()
        self.gpu = gpu
        self.real = real  # the NVML facts, when there is a GPU
        self.visible_devices = visible
        self.nodes = nodes

    def compose(self) -> ComposeResult:
        with Vertical(id="gpus", classes="dialog"):
            yield Static(Text("GPUs", style="bold"), classes="dialog-title")
            if self.real is not None and self.real.mode is GpuMode.NVML:
                yield Static(Text("Use these GPUs (sets CUDA_VISIBLE_DEVICES):", style="dim"))
                chosen = {
                    int(x) for x in (self.visible_devices or "").split(",") if x.strip().isdigit()
                }
                yield SelectionList[int](
                    *[
                        (
                            f"{d.index}  {d.name} ({d.arch})",
                            d.index,
                            not chosen or d.index in chosen,
                        )
                        for d in self.real.devices
                    ],
                    id="gpu-select",
                )
                yield Static(Text("…or plan for a machine you do not have:", style="dim"))
            else:
                yield Static(Text(no_gpu_line(self.real), style="yellow"), id="gpu-none")
                yield Static(Text("Plan for one of these machines:", style="dim"))
            current = (
                (self.gpu.preset or "H100x8").split("x")[0]
                if self.gpu.mode is GpuMode.PLANNING
                else Select.NULL
            )
            yield Select(
                [
                    (f"{p.key}  ({p.name}, sm{p.capability[0]}{p.capability[1]})", p.key)
                    for p in PRESETS
                ],
                value=current,
                prompt="planning preset",
                id="gpu-preset",
            )
            count = (
                (self.gpu.preset or "x8").split("x")[-1]
                if self.gpu.mode is GpuMode.PLANNING
                else "8"
            )
            # the preset as the dialog opened: a change to it means "plan for that machine"
            self._initial_preset = (current, count)
            yield Input(value=count, placeholder="how many", id="gpu-count", type="integer")
            yield Static(
                Text("Nodes: machines one server spans, each with these GPUs:", style="dim")
            )
            yield Input(value=str(self.nodes), placeholder="nodes", id="gpu-nodes", type="integer")
            yield Label("", id="gpu-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Apply", id="gpu-apply", variant="primary")
                yield Button("Cancel", id="gpu-cancel")

    @on(Button.Pressed, "#gpu-apply")
    @on(Input.Submitted, "#gpu-count")
    @on(Input.Submitted, "#gpu-nodes")
    def _apply(self) -> None:
        preset = self.query_one("#gpu-preset", Select).value
        count = self.query_one("#gpu-count", Input).value.strip() or "1"
        nodes_text = self.query_one("#gpu-nodes", Input).value.strip() or "1"
        if not nodes_text.isdigit() or not 1 <= int(nodes_text) <= MAX_NODES:
            self.query_one("#gpu-error", Label).update(
                Text(f"the nodes must be 1 to {MAX_NODES}", style="red")
            )
            return
        nodes = int(nodes_text)
        has_real = self.real is not None and self.real.mode is GpuMode.NVML
        if preset is not Select.NULL and (not has_real or (preset, count) != self._initial_preset):
            if not count.isdigit() or not 1 <= int(count) <= 64:
                self.query_one("#gpu-error", Label).update(
                    Text("the count must be 1 to 64", style="red")
                )
                return
            self.dismiss(GpuPick(GpuChoice(preset=f"{preset}x{count}"), nodes))
            return
        if not has_real:
            self.dismiss(GpuPick(None, nodes) if nodes != self.nodes else None)
            return
        sel = self.query_one("#gpu-select", SelectionList)
        chosen = sorted(sel.selected)
        if not chosen:
            self.query_one("#gpu-error", Label).update(Text("choose at least one GPU", style="red"))
            return
        self.dismiss(GpuPick(GpuChoice(visible=",".join(str(i) for i in chosen)), nodes))

    @on(Button.Pressed, "#gpu-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


@dataclass(frozen=True)
class ResolvedView:
    """What the resolved view shows: sglang's own changes, or the built-in tier's, and why."""

    source: str  # where the list comes from
    verdict: str  # sglang rejects it (with the error), or its check is unavailable (why)
    tone: str  # the verdict line's style
    changes: Mapping[str, tuple[object, object]]
    explicit: frozenset[str]
    hidden: int = 0


def resolved_view(session: LaunchSession, verdict: Verdict, tiers: TwoTier) -> ResolvedView:
    """What ctrl+r shows, secrets masked (sglang resolves a typed-in key to its value)."""
    view = _resolved_view(session, verdict, tiers)
    values = secret_values(session.argv(), session.schema)
    changes = mask_json({k: list(v) for k, v in view.changes.items()}, values, session.schema)
    return replace(
        view,
        changes={k: (v[0], v[1]) for k, v in changes.items()},
        verdict=mask_text(view.verdict, values, session.schema),
    )


def _resolved_view(session: LaunchSession, verdict: Verdict, tiers: TwoTier) -> ResolvedView:
    answer = verdict.answer
    explicit = frozenset(session.flags)
    builtin = dict(verdict.builtin.changes)
    version = tiers.version or ""
    if answer is not None and answer.ok:
        asked = frozenset(answer.explicit) | explicit
        changes = meaningful_changes(answer, set(asked))
        return ResolvedView(
            source=f"from sglang {version}'s own resolution",
            verdict=f"sglang {version} accepts this launch",
            tone="green",
            changes=changes,
            explicit=asked,
            # ports, the random seed, bookkeeping, features that stay off
            hidden=len(answer.changed) - len(changes),
        )
    if answer is not None:
        error = answer.error.message if answer.error is not None else "it raised"
        return ResolvedView(
            source="predicted by the built-in rules: sglang stops before it resolves the rest",
            verdict=f"sglang {version} rejects this launch: {error}",
            tone="red",
            changes=builtin,
            explicit=explicit,
        )
    if tiers.phase in (Phase.OFF, Phase.UNAVAILABLE) or verdict.tone is Tone.WARN:
        why = verdict.status.removesuffix(" — built-in rules only")
        line = why if why.startswith("sglang check") else f"sglang's check is unavailable: {why}"
    else:
        line = "sglang has not answered yet (this view shows the built-in prediction)"
    return ResolvedView(
        source="predicted by the built-in rules",
        verdict=line,
        tone="yellow",
        changes=builtin,
        explicit=explicit,
    )


class ResolvedScreen(ModalScreen[None]):
    """Every field sglang will change: you asked → sglang will use. Long values wrap."""

    HELP_TITLE = "what sglang will change"
    BINDINGS = [
        Binding("escape", "close", "Close"),
        Binding("f1,question_mark", "app.show_keys", "Keys"),
    ]

    def __init__(self, view: ResolvedView) -> None:
        super().__init__()
        self.view = view

    def compose(self) -> ComposeResult:
        v = self.view
        with Vertical(id="resolved", classes="dialog"):
            yield Static(
                Text.assemble(("What sglang will change  ", "bold"), (v.source, "dim")),
                classes="dialog-title",
            )
            yield Static(Text(v.verdict, style=v.tone), id="resolved-verdict")
            with VerticalScroll(id="resolved-body"):
                yield Static(self._table(), id="resolved-table")
            if v.hidden:
                yield Static(
                    Text(
                        f"{v.hidden} more not shown: ports, the random seed, sglang's "
                        "bookkeeping, and features that stay off",
                        style="dim",
                    )
                )
            yield Button("Close (esc)", id="resolved-close")

    def rows(self) -> list[tuple[str, str, str]]:
        """(field, you asked, sglang will use), as shown."""
        v = self.view
        out = []
        for field, (asked, value) in sorted(v.changes.items()):
            if field not in v.explicit:
                shown = "(unset)" if asked is None else f"(unset: default {asked})"
            else:
                shown = "(unset)" if asked is None else str(asked)
            # a list of ~60 batch sizes would push every other field out of view
            out.append((field, shown_value(shown, field), shown_value(value, field)))
        return out or [("—", "nothing changes", "—")]

    def _table(self) -> Table:
        table = Table(expand=True, box=None, show_edge=False, pad_edge=False)
        table.add_column("field", style="bold", overflow="fold", ratio=2)
        table.add_column("you asked", overflow="fold", ratio=2)
        table.add_column("sglang will use", overflow="fold", ratio=3)
        for row in self.rows():
            table.add_row(*row)
        return table

    def on_mount(self) -> None:
        self.query_one("#resolved-body", VerticalScroll).focus()

    @on(Button.Pressed, "#resolved-close")
    def action_close(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [Binding("escape", "no", "No"), Binding("y", "yes", "Yes")]

    def __init__(self, title: str, body: str, yes: str = "Yes", no: str = "Cancel") -> None:
        super().__init__()
        self.title_text = title
        self.body = body
        self.yes = yes
        self.no = no

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm", classes="dialog"):
            yield Static(Text(self.title_text, style="bold"), classes="dialog-title")
            yield Static(Text(self.body))  # plain text: flag values may hold [brackets]
            with Horizontal(classes="dialog-buttons"):
                yield Button(self.yes, id="confirm-yes", variant="warning")
                yield Button(self.no, id="confirm-no")

    def on_mount(self) -> None:
        self.query_one("#confirm-no", Button).focus()

    @on(Button.Pressed, "#confirm-yes")
    def action_yes(self) -> None:
        self.dismiss(True)

    @on(Button.Pressed, "#confirm-no")
    def action_no(self) -> None:
        self.dismiss(False)
