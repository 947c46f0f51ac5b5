"""The monitor: the server's start-up phases, readiness, load, GPUs and log — and why it failed.

The runtime's Monitor runs the server on its own threads and calls us back
there; callbacks only post messages (thread-safe), and the handlers here own
what is drawn. The log is pulled in batches on a timer, into a bounded view.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
from collections import deque
from typing import TYPE_CHECKING, Any

from rich.console import Group as RichGroup
from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Log, ProgressBar, Sparkline, Static

from sglaunch.paths import tilde
from sglaunch.runtime import (
    Diagnosis,
    EventKind,
    LaunchSpec,
    Monitor,
    MonitorEvent,
    MonitorState,
    Phase,
    Status,
)
from sglaunch.tui.widgets.panels import bar

if TYPE_CHECKING:
    from sglaunch.runtime.after_launch import Comparison
    from sglaunch.runtime.watch import Watcher
    from sglaunch.tui.server_handle import ServerHandle

# what the start-up timeline shows, in order (launched is implied)
TIMELINE = (
    Phase.INIT,
    Phase.LOADING_WEIGHTS,
    Phase.KV_CACHE,
    Phase.CUDA_GRAPH,
    Phase.SERVER_UP,
    Phase.WARMUP,
    Phase.READY,
)
LOG_LINES = 2000  # the view keeps this many; the full log is in the run directory
MESSAGE_CHARS = 240  # sglang's exception text in the failure box; all of it is in the log
# sglaunch's own readiness and metrics polls, as uvicorn logs them: noise in the view
# (server.log keeps them)
_PROBE_LINE = re.compile(r'"GET /(?:ready|metrics|health|health_generate|v1/loads|server_info)[ ?]')
CHART_POINTS = 120


def memory_rows(comparison: Comparison) -> Table:
    """The memory plan against what sglang logged: the figures a user tunes by."""
    t = Table.grid(padding=(0, 1))
    t.add_column(style="dim", justify="right")
    t.add_column()
    t.add_column(style="dim")
    shown = {
        "max_total_num_tokens": "KV tokens",
        "weights per GPU": "weights",
        "baseline free (P)": "baseline",
        "free after the KV pool (slack)": "slack",
    }
    for row in comparison.rows:
        label = shown.get(row.what)
        if label is None or row.actual is None:
            continue
        fmt = "{:,.0f}" if row.unit == "tokens" else "{:.2f} GiB"
        planned = (
            f"plan {fmt.format(row.predicted)}"
            + (f" ({row.error_pct:+.1f}%)" if row.error_pct is not None else "")
            if row.predicted is not None
            else "not planned"
        )
        t.add_row(label, fmt.format(row.actual), planned)
    cost = comparison.measured_startup_cost_bytes
    if cost is not None:
        t.add_row("start-up", f"{cost / 2**30:.2f} GiB", "measured")
    return t


class PhaseRow(Horizontal):
    """One start-up phase: a mark, its name, a progress bar and what it is doing."""

    def __init__(self, phase: Phase) -> None:
        super().__init__(classes="phase-row", id=f"phase-{phase.value}")
        self.phase = phase

    def compose(self) -> ComposeResult:
        yield Static(Text("○ " + self.phase.label, style="dim"), classes="phase-label")
        yield ProgressBar(total=1, show_eta=False, show_percentage=False, classes="phase-bar")
        yield Static("", classes="phase-detail")

    def set_state(
        self, state: str, detail: str = "", done: int | None = None, total: int | None = None
    ) -> None:
        marks = {
            "pending": ("○", "dim"),
            "active": ("◐", "bold yellow"),
            "done": ("●", "green"),
            "failed": ("✗", "bold red"),
        }
        mark, style = marks[state]
        self.query_one(".phase-label", Static).update(
            Text(f"{mark} {self.phase.label}", style=style)
        )
        bar_widget = self.query_one(ProgressBar)
        if state == "done":
            bar_widget.update(total=1, progress=1)
        elif total:
            bar_widget.update(total=total, progress=done or 0)
        elif state in ("pending", "failed"):
            # a still bar: only the active phase without a count animates
            bar_widget.update(total=1, progress=0)
        else:
            bar_widget.update(total=None)
        self.query_one(".phase-detail", Static).update(Text(detail, style="dim"))


class MonitorScreen(Screen[None]):
    # keys go to the actions, not into the log filter
    AUTO_FOCUS = "#log"
    BINDINGS = [
        Binding("s", "stop", "Stop"),
        Binding("r", "restart", "Restart"),
        Binding("e", "edit", "Edit flags"),
        Binding("o", "open_run_dir", "Run dir"),
        Binding("slash", "search_log", "Search log"),
        Binding("f", "follow", "Follow log"),
        Binding("x", "apply_fix", "Apply fix & edit"),
    ]

    HELP_TITLE = "the monitor"

    def __init__(self, control: ServerHandle) -> None:
        super().__init__()
        self.control = control
        self.state = MonitorState()
        self.seq = 0
        self.follow = True
        self.throughput: deque[float] = deque(maxlen=CHART_POINTS)
        self.requests: deque[float] = deque(maxlen=CHART_POINTS)
        self.tokens: deque[float] = deque(maxlen=CHART_POINTS)

    # --- layout ----------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with Horizontal(id="monitor-body"):
            with Vertical(id="monitor-left"):
                status = Static("", id="status-line")
                yield status
                with Vertical(id="phases") as phases:
                    phases.border_title = "start-up"
                    for phase in TIMELINE:
                        yield PhaseRow(phase)
                failure = Static("", id="failure")
                failure.border_title = "why it stopped"
                yield failure
                with Vertical(id="run-log") as box:
                    box.border_title = (
                        "server log (sglaunch's own probe requests hidden; all in server.log)"
                    )
                    yield Input(
                        placeholder="filter the log ( / ); empty follows it live", id="log-search"
                    )
                    yield Log(id="log", max_lines=LOG_LINES, highlight=False)
            with Vertical(id="monitor-right"):
                summary = Static("", id="summary")
                summary.border_title = "capacity"
                yield summary
                with Vertical(id="load") as load:
                    load.border_title = "load"
                    yield Static("", id="load-text")
                    yield Static(Text("generation tokens/s", style="dim"))
                    yield Sparkline(list(self.throughput), id="chart-throughput")
                    yield Static(Text("running + queued requests", style="dim"))
                    yield Sparkline(list(self.requests), id="chart-requests")
                    yield Static(Text("KV token usage", style="dim"))
                    yield Sparkline(list(self.tokens), id="chart-tokens")
                gpus = Static("", id="gpu-live")
                gpus.border_title = "GPUs"
                yield gpus
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#status-line", Static).update(Text("starting…", style="dim"))
        self.set_interval(0.25, self._pull_log)

    @property
    def monitor(self) -> Monitor | Watcher | None:
        return self.control.monitor

    # --- what the App tells us ----------------------------------------------------------

    def starting(self, spec: LaunchSpec) -> None:
        """A new start of the server: a clean slate (a restart keeps the screen)."""
        self.state = MonitorState()
        if not self.is_mounted:
            return
        for phase in TIMELINE:
            self.query_one(f"#phase-{phase.value}", PhaseRow).set_state("pending")
        self.query_one("#failure", Static).remove_class("-shown")
        self.query_one("#log", Log).clear()
        self.seq = 0
        self.query_one("#status-line", Static).update(Text("starting…", style="dim"))

    def not_started(self, message: str, diagnosis: Diagnosis | None) -> None:
        self.state.status = Status.FAILED
        self._show_failure(diagnosis, message)
        self.query_one("#status-line", Static).update(
            Text(f"✗ not started: {message}", style="bold red")
        )

    def server_event(self, ev: MonitorEvent, state: MonitorState) -> None:
        self.state = state
        if not self.is_mounted:
            return
        try:
            self._draw_event(ev)
        except NoMatches:
            # a report that lands while the screen is taken down (the app quitting: its
            # widgets already gone) has nothing left to draw on
            return

    def _draw_event(self, ev: MonitorEvent) -> None:
        if ev.kind in (
            EventKind.PHASE,
            EventKind.PROGRESS,
            EventKind.READY,
            EventKind.EXITED,
            EventKind.FAILURE,
            EventKind.SPAWNED,
        ):
            self._draw_phases()
        if ev.kind in (EventKind.SUMMARY, EventKind.READY, EventKind.HINT, EventKind.MEMORY):
            self._draw_summary()
        if ev.kind is EventKind.STATS:
            self._draw_load()
        if ev.kind in (EventKind.GPU, EventKind.READY):
            self._draw_gpus()
        if ev.kind in (EventKind.FAILURE, EventKind.EXITED) and self.state.diagnosis is not None:
            self._show_failure(self.state.diagnosis, "")
            self.refresh_bindings()
        self._draw_status()

    def on_screen_resume(self) -> None:
        # back from the editor: draw what happened meanwhile
        mon = self.monitor
        if mon is None:
            return
        self.state = mon.snapshot()
        self._draw_phases()
        self._draw_summary()
        self._draw_load()
        self._draw_gpus()
        self._draw_status()
        if self.state.diagnosis is not None and self.state.status.finished:
            self._show_failure(self.state.diagnosis, "")

    # --- drawing ---------------------------------------------------------------------

    def _draw_status(self) -> None:
        s = self.state
        styles = {
            Status.STARTING: "yellow",
            Status.READY: "bold green",
            Status.UNHEALTHY: "bold yellow",
            Status.STOPPING: "yellow",
            Status.STOPPED: "dim",
            Status.FAILED: "bold red",
            Status.DIED: "bold red",
            Status.DETACHED: "dim",
        }
        words = {
            Status.STARTING: f"starting · {s.phase.label if s.phase else 'launching'}",
            Status.READY: f"ready at {s.url}" if s.url else "ready",
            Status.UNHEALTHY: "not healthy: /ready answers 503",
            Status.STOPPING: "stopping (SIGTERM, then SIGKILL after the grace period)",
            Status.STOPPED: f"stopped (exit {s.returncode})",
            Status.FAILED: f"failed to start (exit {s.returncode})",
            Status.DIED: f"died after it was ready (exit {s.returncode})",
            Status.DETACHED: "detached",
        }
        line = Text(words.get(s.status, str(s.status)), style=styles.get(s.status, ""))
        if not self.control.owned:
            line = Text.assemble(
                ("attached · ", "bold cyan"), line, ("  (ctrl+q or e leaves it running)", "dim")
            )
        if s.pid:
            line.append(f"   pid {s.pid}", style="dim")
        if s.run_dir:
            line.append(f"   {tilde(s.run_dir)}", style="dim")
        self.query_one("#status-line", Static).update(line)
        self.sub_title = words.get(s.status, "")

    def _draw_phases(self) -> None:
        s = self.state
        seen = set(s.phases)
        failed = s.status in (Status.FAILED,)
        current = s.phase
        for phase in TIMELINE:
            row = self.query_one(f"#phase-{phase.value}", PhaseRow)
            if phase == current and s.status is Status.STARTING:
                p = s.progress if s.progress and s.progress.phase == phase else None
                detail = p.detail or p.label if p else ""
                if p and p.total:
                    detail = f"{p.label} {p.done}/{p.total}" + (
                        f" · {p.detail}" if p.detail else ""
                    )
                row.set_state("active", detail, p.done if p else None, p.total if p else None)
            elif phase == current and failed:
                row.set_state("failed", "stopped here")
            elif phase in seen or (s.status is Status.READY and phase.order <= Phase.READY.order):
                row.set_state("done", self._phase_detail(phase))
            else:
                row.set_state("pending")

    def _phase_detail(self, phase: Phase) -> str:
        s = self.state
        if phase is Phase.LOADING_WEIGHTS and s.weights:
            bits = [f"{s.weights.elapsed_s:.1f} s" if s.weights.elapsed_s is not None else ""]
            if s.weights.mem_usage_gb is not None:
                bits.append(f"{s.weights.mem_usage_gb:.1f} GB")
            return " · ".join(b for b in bits if b)
        if phase is Phase.KV_CACHE and s.kv_cache:
            return f"{s.kv_cache.tokens:,} tokens · {s.kv_cache.size_gb:.1f} GB {s.kv_cache.dtype}"
        if phase is Phase.CUDA_GRAPH and s.graphs:
            g = s.graphs[-1]
            return f"{g.what} · {len(g.batch_sizes)} batch sizes" + (
                f" · {g.elapsed_s:.1f} s" if g.elapsed_s else ""
            )
        return ""

    def _draw_summary(self) -> None:
        s = self.state
        t = Table.grid(padding=(0, 1))
        t.add_column(style="dim", justify="right")
        t.add_column()
        if s.summary:
            sm = s.summary
            t.add_row(
                "KV tokens", f"{sm.max_total_num_tokens:,}" if sm.max_total_num_tokens else "?"
            )
            t.add_row("max running", str(sm.max_running_requests or "?"))
            t.add_row("context", f"{sm.context_len:,}" if sm.context_len else "?")
            t.add_row(
                "free GPU mem",
                f"{sm.available_gpu_mem_gb:.2f} GB" if sm.available_gpu_mem_gb is not None else "?",
            )
        parts: list[Any] = [t]
        if s.memory is not None:
            parts.append(memory_rows(s.memory))
        for hint in s.hints:
            parts.append(Text(f"! {hint.message}", style="yellow"))
        self.query_one("#summary", Static).update(RichGroup(*parts))

    def _draw_load(self) -> None:
        load = self.state.load
        if load is None:
            return
        gen = load.gen_throughput if load.gen_throughput is not None else load.generation_rate
        self.throughput.append(float(gen or 0.0))
        self.requests.append(float((load.running or 0) + (load.queued or 0)))
        self.tokens.append(float(load.token_usage or 0.0))
        self.query_one("#chart-throughput", Sparkline).data = list(self.throughput)
        self.query_one("#chart-requests", Sparkline).data = list(self.requests)
        self.query_one("#chart-tokens", Sparkline).data = list(self.tokens)
        t = Table.grid(padding=(0, 1))
        t.add_column(style="dim", justify="right")
        t.add_column()
        t.add_row("requests", f"{load.running or 0} running · {load.queued or 0} queued")
        if load.token_usage is not None:
            t.add_row(
                "KV usage", Text.assemble(bar(load.token_usage, 10), f" {load.token_usage:.0%}")
            )
        t.add_row("gen", f"{gen or 0:.1f} tokens/s")
        if load.cache_hit_rate is not None:
            t.add_row("cache hits", f"{load.cache_hit_rate:.0%}")
        for name, lat in (("TTFT", load.ttft), ("ITL", load.itl)):
            if lat is None or not lat.count:
                continue
            if lat.p50 is not None and lat.p90 is not None and lat.p99 is not None:
                t.add_row(
                    name,
                    f"p50 {lat.p50 * 1000:.0f} · p90 {lat.p90 * 1000:.0f} · p99 {lat.p99 * 1000:.0f} ms",
                )
        source = {
            "metrics": "from /metrics",
            "loads": "from /v1/loads (--enable-metrics for latencies)",
            "log": "from the log",
        }
        self.query_one("#load-text", Static).update(
            RichGroup(t, Text(source.get(load.source, load.source), style="dim"))
        )

    def _draw_gpus(self) -> None:
        rows = Table.grid(padding=(0, 1))
        rows.add_column(justify="right")
        rows.add_column()
        rows.add_column()
        for g in self.state.gpus:
            frac = (g.memory_used or 0) / g.memory_total if g.memory_total else 0.0
            used = f"{(g.memory_used or 0) / 2**30:.0f}/{g.memory_total / 2**30:.0f}G"
            util = f"{g.utilization}%" if g.utilization is not None else ""
            rows.add_row(str(g.index), bar(frac, 10), f"{used} {util}")
        note = Text(self.state.gpu_note or "", style="dim")
        if not self.state.gpus and not self.state.gpu_note:
            note = Text("no GPU samples: NVML sees no GPU on this machine", style="dim")
        self.query_one("#gpu-live", Static).update(RichGroup(rows, note))

    def _show_failure(self, diagnosis: Any, fallback: str) -> None:
        box = self.query_one("#failure", Static)
        box.add_class("-shown")
        if diagnosis is None:
            box.update(Text(fallback, style="red"))
            return
        parts: list[Any] = [
            Text.assemble((diagnosis.title, "bold red"), "  ", (f"[{diagnosis.code}]", "dim"))
        ]
        card = diagnosis.card
        if card is not None:
            parts.append(Text(card.what, style=""))
        # the fix first: it is what the reader acts on; sglang's words follow, shortened
        for i, fix in enumerate(diagnosis.fixes[:3]):
            key = "  (x applies it and returns to the editor)" if i == 0 else ""
            parts.append(Text.assemble(("fix: ", "bold green"), (fix.label, "green"), (key, "dim")))
        if card is not None and not diagnosis.fixes:
            parts.append(Text("How to fix it:", style="bold"))
            parts.extend(Text(f"{i}. {s}") for i, s in enumerate(card.solutions[:3], 1))
        if diagnosis.message:
            message = diagnosis.message
            if len(message) > MESSAGE_CHARS:
                message = message[: MESSAGE_CHARS - 1] + "… (whole text in the log)"
            parts.append(Text(message, style="red"))
        if not card and diagnosis.traceback:
            parts.append(Text(diagnosis.traceback[-1500:], style="dim"))
        box.update(RichGroup(*parts))

    # --- the log ----------------------------------------------------------------------

    def _pull_log(self) -> None:
        if self.monitor is None or not self.follow:
            return
        self.seq, lines = self.monitor.lines_since(self.seq)
        lines = [line for line in lines if not _PROBE_LINE.search(line)]
        if lines:
            self.query_one("#log", Log).write_lines(lines)

    @on(Input.Submitted, "#log-search")
    def _filter_done(self) -> None:
        self.query_one("#log", Log).focus()

    @on(Input.Changed, "#log-search")
    def _filter(self, event: Input.Changed) -> None:
        log = self.query_one("#log", Log)
        needle = event.value.strip().lower()
        if self.monitor is None:
            return
        log.clear()
        if not needle:
            self.follow = True
            self.seq, lines = self.monitor.lines_since(0)
            log.write_lines([line for line in lines if not _PROBE_LINE.search(line)][-LOG_LINES:])
            return
        self.follow = False
        log.write_lines(
            [line for line in self.monitor.log_tail(LOG_LINES) if needle in line.lower()]
        )

    # --- actions ----------------------------------------------------------------------

    def action_search_log(self) -> None:
        self.query_one("#log-search", Input).focus()

    def action_follow(self) -> None:
        self.query_one("#log-search", Input).value = ""
        self.follow = True

    def action_stop(self) -> None:
        self.control.stop()

    def action_restart(self) -> None:
        """Restart with the flags as they are now in the editor: the editor's checks first."""
        restart = getattr(self.app, "restart_server", None)
        if restart is not None:
            restart()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("stop", "restart", "apply_fix") and not self.control.owned:
            return False  # attached: the server is not this sglaunch's to stop or change
        if action == "apply_fix":
            # shown only when the failure has a fix to apply
            diagnosis = self.state.diagnosis
            return bool(diagnosis is not None and diagnosis.fixes)
        return True

    def action_apply_fix(self) -> None:
        """Apply the diagnosis' first fix to the flags and go back to the editor to relaunch."""
        diagnosis = self.state.diagnosis
        if diagnosis is None or not diagnosis.fixes:
            return
        self.app.pop_screen()
        apply_fix = getattr(self.app, "apply_fix", None)
        if apply_fix is not None:
            apply_fix(diagnosis.fixes[0])

    def action_edit(self) -> None:
        """Back to the editor; the server keeps running (ctrl+l there restarts it)."""
        self.app.pop_screen()

    def action_open_run_dir(self) -> None:
        run_dir = self.state.run_dir
        if not run_dir:
            self.notify("no run directory yet", severity="warning")
            return
        opener = shutil.which("xdg-open") or shutil.which("open")
        if opener:
            with contextlib.suppress(OSError):
                subprocess.Popen(
                    [opener, run_dir],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
        self.app.copy_to_clipboard(run_dir)
        self.notify(f"{run_dir} (copied)", title="Run directory", timeout=6)
