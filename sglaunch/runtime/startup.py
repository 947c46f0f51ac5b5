"""What the monitor knows about a server, and every change to it: a pure reducer.

`StartupTracker` turns observations — a classified log line, an HTTP probe's answer, a
load scrape, a GPU sample, the process's exit — into changes of one `MonitorState` and the
`MonitorEvent`s that announce them. It does no I/O, starts no thread and reads no clock:
the time comes in with each observation, and what needs the outside world (probing for a
free port, stopping the server) comes back as an effect for the caller. So the whole
start-up logic is unit-tested from transcript lines, and the monitor that owns a process
and the one that attaches to a running server share it.
"""

from __future__ import annotations

import ast
import contextlib
import re
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from sglaunch.runtime import hints
from sglaunch.runtime.failures import Diagnosis, diagnosis_for, exit_text
from sglaunch.runtime.load import LoadStats
from sglaunch.runtime.logparse import (
    Access,
    AttentionBackend,
    DecodeBatch,
    ErrorLine,
    GraphBegin,
    GraphEnd,
    GraphProgress,
    HealthFailed,
    InitParallel,
    KvCacheAllocated,
    LoadBegin,
    LoadEnd,
    LoadProgress,
    LogEvent,
    PoolEnd,
    PrefillBatch,
    Ready,
    ServerArgs,
    ServerUp,
    StartupTimings,
    Summary,
    strip_prefix,
)
from sglaunch.runtime.state import (
    EventKind,
    GpuSample,
    GraphCapture,
    KvCacheInfo,
    MonitorEvent,
    MonitorState,
    Phase,
    Progress,
    StartupSummary,
    Status,
    WeightsInfo,
)
from sglaunch.validators.cards import runtime as rc
from sglaunch.validators.findings import Finding

# server_args= values the fixes need, for when the dict is not a Python literal
ARG_KEYS = (
    "mem_fraction_static",
    "cuda_graph_max_bs_decode",
    "chunked_prefill_size",
    "max_running_requests",
    "tp_size",
    "attention_backend",
    "disable_cuda_graph",
    "weight_loader_disable_mmap",
)

# (returncode, was ready) -> why it stopped; None: the exit status is unknown (a server
# watched, not started here, whose end nobody recorded)
Diagnose = Callable[[int | None, bool], Diagnosis]


def parse_server_args(text: str) -> dict[str, Any]:
    """The fixes' keys from sglang's `server_args=ServerArgs(...)` or dict line."""
    try:
        data = ast.literal_eval(text)
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if k in ARG_KEYS}
    # a log line is not code to trust: whatever the parser makes of it (CPython 3.11 also
    # raises SystemError "AST constructor recursion depth mismatch" when two threads parse
    # at once), the line is read the slow way below and the log reader keeps going
    except Exception:
        pass
    out: dict[str, Any] = {}
    for key in ARG_KEYS:
        m = re.search(rf"'{key}': ([^,}}]+)", text)
        if m:
            with contextlib.suppress(Exception):
                out[key] = ast.literal_eval(m.group(1).strip())
    return out


@dataclass
class Step:
    """What one observation changed: the events to send, and what the caller must do."""

    events: list[MonitorEvent] = field(default_factory=list)
    port_in_use: str | None = None  # a bind error before ready: stop now (sglang would poll)


def event(kind: EventKind, at: float, text: str, /, **data: Any) -> MonitorEvent:
    return MonitorEvent(kind, at, text, data)


def stats_text(load: LoadStats) -> str:
    parts = []
    if load.running is not None:
        parts.append(f"{load.running} running")
    if load.queued is not None:
        parts.append(f"{load.queued} queued")
    if load.token_usage is not None:
        parts.append(f"token usage {load.token_usage:.0%}")
    gen = load.generation_rate if load.generation_rate is not None else load.gen_throughput
    if gen is not None:
        parts.append(f"{gen:.0f} tok/s")
    if load.cache_hit_rate is not None:
        parts.append(f"cache hit {load.cache_hit_rate:.0%}")
    for name, lat in (("TTFT", load.ttft), ("ITL", load.itl)):
        if lat is not None and lat.p50 is not None:
            parts.append(f"{name} p50/p90/p99 {_ms(lat.p50)}/{_ms(lat.p90)}/{_ms(lat.p99)}")
    return ", ".join(parts) or "idle"


