"""Asking a running server how it is: HTTP (/ready, /health, /server_info, /metrics or
/v1/loads) and NVML, on one thread, at the intervals the monitor sets.

The poller only observes: what it learns goes to a `PollSink` (the monitor that owns the
server, or one that attached to it), which turns it into state through the start-up
reducer. It never starts or stops anything.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from sglaunch.facts import gpu as gpu_facts
from sglaunch.runtime.load import LoadStats, MetricsWindow, from_loads
from sglaunch.runtime.probe import Endpoint, request
from sglaunch.runtime.prometheus import parse_prometheus
from sglaunch.runtime.state import GpuSample, Status
from sglaunch.safeio import InputError, parse_json
from sglaunch.validators.facts import GpuFacts, GpuMode

GpuProbe = Callable[[], GpuFacts]
READY_PATH = "/ready"


class PollSink(Protocol):
    """Where observations go; each call is made on the poller's thread."""

    def status(self) -> Status: ...

    def on_ready(self) -> None: ...

    def on_unavailable(self) -> None: ...

    def on_health_failed(self) -> None: ...

    def on_server_info(self, info: Mapping[str, Any] | None) -> None: ...

    def on_load(self, load: LoadStats) -> None: ...

    def on_gpus(self, samples: tuple[GpuSample, ...]) -> None: ...

    def on_gpu_note(self, note: str) -> None: ...

    def on_startup_timeout(self) -> None: ...


@dataclass(frozen=True)
class PollPlan:
    """What to ask, and how often (None: never)."""

    endpoint: Endpoint
    enable_metrics: bool
    probe_interval: float = 0.5
    metrics_interval: float = 1.0
    health_interval: float | None = 30.0
    gpu_interval: float | None = 2.0
    startup_timeout: float | None = None


def _json(body: bytes) -> Any:
    """A server's JSON answer, read with the same limits as any file (ValueError if not)."""
    try:
        return parse_json(body, label="the server's answer", what="HTTP answer")
    except InputError as exc:
        raise ValueError(exc.message) from None


def default_gpu_probe(env: Mapping[str, str]) -> GpuProbe:
    def probe() -> GpuFacts:
        return gpu_facts.probe_gpus(env=env, with_processes=False)

    return probe


def gpu_samples(facts: GpuFacts) -> tuple[GpuSample, ...]:
    return tuple(
        GpuSample(d.index, d.name, d.memory_used, d.memory_total, d.utilization)
        for d in facts.devices
    )


class Poller:
    def __init__(
        self,
        plan: PollPlan,
        sink: PollSink,
        gpu_probe: GpuProbe | None,
        *,
        metrics_window: float = 60.0,
    ) -> None:
        self.plan = plan
        self.sink = sink
        self.gpu_probe = gpu_probe
        self._window = MetricsWindow(metrics_window)
        self._health_busy = threading.Lock()
        self.stop_event = threading.Event()

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.run, name="sglaunch-poller", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self.stop_event.set()

    def run(self) -> None:
        start = time.monotonic()  # once: a restart below must not push the deadline back
        while not self.stop_event.is_set():
            try:
                self._run(start)
                return
            except Exception:  # an odd answer or a sink's fault: go on following, never die
                self.stop_event.wait(1.0)

    def _run(self, start: float) -> None:
        plan, stop = self.plan, self.stop_event
        next_probe = next_load = next_gpu = 0.0
        next_health = float("inf")
        post_ready_done = False
        gpu_on = plan.gpu_interval is not None and self.gpu_probe is not None
        ready_path = READY_PATH
        while not stop.is_set():
            now = time.monotonic()
            status = self.sink.status()
            if gpu_on and now >= next_gpu:
                gpu_on = self._sample_gpus()
                next_gpu = now + (plan.gpu_interval or 0)
            due = [next_gpu] if gpu_on else []
            if status is Status.STARTING:
                if plan.startup_timeout is not None and now - start > plan.startup_timeout:
                    self.sink.on_startup_timeout()
                    return
                if now >= next_probe:
                    next_probe = now + plan.probe_interval
                    ready_path = self._probe_ready(ready_path)
                due.append(next_probe)
            elif status in (Status.READY, Status.UNHEALTHY):
                if not post_ready_done:
                    post_ready_done = True
                    self._after_ready()
                    if plan.health_interval is not None:
                        next_health = now + plan.health_interval
                if now >= next_load:
                    next_load = now + plan.metrics_interval
                    self._poll_load()
                    self._probe_ready(ready_path)
                if now >= next_health and plan.health_interval is not None:
                    next_health = now + plan.health_interval
                    threading.Thread(
                        target=self._check_health, name="sglaunch-health", daemon=True
                    ).start()
                due += [next_load, next_health]
            wait = min(due, default=now + 0.25) - time.monotonic()
            stop.wait(min(max(wait, 0.01), 0.25))

    def _probe_ready(self, path: str) -> str:
        try:
            res = request(self.plan.endpoint, path, timeout=2.0)
        except OSError:
            return path  # refused while the model loads: normal
        if self.stop_event.is_set():
            return path
        if res.status == 404 and path == READY_PATH:
            return "/health"  # a server without /ready: fall back as sglang's tests do
        if res.status == 200:
            self.sink.on_ready()
        elif res.status == 503:
            self.sink.on_unavailable()
        return path

    def _check_health(self) -> None:
        if not self._health_busy.acquire(blocking=False):
            return
        try:
            # /health runs a one-token generation and waits up to SGLANG_HEALTH_CHECK_TIMEOUT
            res = request(self.plan.endpoint, "/health", timeout=45.0)
        except OSError:
            return
        finally:
            self._health_busy.release()
        if res.status == 503 and not self.stop_event.is_set():
            self.sink.on_health_failed()

    def _after_ready(self) -> None:
        try:
            res = request(self.plan.endpoint, "/server_info", timeout=5.0)
            info = _json(res.body) if res.status == 200 else None
        except (OSError, ValueError):
            info = None
        if not self.stop_event.is_set():
            self.sink.on_server_info(info if isinstance(info, dict) else None)

    def _poll_load(self) -> None:
        now = time.time()
        load: LoadStats | None = None
        try:
            if self.plan.enable_metrics:
                res = request(self.plan.endpoint, "/metrics", timeout=5.0)
                if res.status == 200:
                    load = self._window.update(parse_prometheus(res.text()), now)
            if load is None:
                res = request(self.plan.endpoint, "/v1/loads", timeout=5.0)
                if res.status == 200:
                    load = from_loads(_json(res.body), now)
        except (OSError, ValueError):
            return
        if load is not None and not self.stop_event.is_set():
            self.sink.on_load(load)

    def _sample_gpus(self) -> bool:
        assert self.gpu_probe is not None
        try:
            facts = self.gpu_probe()
        except Exception:
            return False
        if self.stop_event.is_set():
            return False
        if facts.mode is not GpuMode.NVML:
            self.sink.on_gpu_note(facts.status)
            return False
        self.sink.on_gpus(gpu_samples(facts))
        return True
