"""What the monitor knows about a server, and the events it sends when that changes.

Plain data with no UI: the headless monitor prints it, the TUI draws it. Every member of
MonitorState is immutable (frozen dataclasses, tuples), so a snapshot is a shallow copy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from sglaunch.runtime.failures import Diagnosis
from sglaunch.runtime.load import LoadStats
from sglaunch.validators.findings import Finding

if TYPE_CHECKING:  # sglaunch.memory reads this package's log events: no import cycle
    from sglaunch.runtime.after_launch import Comparison


class Status(StrEnum):
    STARTING = "starting"
    READY = "ready"
    UNHEALTHY = "unhealthy"  # /ready answers 503 after the server was ready
    STOPPING = "stopping"
    STOPPED = "stopped"  # exited after a stop request, or cleanly on its own
    FAILED = "failed"  # exited (or was stopped by sglaunch) before it was ready
    DIED = "died"  # exited on its own after it was ready
    DETACHED = "detached"  # left running; sglaunch no longer follows it

    @property
    def finished(self) -> bool:
        return self in (Status.STOPPED, Status.FAILED, Status.DIED)


class Phase(StrEnum):
    """Start-up phases in the order sglang goes through them."""

    LAUNCHED = "launched"
    INIT = "init"
    LOADING_WEIGHTS = "loading_weights"
    KV_CACHE = "kv_cache"
    CUDA_GRAPH = "cuda_graph"
    SERVER_UP = "server_up"
    WARMUP = "warmup"
    READY = "ready"

    @property
    def order(self) -> int:
        return _PHASE_ORDER[self]

    @property
    def label(self) -> str:
        return _PHASE_LABEL[self]


_PHASE_ORDER = {p: i for i, p in enumerate(Phase)}
_PHASE_LABEL = {
    Phase.LAUNCHED: "launched",
    Phase.INIT: "initialising",
    Phase.LOADING_WEIGHTS: "loading weights",
    Phase.KV_CACHE: "allocating the KV cache",
    Phase.CUDA_GRAPH: "capturing CUDA graphs",
    Phase.SERVER_UP: "HTTP server up",
    Phase.WARMUP: "warming up",
    Phase.READY: "ready",
}


@dataclass(frozen=True)
class Progress:
    phase: Phase
    label: str
    done: int
    total: int | None
    detail: str = ""


@dataclass(frozen=True)
class WeightsInfo:
    elapsed_s: float | None
    model_class: str | None = None
    quant: str | None = None
    mem_usage_gb: float | None = None
    avail_mem_gb: float | None = None


@dataclass(frozen=True)
class KvCacheInfo:
    tokens: int
    dtype: str
    size_gb: float
    avail_mem_gb: float | None = None


@dataclass(frozen=True)
class GraphCapture:
    what: str  # "target decode", "target prefill", ...
    backend: str | None
    batch_sizes: tuple[int, ...] = ()
    elapsed_s: float | None = None
    mem_usage_gb: float | None = None
    avail_mem_gb: float | None = None


@dataclass(frozen=True)
class StartupSummary:
    """sglang's start-up line (scheduler.py:1267), or the same figures from /server_info."""

    max_total_num_tokens: int | None
    max_running_requests: int | None
    context_len: int | None
    available_gpu_mem_gb: float | None
    chunked_prefill_size: int | None = None
    max_prefill_tokens: int | None = None
    source: str = "log"


@dataclass(frozen=True)
class GpuSample:
    index: int
    name: str
    memory_used: int | None
    memory_total: int
    utilization: int | None


@dataclass
class MonitorState:
    status: Status = Status.STARTING
    phase: Phase | None = None
    phases: tuple[Phase, ...] = ()
    progress: Progress | None = None
    pid: int | None = None
    run_dir: str | None = None
    url: str = ""
    command: tuple[str, ...] = ()  # masked
    started_at: float | None = None
    ready_at: float | None = None
    ended_at: float | None = None
    stop_requested_at: float | None = None
    returncode: int | None = None
    weights: WeightsInfo | None = None
    kv_cache: KvCacheInfo | None = None
    graphs: tuple[GraphCapture, ...] = ()
    summary: StartupSummary | None = None
    startup_timings: Mapping[str, float] | None = None
    load: LoadStats | None = None
    gpus: tuple[GpuSample, ...] = ()
    gpu_note: str = ""
    hints: tuple[Finding, ...] = ()
    diagnosis: Diagnosis | None = None
    memory: Comparison | None = None  # the memory plan against sglang's start-up lines
    log_lines: int = 0

    def copy(self) -> MonitorState:
        return dataclasses.replace(self)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "hints":
                out[f.name] = [h.to_json() for h in value]
            elif f.name in ("diagnosis", "load", "memory"):
                out[f.name] = value.to_json() if value else None
            elif dataclasses.is_dataclass(value) and not isinstance(value, type):
                out[f.name] = dataclasses.asdict(value)
            elif isinstance(value, tuple) and value and dataclasses.is_dataclass(value[0]):
                out[f.name] = [dataclasses.asdict(v) for v in value]
            else:
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out


class EventKind(StrEnum):
    SPAWNED = "spawned"
    PHASE = "phase"
    PROGRESS = "progress"
    SUMMARY = "summary"
    READY = "ready"
    STATS = "stats"
    GPU = "gpu"
    HINT = "hint"
    MEMORY = "memory"  # predicted against actual, once sglang's summary line is in
    UNHEALTHY = "unhealthy"
    HEALTHY = "healthy"
    FAILURE = "failure"
    STOP_REQUESTED = "stop_requested"
    EXITED = "exited"
    DETACHED = "detached"


@dataclass(frozen=True)
class MonitorEvent:
    kind: EventKind
    at: float
    message: str
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "event": str(self.kind),
            "time": round(self.at, 3),
            "message": self.message,
        }
        # the event's own keys win over same-named data (a finding's "message", say)
        out.update((k, v) for k, v in self.data.items() if k not in out)
        return out