class StartupTracker:
    """One server run's state. Not thread-safe: the caller serialises the calls."""

    def __init__(
        self,
        flags: Mapping[str, Any] | None = None,
        resolved: Mapping[str, Any] | None = None,
        *,
        metrics_interval: float = 1.0,
    ) -> None:
        self.state = MonitorState()
        self._flags = dict(flags or {})
        self._resolved = dict(resolved or {})
        self.metrics_interval = metrics_interval
        self._resolved_log: dict[str, Any] = {}
        self._resolved_http: dict[str, Any] = {}
        self._observed: dict[str, Any] = {}
        self._load_begin_avail: float | None = None
        self._log_load: dict[str, Any] = {}
        self._last_stats_emit = -1e18
        self._gpu_total_gb: float | None = None
        self._graph_what = ""
        # the log's own "ready to roll" line: the lines before it are the start-up's, even
        # those read after HTTP showed the server ready (a slow reader on a busy machine)
        self._log_said_ready = False

    # --- facts for the fixes ----------------------------------------------------------

    def fix_flags(self) -> dict[str, Any]:
        """Flag values in effect, the server's own report first."""
        out: dict[str, Any] = dict(self._observed)
        out.update(self._flags)
        out.update({k: v for k, v in self._resolved.items() if v is not None})
        out.update({k: v for k, v in self._resolved_log.items() if v is not None})
        out.update({k: v for k, v in self._resolved_http.items() if v is not None})
        return out

    # --- the process --------------------------------------------------------------------

    def spawned(
        self, pid: int, run_dir: str, url: str, command: tuple[str, ...], at: float
    ) -> list[MonitorEvent]:
        st = self.state
        st.pid, st.run_dir, st.url, st.command = pid, run_dir, url, command
        st.started_at = at
        st.phase = Phase.LAUNCHED
        st.phases = (Phase.LAUNCHED,)
        return [
            event(
                EventKind.SPAWNED,
                at,
                f"started sglang (pid {pid}); run directory {run_dir}",
                pid=pid,
                run_dir=run_dir,
                command=list(command),
                url=url,
            )
        ]

    def attached(self, pid: int | None, run_dir: str | None, url: str, at: float) -> None:
        """Following a server started elsewhere: its phase is unknown until it says."""
        st = self.state
        st.pid, st.run_dir, st.url = pid, run_dir, url
        st.started_at = at
        st.phase = Phase.LAUNCHED
        st.phases = (Phase.LAUNCHED,)

    def stop_requested(self, pid: int, at: float) -> list[MonitorEvent]:
        st = self.state
        if st.stop_requested_at is not None:
            return []
        st.stop_requested_at = at
        if not st.status.finished:
            st.status = Status.STOPPING
        return [event(EventKind.STOP_REQUESTED, at, f"stopping the server (pid {pid})", pid=pid)]

    def released(self, pid: int, run_dir: str | None, url: str, at: float) -> list[MonitorEvent]:
        self.state.status = Status.DETACHED
        return [
            event(
                EventKind.DETACHED,
                at,
                f"server left running: pid {pid}, run directory {run_dir}",
                pid=pid,
                run_dir=str(run_dir),
                url=url,
            )
        ]

    def exited(
        self,
        returncode: int | None,
        at: float,
        *,
        fail_fast: Diagnosis | None,
        diagnose: Diagnose,
    ) -> list[MonitorEvent]:
        """Why it ended: stopped, failed to start, or died after it was ready."""
        st = self.state
        st.returncode = returncode
        st.ended_at = at
        st.progress = None
        if fail_fast is not None:
            st.status = Status.FAILED if st.ready_at is None else Status.DIED
            st.diagnosis = fail_fast
        elif st.stop_requested_at is not None:
            st.status = Status.STOPPED
        elif st.ready_at is None:
            st.status = Status.FAILED
            st.diagnosis = diagnose(returncode, False)
        elif returncode in (0, -signal.SIGTERM, -signal.SIGINT):
            st.status = Status.STOPPED  # stopped from outside, cleanly
        else:
            st.status = Status.DIED
            st.diagnosis = diagnose(returncode, True)
        events: list[MonitorEvent] = []
        if self.failed and st.diagnosis is not None:
            d = st.diagnosis
            events.append(
                event(
                    EventKind.FAILURE,
                    at,
                    f"{d.title}: {d.message}",
                    code=d.code,
                    diagnosis=d.to_json(),
                )
            )
        events.append(
            event(
                EventKind.EXITED,
                at,
                f"server {st.status} ({exit_text(returncode)})",
                status=str(st.status),
                returncode=returncode,
                stop_requested=st.stop_requested_at is not None,
            )
        )
        return events

    @property
    def failed(self) -> bool:
        return self.state.status in (Status.FAILED, Status.DIED)

    def exit_record(self) -> dict[str, Any]:
        """What run.json keeps of the end."""
        st = self.state
        return {
            "status": str(st.status),
            "returncode": st.returncode,
            "ended_at": st.ended_at,
            "diagnosis": st.diagnosis.to_json() if self.failed and st.diagnosis else None,
        }

    # --- log lines ----------------------------------------------------------------------

    def log(self, ev: LogEvent, line: str, now: float) -> Step:
        """One classified log line (`line` is its masked text)."""
        step = Step()
        out = step.events
        ready = self.state.ready_at is not None
        if isinstance(ev, DecodeBatch | PrefillBatch):
            self._batch(ev, ready, now, out)
        elif isinstance(ev, Access):
            if not self._log_said_ready and ev.path.startswith("/generate"):
                self._advance(Phase.WARMUP, now, out)
        elif isinstance(ev, ServerArgs):
            self._resolved_log = parse_server_args(ev.text)
            self._advance(Phase.INIT, now, out)
        elif isinstance(ev, InitParallel | AttentionBackend):
            self._advance(Phase.INIT, now, out)
        elif isinstance(ev, LoadBegin | LoadProgress | LoadEnd):
            self._weights(ev, now, out)
        elif isinstance(ev, KvCacheAllocated | PoolEnd):
            self._kv(ev, now, out)
        elif isinstance(ev, GraphBegin | GraphProgress | GraphEnd):
            self._graphs(ev, now, out)
        elif isinstance(ev, Summary):
            self._summary(ev, now, out)
        elif isinstance(ev, StartupTimings):
            self.state.startup_timings = dict(ev.timings)
        elif isinstance(ev, ServerUp):
            self._advance(Phase.SERVER_UP, now, out, ev.url or "")
        elif isinstance(ev, Ready):
            self._log_said_ready = True
            self._mark_ready("log", now, out)
        elif isinstance(ev, HealthFailed):
            self._unhealthy(strip_prefix(line), now, out)
        elif isinstance(ev, ErrorLine) and not ready and rc.PORT_IN_USE in _cards_matching(line):
            step.port_in_use = strip_prefix(line)
        return step

    def _batch(
        self, ev: DecodeBatch | PrefillBatch, ready: bool, now: float, out: list[MonitorEvent]
    ) -> None:
        st = self.state
        if (
            not self._log_said_ready
            and isinstance(ev, PrefillBatch)
            and st.phase is not None
            and st.phase.order >= Phase.SERVER_UP.order
        ):
            self._advance(Phase.WARMUP, now, out)
        for key in ("running", "queued", "token_usage"):
            value = getattr(ev, key)
            if value is not None:
                self._log_load[key] = value
        if isinstance(ev, DecodeBatch) and ev.gen_throughput is not None:
            self._log_load["gen_throughput"] = ev.gen_throughput
        if ready:
            self._log_stats(now, out)

    def _weights(
        self, ev: LoadBegin | LoadProgress | LoadEnd, now: float, out: list[MonitorEvent]
    ) -> None:
        st = self.state
        if isinstance(ev, LoadBegin):
            if self._load_begin_avail is None:
                self._load_begin_avail = ev.avail_mem_gb
            self._advance(Phase.LOADING_WEIGHTS, now, out)
        elif isinstance(ev, LoadProgress):
            self._advance(Phase.LOADING_WEIGHTS, now, out)
            self._progress(
                Progress(Phase.LOADING_WEIGHTS, "loading weights", ev.done, ev.total), now, out
            )
        elif st.weights is None:
            st.weights = WeightsInfo(
                ev.elapsed_s, ev.model_class, ev.quant, ev.mem_usage_gb, ev.avail_mem_gb
            )
            st.progress = None

    def _kv(self, ev: KvCacheAllocated | PoolEnd, now: float, out: list[MonitorEvent]) -> None:
        st = self.state
        if isinstance(ev, KvCacheAllocated):
            if st.kv_cache is None:
                st.kv_cache = KvCacheInfo(ev.tokens, ev.dtype, ev.size_gb)
            self._advance(
                Phase.KV_CACHE,
                now,
                out,
                f"{ev.tokens:,} tokens, {ev.size_gb:.2f} GB ({ev.dtype})",
            )
        elif st.kv_cache is not None and st.kv_cache.avail_mem_gb is None:
            st.kv_cache = replace(st.kv_cache, avail_mem_gb=ev.avail_mem_gb)

    def _graphs(
        self, ev: GraphBegin | GraphProgress | GraphEnd, now: float, out: list[MonitorEvent]
    ) -> None:
        st = self.state
        if isinstance(ev, GraphBegin):
            self._advance(Phase.CUDA_GRAPH, now, out)
            self._graph_what = ev.what
            backend = f"backend={ev.backend}" if ev.backend else ""
            label = f"capturing {ev.what} CUDA graphs"
            self._progress(Progress(Phase.CUDA_GRAPH, label, 0, None, backend), now, out)
        elif isinstance(ev, GraphProgress):
            self._advance(Phase.CUDA_GRAPH, now, out)
            if ev.what == "decode" and "cuda_graph_max_bs_decode" not in self._observed:
                # the bar runs from the largest batch size down: the first one is the max
                self._observed["cuda_graph_max_bs_decode"] = ev.bs
            detail = f"bs={ev.bs}" if ev.what == "decode" else f"num_tokens={ev.num_tokens}"
            label = f"capturing {self._graph_what or ev.what} CUDA graphs"
            self._progress(
                Progress(Phase.CUDA_GRAPH, label, ev.done or 0, ev.total, detail), now, out
            )
        else:
            if not any(g.what == ev.what for g in st.graphs):
                capture = GraphCapture(
                    ev.what,
                    ev.backend,
                    tuple(ev.bs or ()),
                    ev.elapsed_s,
                    ev.mem_usage_gb,
                    ev.avail_mem_gb,
                )
                st.graphs = (*st.graphs, capture)
            st.progress = None

    def _summary(self, ev: Summary, now: float, out: list[MonitorEvent]) -> None:
        st = self.state
        if st.summary is not None and st.summary.source == "log":
            return
        st.summary = StartupSummary(
            ev.max_total_num_tokens,
            ev.max_running_requests,
            ev.context_len,
            ev.available_mem_gb,
            ev.chunked_prefill_size,
            ev.max_prefill_tokens,
            "log",
        )
        out.append(self._summary_event(now))
        self._headroom(now, out)

    # --- phases -------------------------------------------------------------------------

    def _advance(self, phase: Phase, now: float, out: list[MonitorEvent], detail: str = "") -> None:
        st = self.state
        if phase in st.phases:
            return
        st.phases = tuple(sorted((*st.phases, phase), key=lambda p: p.order))
        if st.phase is not None and phase.order < st.phase.order:
            return  # a log line that arrived after HTTP already showed a later phase
        st.phase = phase
        st.progress = None
        if phase is not Phase.READY:  # the READY event says it, with the start-up time
            message = phase.label + (f": {detail}" if detail else "")
            out.append(event(EventKind.PHASE, now, message, phase=str(phase)))

    def _progress(self, progress: Progress, now: float, out: list[MonitorEvent]) -> None:
        st = self.state
        if st.phase is not None and progress.phase.order < st.phase.order:
            return
        old = st.progress
        st.progress = progress
        key = (progress.done, progress.total, progress.label)
        if old is None or (old.done, old.total, old.label) != key:
            count = f" {progress.done}/{progress.total}" if progress.total else ""
            detail = f" ({progress.detail})" if progress.detail else ""
            out.append(
                event(
                    EventKind.PROGRESS,
                    now,
                    f"{progress.label}{count}{detail}",
                    phase=str(progress.phase),
                    done=progress.done,
                    total=progress.total,
                    detail=progress.detail,
                )
            )

    def _mark_ready(self, via: str, now: float, out: list[MonitorEvent]) -> None:
        st = self.state
        if st.ready_at is not None or st.status.finished:
            return
        self._advance(Phase.READY, now, out)
        st.ready_at = now
        if st.status is Status.STARTING:
            st.status = Status.READY
        elapsed = now - (st.started_at or now)
        out.append(
            event(
                EventKind.READY,
                now,
                f"ready in {elapsed:.1f} s at {st.url}",
                via=via,
                url=st.url,
                pid=st.pid,
                startup_s=round(elapsed, 3),
            )
        )

    def _unhealthy(self, message: str, now: float, out: list[MonitorEvent]) -> None:
        st = self.state
        if st.status is not Status.READY:
            return
        st.status = Status.UNHEALTHY
        st.diagnosis = _diagnosis(rc.HEALTH, message, self.fix_flags())
        out.append(event(EventKind.UNHEALTHY, now, message, card=rc.HEALTH))

    # --- what the poller sees -----------------------------------------------------------

    def http_ready(self, now: float) -> list[MonitorEvent]:
        """/ready (or /health) answered 200."""
        out: list[MonitorEvent] = []
        st = self.state
        if st.ready_at is None:
            self._mark_ready("http", now, out)
        elif st.status is Status.UNHEALTHY:
            st.status = Status.READY
            out.append(event(EventKind.HEALTHY, now, "/ready answers 200 again"))
        return out

    def http_unavailable(self, now: float) -> list[MonitorEvent]:
        """/ready answered 503: still starting, or unhealthy once it was ready."""
        out: list[MonitorEvent] = []
        st = self.state
        if st.ready_at is None:
            self._advance(Phase.SERVER_UP, now, out)
        elif st.status is Status.READY and st.stop_requested_at is None:
            st.status = Status.UNHEALTHY
            if st.diagnosis is None or st.diagnosis.code != rc.HEALTH:
                st.diagnosis = _diagnosis(
                    rc.HEALTH,
                    "/ready answers 503: the server marked itself unhealthy",
                    self.fix_flags(),
                )
            out.append(event(EventKind.UNHEALTHY, now, "/ready answers 503", card=rc.HEALTH))
        return out

    def health_failed(self, now: float) -> list[MonitorEvent]:
        """/health (a one-token generation) answered 503."""
        out: list[MonitorEvent] = []
        if self.state.stop_requested_at is None:
            self._unhealthy("/health answered 503", now, out)
        return out

    def server_info(
        self, info: Mapping[str, Any] | None, now: float, *, enable_metrics: bool
    ) -> list[MonitorEvent]:
        """What /server_info said after ready (None: it did not answer)."""
        out: list[MonitorEvent] = []
        if isinstance(info, Mapping):
            self._resolved_http = {k: info.get(k) for k in ARG_KEYS if k in info}
            if self.state.summary is None:
                self.state.summary = summary_from_server_info(info)
                if self.state.summary is not None:
                    out.append(self._summary_event(now))
            self._headroom(now, out)
        if not enable_metrics:
            self._add_hint(hints.metrics_off_hint(), now, out)
        return out

    def load(self, load: LoadStats) -> list[MonitorEvent]:
        if (
            load.source == "loads"
            and not load.gen_throughput
            and self._log_load.get("gen_throughput")
        ):
            # /v1/loads refreshes gen_throughput only with --enable-metrics; the log has it
            load = replace(load, gen_throughput=self._log_load["gen_throughput"])
        self.state.load = load
        return [self._stats_event(load)]

    def gpus(self, samples: tuple[GpuSample, ...], now: float) -> list[MonitorEvent]:
        self.state.gpus = samples
        if samples and self._gpu_total_gb is None:
            self._gpu_total_gb = samples[0].memory_total / (1 << 30)
        text = "; ".join(
            f"GPU{s.index} {_gib(s.memory_used)}/{_gib(s.memory_total)} GiB"
            + (f", {s.utilization}%" if s.utilization is not None else "")
            for s in samples
        )
        return [event(EventKind.GPU, now, text, gpus=[vars(s) for s in samples])]

    def gpu_note(self, note: str) -> None:
        self.state.gpu_note = note

    def timed_out(self, timeout: float) -> Diagnosis:
        st = self.state
        where = st.progress.label if st.progress else (st.phase.label if st.phase else "start-up")
        return _diagnosis(
            rc.STARTUP_TIMEOUT,
            f"the server did not become ready within {timeout:g} s (last phase: {where})",
            self.fix_flags(),
        )

    # --- load and hints ---------------------------------------------------------------

    def _log_stats(self, now: float, out: list[MonitorEvent]) -> None:
        # the log is the source of load figures only while HTTP gives none
        st = self.state
        if st.load is not None and st.load.source != "log":
            return
        if now - self._last_stats_emit < self.metrics_interval:
            return
        self._last_stats_emit = now
        st.load = LoadStats(
            source="log",
            at=now,
            running=self._log_load.get("running"),
            queued=self._log_load.get("queued"),
            token_usage=self._log_load.get("token_usage"),
            gen_throughput=self._log_load.get("gen_throughput"),
        )
        out.append(self._stats_event(st.load))

    def _stats_event(self, load: LoadStats) -> MonitorEvent:
        return event(EventKind.STATS, load.at, stats_text(load), **load.to_json())

    def _summary_event(self, now: float) -> MonitorEvent:
        s = self.state.summary
        assert s is not None
        mem = f"{s.available_gpu_mem_gb:.2f} GB" if s.available_gpu_mem_gb is not None else "?"
        return event(
            EventKind.SUMMARY,
            now,
            f"max_total_num_tokens={s.max_total_num_tokens}, max_running_requests={s.max_running_requests}, "
            f"context_len={s.context_len}, available_gpu_mem={mem}",
            **vars(s),
        )

    def _headroom(self, now: float, out: list[MonitorEvent]) -> None:
        s = self.state.summary
        if s is None or s.available_gpu_mem_gb is None:
            return
        if any(h.code in (rc.HEADROOM_LOW, rc.HEADROOM_HIGH) for h in self.state.hints):
            return
        total = self._gpu_total_gb or self._load_begin_avail
        fraction = self.fix_flags().get("mem_fraction_static")
        hint = hints.headroom_hint(
            s.available_gpu_mem_gb, total, fraction if isinstance(fraction, float) else None
        )
        if hint is not None:
            self._add_hint(hint, now, out)

    def _add_hint(self, hint: Finding, now: float, out: list[MonitorEvent]) -> None:
        self.state.hints = (*self.state.hints, hint)
        out.append(event(EventKind.HINT, now, hint.message, **hint.to_json()))


