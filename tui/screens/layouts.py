"""`m`: the parallel layouts (tp × dp × pp, attention DP) that fit the GPUs; enter picks one.

Across nodes: one server over all of them (its --nnodes), or one server per node behind
sglang's router (sglang refuses --dp-size replicas across nodes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Static

from sglaunch.memory.api import count_text
from sglaunch.tui.widgets.memory import VERDICT_STYLE
from sglaunch.validators.findings import Fix

if TYPE_CHECKING:
    from sglaunch.validators.memory.layouts import Layout

GIB = 1024**3
PARALLEL = ("tp_size", "dp_size", "pp_size", "attn_dp_size")


def layout_fix(layout: Layout) -> Fix:
    """The flags that select `layout`: sizes above 1 set, the rest back to sglang's default."""
    flags = layout.flags()
    sizes = {dest: flags.get(dest, 1) for dest in PARALLEL}
    # attention DP is spelled one way: --attn-dp-size, or before 0.5.22 the old spelling;
    # the other one goes
    old = bool(flags.get("enable_dp_attention"))
    spelled = (
        f"--enable-dp-attention --dp-size {layout.attn_dp}"
        if old
        else f"--attn-dp-size {layout.attn_dp}"
    )
    label = f"Use tp {layout.tp} × dp {layout.dp} × pp {layout.pp}" + (
        f" with attention DP {layout.attn_dp} ({spelled})" if layout.attn_dp > 1 else ""
    )
    nodes, servers = layout.nodes, layout.servers
    if nodes > 1:
        label += f" over {nodes} nodes"
    elif servers > 1:
        label += f", one server per node ({servers} behind sglang's router)"
    return Fix(
        label=label,
        set={d: v for d, v in sizes.items() if v != 1}
        | ({"enable_dp_attention": True} if old else {})
        | ({"nnodes": nodes} if nodes > 1 else {}),
        unset=(
            *(d for d, v in sizes.items() if v == 1),
            *(() if old else ("enable_dp_attention",)),
            # each server of a routed layout is a one-node server
            *(("nnodes", "node_rank") if servers > 1 else ()),
        ),
    )


def layout_applied(fix: Fix, cli_name: Callable[[str], str]) -> str:
    """The toast for a picked layout: the flags it set, as on a command line."""
    words = [
        cli_name(dest) if value is True else f"{cli_name(dest)} {value}"
        for dest, value in fix.set.items()
    ]
    return "Layout applied: " + (" ".join(words) or "tp 1 × dp 1 × pp 1 (sglang's defaults)")


def node_cell(layout: Layout) -> str:
    """The nodes column: one server over the nodes, or servers behind the router."""
    if layout.servers > 1:
        return f"{layout.servers} × 1 + router"
    return str(layout.nodes)


class LayoutsScreen(ModalScreen["Fix | None"]):
    """Dismisses with the fix that selects the chosen layout, or None."""

    HELP_TITLE = "the layouts that fit"
    BINDINGS = [
        Binding("escape", "close", "Close"),
        Binding("enter", "pick", "Use this layout"),
        Binding("f1,question_mark", "app.show_keys", "Keys"),
    ]

    def __init__(
        self,
        layouts: list[Layout],
        gpus: int,
        current: tuple[int, int, int, int],
        nodes: int = 1,
        current_nodes: int = 1,
    ) -> None:
        super().__init__()
        self.layouts = layouts
        self.gpus = gpus  # one node's
        self.current = current
        self.nodes = nodes
        self.current_nodes = current_nodes  # the line's --nnodes

    def compose(self) -> ComposeResult:
        fits = sum(1 for layout in self.layouts if layout.verdict != "does-not-fit")
        with Vertical(id="layouts", classes="dialog"):
            yield Static(
                Text.assemble(
                    (
                        f"Parallel layouts on {self.nodes} nodes × {self.gpus} GPUs"
                        if self.nodes > 1
                        else f"Parallel layouts on {self.gpus} GPUs",
                        "bold",
                    ),
                    (f"  {fits} of {len(self.layouts)} fit · enter uses one · esc closes", "dim"),
                ),
                classes="dialog-title",
            )
            yield DataTable(id="layouts-table", cursor_type="row")

    def on_mount(self) -> None:
        table: DataTable[Text | str] = self.query_one("#layouts-table", DataTable)
        table.add_columns(
            "tp",
            "dp",
            "pp",
            "attn DP",
            *(("nodes",) if self.nodes > 1 else ()),
            "GPUs",
            "weights/GPU",
            # one replica's pool (a DP or attention-DP rank's) and all of them together
            "KV tokens/replica",
            "KV tokens total",
            "full-ctx reqs total",
            "verdict",
        )
        for i, layout in enumerate(self.layouts):
            plan = layout.plan
            here = (layout.tp, layout.dp, layout.pp, layout.attn_dp) == self.current and (
                layout.servers == 1 and layout.nodes == self.current_nodes
            )
            weights = f"{plan.weights_bytes / GIB:.1f} GiB" if plan.weights_bytes else "?"
            verdict = layout.verdict + (" ◀ now" if here else "")
            table.add_row(
                str(layout.tp),
                str(layout.dp),
                str(layout.pp),
                str(layout.attn_dp),
                *((node_cell(layout),) if self.nodes > 1 else ()),
                str(layout.gpus),
                weights,
                count_text(layout.kv_tokens_per_replica),
                count_text(layout.kv_tokens_total),
                count_text(layout.full_context_requests_total),
                Text(verdict, style=VERDICT_STYLE.get(layout.verdict, "")),
                key=str(i),
            )
        table.focus()

    @on(DataTable.RowSelected, "#layouts-table")
    def _selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_pick()

    def action_pick(self) -> None:
        table = self.query_one("#layouts-table", DataTable)
        if not self.layouts or table.cursor_row is None:
            return
        self.dismiss(layout_fix(self.layouts[table.cursor_row]))

    def action_close(self) -> None:
        self.dismiss(None)
