"""The memory panel: sglang's start-up memory plan per GPU, as a waterfall, live.

total → start-up cost → baseline → weights → KV cache → slack, then the KV tokens with
their sensitivity band. Recomputed on every keystroke (the plan costs ~0.1 ms); `m` opens
the parallel layouts that fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Group as RichGroup
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from sglaunch.tui.widgets.panels import bar

if TYPE_CHECKING:
    from sglaunch.validators.findings import Finding
    from sglaunch.validators.memory.plan import MemoryPlan

GIB = 1024**3
# the plan's verdicts, and memory.api.REJECTED (that module loads after the first frame)
VERDICT_STYLE = {
    "fits": "bold green",
    "tight": "bold yellow",
    "does-not-fit": "bold red",
    "rejected": "bold red",
}
# what the panel says for a line a rule rejects: its numbers are a plan, not a promise
PLAN_ONLY = "plan only: line rejected"  # the panel is ~28 columns wide
SHORT = {
    "GPU total": "total",
    "start-up (CUDA/NCCL)": "start-up",
    "baseline free": "baseline",
    "weights": "weights",
    "KV cache": "KV cache",
    "slack (graphs, activations)": "slack",
}


def tokens_text(n: int | None) -> str:
    if n is None:
        return "?"
    return f"{n / 1e6:.2f}M" if n >= 10_000_000 else f"{n:,}"


def plan_lines(plan: MemoryPlan, width: int = 10) -> list[RenderableType]:
    """The panel's content, also used by the narrow layout's one-liner and the snapshots."""
    total = max(plan.gpu_total_bytes, 1)
    table = Table.grid(padding=(0, 1))
    table.add_column(style="dim", justify="right")
    table.add_column(justify="right")
    table.add_column()
    for label, value in plan.waterfall():
        table.add_row(SHORT.get(label, label), f"{value / GIB:.1f}G", bar(value / total, width))
    out: list[RenderableType] = [table]
    tokens = Text.assemble(
        ("KV ", "dim"),
        (tokens_text(plan.max_total_num_tokens), "bold"),
        (" tokens", "dim"),
    )
    if plan.usable_tokens is not None and plan.usable_tokens != plan.max_total_num_tokens:
        tokens.append(f" ({tokens_text(plan.usable_tokens)} usable)", style="dim")
    if plan.tokens_per_gib:
        tokens.append(f" ±{plan.tokens_per_gib:,.0f}/GiB", style="dim")
    out.append(tokens)
    if plan.max_running_requests is not None:
        out.append(Text(f"max running {plan.max_running_requests}", style="dim"))
    if plan.error is not None:
        out.append(Text(plan.error.message, style="red"))
    elif plan.problems:
        out.append(Text(plan.problems[0], style="yellow"))
    return out


class MemoryPanel(Static):
    def show(self, plan: MemoryPlan | None, findings: Sequence[Finding] = ()) -> None:
        """`findings`: the line's verdict; with an error standing the panel never says "fits"."""
        if plan is None:
            self.border_title = "memory"
            self.update(Text("the plan needs a model (ctrl+o)", style="dim"))
            return
        from sglaunch.memory.api import REJECTED, line_verdict, rejection  # with the first plan

        k = plan.knobs
        self.border_title = f"memory/GPU · tp {k.tp} · m: layouts"
        verdict = line_verdict(plan, findings)
        shown = PLAN_ONLY if verdict == REJECTED else verdict
        head = Text(shown, style=VERDICT_STYLE.get(verdict, "bold"))
        self.set_class(plan.verdict == "does-not-fit", "-error")  # the border is the memory's
        lines = plan_lines(plan)
        first = rejection(findings)
        if verdict == REJECTED and first is not None:
            lines.append(Text(first.message, style="red"))
        self.update(RichGroup(head, *lines))


def one_line(plan: MemoryPlan | None, findings: Sequence[Finding] = ()) -> str:
    """The narrow layout's stand-in: the verdict and the KV tokens."""
    if plan is None:
        return ""
    from sglaunch.memory.api import REJECTED, line_verdict  # with the first plan

    verdict = line_verdict(plan, findings)
    shown = PLAN_ONLY if verdict == REJECTED else verdict
    return f"KV {tokens_text(plan.max_total_num_tokens)} tokens ({shown})"