def summary_from_server_info(info: Mapping[str, Any]) -> StartupSummary | None:
    states = info.get("internal_states") or [{}]
    first = states[0] if isinstance(states, list) and states and isinstance(states[0], dict) else {}
    usage = first.get("memory_usage")
    memory: Mapping[str, Any] = usage if isinstance(usage, dict) else {}
    if info.get("max_total_num_tokens") is None:
        return None
    return StartupSummary(
        max_total_num_tokens=info.get("max_total_num_tokens"),
        max_running_requests=first.get("effective_max_running_requests_per_dp")
        or info.get("max_running_requests"),
        context_len=info.get("context_length"),
        # scheduler.py:1264: startup_available is the same figure as available_gpu_mem
        available_gpu_mem_gb=memory.get("startup_available"),
        chunked_prefill_size=info.get("chunked_prefill_size"),
        source="server_info",
    )


def _diagnosis(code: str, message: str, flags: Mapping[str, Any]) -> Diagnosis:
    return diagnosis_for(code, message, dict(flags))


def _cards_matching(line: str) -> set[str]:
    return {c.code for c in rc.runtime_cards() if c.matches(line)}


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.0f}ms"


def _gib(n: int | None) -> str:
    return "?" if n is None else f"{n / (1 << 30):.1f}"
