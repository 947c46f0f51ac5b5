"""Launch an sglang server and follow it: phases, readiness, load, GPUs, failures.

A Monitor owns one server at a time (restart replaces it). Three threads do the work:
the supervisor forks the server and waits for it (see process.py), a reader turns its
output into lines (log file, ring buffer, phases), a poller asks the server over HTTP
(/ready, /health, /metrics or /v1/loads) and samples the GPUs. Subscribers get events
on those threads; `snapshot()` gives the whole state at any time. Nothing here knows
about a UI.
"""

from __future__ import annotations

import ast
import contextlib
import itertools
import json
import os
import queue
import re
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from sglaunch.errors import UserError
from sglaunch.exitcodes import ExitCode
from sglaunch.runtime import hints
from sglaunch.runtime.failures import Diagnosis, diagnose, diagnosis_for, exit_text
from sglaunch.runtime.lines import LineSplitter
from sglaunch.runtime.load import LoadStats, MetricsWindow, from_loads
from sglaunch.runtime.logparse import Kind, LogEvent, parse_line, strip_prefix
from sglaunch.runtime.probe import Endpoint, free_port, port_problem, request
from sglaunch.runtime.process import DEFAULT_GRACE_S, ServerProcess, SpawnError
from sglaunch.runtime.prometheus import parse_prometheus
from sglaunch.runtime.relay import SECRETS_ENV
from sglaunch.runtime.rundir import RunDir
from sglaunch.runtime.spec import LaunchSpec
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
from sglaunch.secrets import MASK, is_secret_env_name, mask_argv
from sglaunch.validators import runtime_cards as rc
from sglaunch.validators.facts import GpuFacts, GpuMode
from sglaunch.validators.findings import Finding

Subscriber = Callable[[MonitorEvent], None]
GpuProbe = Callable[[], GpuFacts]

# server_args= values the fixes need, for when the dict is not a Python literal
_ARG_KEYS = (
    "mem_fraction_static",
    "cuda_graph_max_bs_decode",
    "chunked_prefill_size",
    "max_running_requests",
    "tp_size",
    "attention_backend",
    "disable_cuda_graph",
    "weight_loader_disable_mmap",
)
READY_PATH = "/ready"
READER_DRAIN_S = 3.0
FAIL_FAST_GRACE_S = 2.0
LOG_FLUSH_S = 1.0  # server.log lags the pipe by at most this


class PortInUseError(UserError):
    """The server's host:port is taken: nothing was started."""

    def __init__(self, message: str, diagnosis: Diagnosis) -> None:
        super().__init__(message, ExitCode.START_FAILED)
        self.diagnosis = diagnosis


def _default_gpu_probe(env: Mapping[str, str]) -> GpuProbe:
    def probe() -> GpuFacts:
        from sglaunch.facts.gpu import probe_gpus

        return probe_gpus(env=env, with_processes=False)

    return probe


def _parse_server_args(text: str) -> dict[str, Any]:
    try:
        data = ast.literal_eval(text)
        if isinstance(data, dict):
            return {k: v for k, v in data.items() if k in _ARG_KEYS}
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        pass
    out: dict[str, Any] = {}
    for key in _ARG_KEYS:
        m = re.search(rf"'{key}': ([^,}}]+)", text)
        if m:
            with contextlib.suppress(ValueError, SyntaxError):
                out[key] = ast.literal_eval(m.group(1).strip())
    return out


class Monitor:
    def __init__(
        self,
        spec: LaunchSpec,
        *,
        startup_timeout: float | None = None,
        stop_grace: float = DEFAULT_GRACE_S,
        probe_interval: float = 0.5,
        metrics_interval: float = 1.0,
        health_interval: float | None = 30.0,
        gpu_interval: float | None = 2.0,
        gpu_probe: GpuProbe | None = None,
        metrics_window: float = 60.0,
        log_buffer: int = 2000,
        runs_root: Path | None = None,
    ) -> None:
        self.spec = spec
        self.startup_timeout = startup_timeout
        self.stop_grace = stop_grace
        self.probe_interval = probe_interval
        self.metrics_interval = metrics_interval
        self.health_interval = health_interval
        self.gpu_interval = gpu_interval
        self._gpu_probe = gpu_probe
        self.metrics_window = metrics_window
        self.runs_root = runs_root
        self._lock = threading.RLock()
        self._subscribers: list[Subscriber] = []
        self._ring: deque[str] = deque(maxlen=log_buffer)
        self._proc: ServerProcess | None = None
        self._run: RunDir | None = None
        self._reset()

    def _reset(self) -> None:
        self._state = MonitorState()
        self._ring.clear()
        self._seq = 0
        self._log_file: IO[str] | None = None
        self._relay: subprocess.Popen[bytes] | None = None
        self._reader_done = threading.Event()
        self._stop_reading = threading.Event()
        self._stop_poll = threading.Event()
        self._done = threading.Event()
        self._ready_event = threading.Event()
        self._fail_fast: Diagnosis | None = None
        self._released = False
        self._resolved_log: dict[str, Any] = {}
        self._resolved_http: dict[str, Any] = {}
        self._observed: dict[str, Any] = {}
        self._load_begin_avail: float | None = None
        self._log_load: dict[str, Any] = {}
        self._last_stats_emit = 0.0
        self._window = MetricsWindow(self.metrics_window)
        self._health_busy = threading.Lock()
        self._gpu_total_gb: float | None = None
        self._graph_what = ""

    # --- subscriptions

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call `callback(event)` for every event, on the monitor's threads."""
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock, contextlib.suppress(ValueError):
                self._subscribers.remove(callback)

        return unsubscribe

    def events(self) -> queue.Queue[MonitorEvent]:
        """A queue that receives every event from now on."""
        q: queue.Queue[MonitorEvent] = queue.Queue()
        self.subscribe(q.put)
        return q

    def _emit(self, events: list[MonitorEvent]) -> None:
        if not events:
            return
        with self._lock:
            subs = list(self._subscribers)
        for ev in events:
            for sub in subs:
                with contextlib.suppress(Exception):
                    sub(ev)

    def _event(self, kind: EventKind, text: str, /, **data: Any) -> MonitorEvent:
        return MonitorEvent(kind, time.time(), text, data)

    # --- public facts

    def snapshot(self) -> MonitorState:
        with self._lock:
            state = self._state.copy()
            state.log_lines = self._seq
            return state

    @property
    def pid(self) -> int | None:
        return self._state.pid

    @property
    def run_dir(self) -> Path | None:
        return self._run.path if self._run else None

    @property
    def endpoint(self) -> Endpoint:
        return self.spec.flags.endpoint

    def log_tail(self, n: int = 200) -> list[str]:
        with self._lock:
            return list(itertools.islice(self._ring, max(len(self._ring) - n, 0), None))

    def lines_since(self, seq: int) -> tuple[int, list[str]]:
        """(current sequence number, the lines after `seq` still in the ring buffer)."""
        with self._lock:
            missing = min(self._seq - seq, len(self._ring))
            lines = (
                list(itertools.islice(self._ring, len(self._ring) - missing, None))
                if missing > 0
                else []
            )
            return self._seq, lines

    def tree_pids(self) -> set[int]:
        return self._proc.tree_pids() if self._proc else set()

    def running(self) -> bool:
        return self._proc is not None and self._proc.running()

    def wait(self, timeout: float | None = None) -> bool:
        """Until the server has exited and the monitor has recorded why."""
        return self._done.wait(timeout)

    def wait_ready(self, timeout: float | None = None) -> bool:
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._ready_event.is_set():
                return True
            if self._done.is_set():
                return False
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                return False
            self._ready_event.wait(0.1 if left is None else min(0.1, left))

    # --- start

    def start(self, *, detach: bool = False) -> None:
        """Check the port, create the run directory, spawn the server, start following it.

        Raises PortInUseError (exit code 3) before spawning when host:port is taken, and
        UserError for a program that cannot be started.
        """
        with self._lock:
            if self.running():
                raise UserError("the server is already running; stop or restart it", ExitCode.USAGE)
            self._reset()
        spec = self.spec
        flags = spec.flags
        problem = port_problem(flags.host, flags.port)
        if problem is not None:
            port = free_port(flags.host, flags.port + 1)
            diag = diagnosis_for(rc.PORT_IN_USE, problem, flags.values, free_port=port)
            with self._lock:
                self._state.status = Status.FAILED
                self._state.diagnosis = diag
            self._done.set()
            raise PortInUseError(problem, diag)
        try:
            run = RunDir.create(spec.profile, self.runs_root)
        except OSError as exc:
            raise UserError(f"cannot create a run directory: {exc}", ExitCode.START_FAILED) from exc
        self._run = run
        command = spec.masked_command()
        run.write_json(
            "argv.json",
            {
                "command": command,
                "argv": mask_argv(spec.argv),
                "entry": spec.entry,
                "python": spec.python,
                "env": {k: (MASK if is_secret_env_name(k) else v) for k, v in spec.env.items()},
                "profile": spec.profile,
            },
        )
        if spec.resolved is not None:
            run.write_json("resolved.json", dict(spec.resolved))
        if detach:
            run.log_path.touch()  # the relay appends; the reader tails it from the start
        else:
            self._log_file = run.open_log()
        env = spec.environment()
        try:
            if detach:
                proc = self._spawn_detached(env)
            else:
                proc = ServerProcess(
                    spec.command(),
                    env=env,
                    cwd=spec.cwd,
                    die_with_parent=True,
                    on_exit=self._on_exit,
                )
                proc.start()
        except SpawnError as exc:
            run.close_log()
            run.update_status(status=str(Status.FAILED), error=str(exc), profile=spec.profile)
            with self._lock:
                self._state.status = Status.FAILED
            self._done.set()
            raise UserError(f"cannot start the server: {exc}", ExitCode.START_FAILED) from exc
        self._proc = proc
        with self._lock:
            st = self._state
            st.pid = proc.pid
            st.run_dir = str(run.path)
            st.url = flags.endpoint.url
            st.command = tuple(command)
            st.started_at = proc.started_at or time.time()
            st.phase = Phase.LAUNCHED
            st.phases = (Phase.LAUNCHED,)
        run.update_status(
            profile=spec.profile,
            status=str(Status.STARTING),
            pid=proc.pid,
            url=flags.endpoint.url,
            started_at=st.started_at,
            detached=detach,
        )
        # readers and the poller get their own events: a restart must not revive them
        if detach:
            reader_args: tuple[Any, ...] = (run.log_path, self._stop_reading, self._reader_done)
            reader = threading.Thread(target=self._tail_file, args=reader_args, daemon=True)
        else:
            reader = threading.Thread(
                target=self._read_pipes, args=(proc, self._reader_done), daemon=True
            )
        reader.start()
        threading.Thread(
            target=self._poll_loop, args=(self._stop_poll,), name="sglaunch-poller", daemon=True
        ).start()
        self._emit(
            [
                self._event(
                    EventKind.SPAWNED,
                    f"started sglang (pid {proc.pid}); run directory {run.path}",
                    pid=proc.pid,
                    run_dir=str(run.path),
                    command=command,
                    url=flags.endpoint.url,
                )
            ]
        )

    def _spawn_detached(self, env: dict[str, str]) -> ServerProcess:
        assert self._run is not None
        r, w = os.pipe()
        try:
            # the relay first: it needs nothing from the server, and if the server then
            # fails to start, closing the pipe ends the relay too. It runs under
            # sglaunch's own environment, which can import sglaunch.
            relay_env = dict(os.environ, **{SECRETS_ENV: json.dumps(self.spec.masker.secrets)})
            try:
                self._relay = subprocess.Popen(
                    [sys.executable, "-m", "sglaunch.runtime.relay", str(self._run.log_path)],
                    stdin=r,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    env=relay_env,
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as exc:
                raise SpawnError(f"cannot start the log relay: {exc}") from exc
            proc = ServerProcess(
                self.spec.command(),
                env=env,
                cwd=self.spec.cwd,
                stdout=w,
                stderr=w,
                die_with_parent=False,
                on_exit=self._on_exit,
            )
            proc.start()
        finally:
            os.close(r)
            os.close(w)
        return proc

    # --- stop, restart, detach

    def stop(self, grace: float | None = None, *, wait: bool = True) -> int | None:
        """Ask the server to stop (SIGTERM), then SIGKILL its group after `grace` seconds."""
        proc = self._proc
        if proc is None or not proc.running():
            self.wait(READER_DRAIN_S + 1)
            return proc.returncode if proc else None
        grace = self.stop_grace if grace is None else grace
        now = time.time()
        with self._lock:
            first = self._state.stop_requested_at is None
            if first:
                self._state.stop_requested_at = now
                if not self._state.status.finished:
                    self._state.status = Status.STOPPING
        if first:
            if self._run:
                self._run.update_status(stop_requested_at=now, status=str(Status.STOPPING))
            self._emit(
                [
                    self._event(
                        EventKind.STOP_REQUESTED,
                        f"stopping the server (pid {proc.pid})",
                        pid=proc.pid,
                    )
                ]
            )
        if not wait:
            threading.Thread(target=proc.stop, args=(grace,), daemon=True).start()
            return None
        rc_ = proc.stop(grace)
        self.wait(READER_DRAIN_S + 1)
        return rc_

    def kill(self) -> int | None:
        """Stop at once: no grace period."""
        return self.stop(grace=0.0)

    def restart(
        self, argv: list[str] | tuple[str, ...] | None = None, *, grace: float | None = None
    ) -> None:
        """Stop the server (if running) and start it again, with new flags when given."""
        self.stop(grace)
        if argv is not None:
            self.spec = self.spec.with_argv(argv)
        self.start(detach=False)

    def release(self) -> None:
        """Leave a detached server running and stop following it."""
        proc = self._proc
        if proc is None:
            return
        self._released = True
        proc.release()
        self._stop_poll.set()
        self._stop_reading.set()
        with self._lock:
            self._state.status = Status.DETACHED
        if self._run:
            self._run.update_status(status=str(Status.DETACHED), detached_at=time.time())
        self._emit(
            [
                self._event(
                    EventKind.DETACHED,
                    f"server left running: pid {proc.pid}, run directory {self.run_dir}",
                    pid=proc.pid,
                    run_dir=str(self.run_dir),
                    url=self.endpoint.url,
                )
            ]
        )

    # --- reading output

    def _read_pipes(self, proc: ServerProcess, done: threading.Event) -> None:
        sel = selectors.DefaultSelector()
        flushed = time.monotonic()
        try:
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    os.set_blocking(stream.fileno(), False)
                    sel.register(stream.fileno(), selectors.EVENT_READ, LineSplitter())
            while sel.get_map():
                ready = sel.select(timeout=0.5)
                if not ready or time.monotonic() - flushed > LOG_FLUSH_S:
                    self._flush_log()
                    flushed = time.monotonic()
                for key, _ in ready:
                    try:
                        data = os.read(key.fd, 65536)
                    except (BlockingIOError, InterruptedError):
                        continue
                    splitter: LineSplitter = key.data
                    if data:
                        lines = splitter.feed(data)
                    else:
                        sel.unregister(key.fd)
                        lines = splitter.flush()
                    if lines:
                        self._ingest(lines)
        finally:
            sel.close()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            self._flush_log()
            done.set()

    def _tail_file(self, path: Path, stop: threading.Event, done: threading.Event) -> None:
        splitter = LineSplitter()
        try:
            with open(path, "rb") as fh:
                while True:
                    data = fh.read(65536)
                    if data:
                        lines = splitter.feed(data)
                        if lines:
                            self._ingest(lines, masked=True)
                        continue
                    if stop.is_set():
                        lines = splitter.flush()
                        if lines:
                            self._ingest(lines, masked=True)
                        return
                    stop.wait(0.1)
        except OSError:
            return
        finally:
            done.set()

    def _flush_log(self) -> None:
        with self._lock:
            if self._log_file is not None:
                with contextlib.suppress(OSError, ValueError):
                    self._log_file.flush()

    def _ingest(self, lines: list[str], *, masked: bool = False) -> None:
        mask = self.spec.masker
        events: list[MonitorEvent] = []
        with self._lock:
            out = []
            for raw in lines:
                line = raw if masked else mask(raw)
                out.append(line)
                self._ring.append(line)
                self._seq += 1
                ev = parse_line(line)
                if ev is not None:
                    self._apply(ev, line, events)
            if self._log_file is not None:
                with contextlib.suppress(OSError, ValueError):
                    self._log_file.write("\n".join(out) + "\n")
        self._emit(events)

    # --- log events -> state (called with the lock held)

    def _advance(self, phase: Phase, events: list[MonitorEvent], detail: str = "") -> None:
        st = self._state
        if phase in st.phases:
            return
        st.phases = tuple(sorted((*st.phases, phase), key=lambda p: p.order))
        if st.phase is not None and phase.order < st.phase.order:
            return  # a log line that arrived after HTTP already showed a later phase
        st.phase = phase
        st.progress = None
        if phase is not Phase.READY:  # the READY event says it, with the start-up time
            message = phase.label + (f": {detail}" if detail else "")
            events.append(self._event(EventKind.PHASE, message, phase=str(phase)))

    def _progress(self, progress: Progress, events: list[MonitorEvent]) -> None:
        st = self._state
        if st.phase is not None and progress.phase.order < st.phase.order:
            return
        old = st.progress
        st.progress = progress
        key = (progress.done, progress.total, progress.label)
        if old is None or (old.done, old.total, old.label) != key:
            count = f" {progress.done}/{progress.total}" if progress.total else ""
            detail = f" ({progress.detail})" if progress.detail else ""
            events.append(
                self._event(
                    EventKind.PROGRESS,
                    f"{progress.label}{count}{detail}",
                    phase=str(progress.phase),
                    done=progress.done,
                    total=progress.total,
                    detail=progress.detail,
                )
            )

    def _apply(self, ev: LogEvent, line: str, events: list[MonitorEvent]) -> None:
        st = self._state
        k, d = ev.kind, ev.data
        ready = st.ready_at is not None
        if k is Kind.DECODE or k is Kind.PREFILL:
            if (
                not ready
                and k is Kind.PREFILL
                and st.phase is not None
                and st.phase.order >= Phase.SERVER_UP.order
            ):
                self._advance(Phase.WARMUP, events)
            for key in ("running", "queued", "token_usage", "gen_throughput"):
                if d.get(key) is not None:
                    self._log_load[key] = d[key]
            if ready:
                self._maybe_log_stats(events)
        elif k is Kind.ACCESS:
            if not ready and d["path"].startswith("/generate"):
                self._advance(Phase.WARMUP, events)
        elif k is Kind.SERVER_ARGS:
            self._resolved_log = _parse_server_args(d["text"])
            self._advance(Phase.INIT, events)
        elif k is Kind.INIT or k is Kind.ATTENTION_BACKEND:
            self._advance(Phase.INIT, events)
        elif k is Kind.LOAD_BEGIN:
            if self._load_begin_avail is None:
                self._load_begin_avail = d.get("avail_mem_gb")
            self._advance(Phase.LOADING_WEIGHTS, events)
        elif k is Kind.LOAD_PROGRESS:
            self._advance(Phase.LOADING_WEIGHTS, events)
            self._progress(
                Progress(Phase.LOADING_WEIGHTS, "loading weights", d["done"], d["total"]), events
            )
        elif k is Kind.LOAD_END:
            if st.weights is None:
                st.weights = WeightsInfo(
                    d.get("elapsed_s"),
                    d.get("model_class"),
                    d.get("quant"),
                    d.get("mem_usage_gb"),
                    d.get("avail_mem_gb"),
                )
                st.progress = None
        elif k is Kind.KV_CACHE:
            if st.kv_cache is None:
                st.kv_cache = KvCacheInfo(d["tokens"], d["dtype"], d["size_gb"])
            self._advance(
                Phase.KV_CACHE,
                events,
                f"{d['tokens']:,} tokens, {d['size_gb']:.2f} GB ({d['dtype']})",
            )
        elif k is Kind.POOL_END:
            if st.kv_cache is not None and st.kv_cache.avail_mem_gb is None:
                kv = st.kv_cache
                st.kv_cache = KvCacheInfo(kv.tokens, kv.dtype, kv.size_gb, d.get("avail_mem_gb"))
        elif k is Kind.GRAPH_BEGIN:
            self._advance(Phase.CUDA_GRAPH, events)
            self._graph_what = d["what"]
            backend = f"backend={d['backend']}" if d.get("backend") else ""
            label = f"capturing {d['what']} CUDA graphs"
            self._progress(Progress(Phase.CUDA_GRAPH, label, 0, None, backend), events)
        elif k is Kind.GRAPH_PROGRESS:
            self._advance(Phase.CUDA_GRAPH, events)
            what = d["what"]
            if what == "decode" and "cuda_graph_max_bs_decode" not in self._observed:
                # the bar runs from the largest batch size down: the first one is the max
                self._observed["cuda_graph_max_bs_decode"] = d["bs"]
            detail = f"bs={d['bs']}" if what == "decode" else f"num_tokens={d['num_tokens']}"
            label = f"capturing {self._graph_what or what} CUDA graphs"
            done, total = d.get("done") or 0, d.get("total")
            self._progress(Progress(Phase.CUDA_GRAPH, label, done, total, detail), events)
        elif k is Kind.GRAPH_END:
            if not any(g.what == d["what"] for g in st.graphs):
                st.graphs = (
                    *st.graphs,
                    GraphCapture(
                        d["what"],
                        d.get("backend"),
                        tuple(d.get("bs") or ()),
                        d.get("elapsed_s"),
                        d.get("mem_usage_gb"),
                        d.get("avail_mem_gb"),
                    ),
                )
            st.progress = None
        elif k is Kind.SUMMARY:
            if st.summary is None or st.summary.source != "log":
                st.summary = StartupSummary(
                    d["max_total_num_tokens"],
                    d["max_running_requests"],
                    d["context_len"],
                    d["available_mem_gb"],
                    d["chunked_prefill_size"],
                    d["max_prefill_tokens"],
                    "log",
                )
                events.append(self._summary_event())
                self._headroom(events)
        elif k is Kind.STARTUP_TIMINGS:
            st.startup_timings = dict(d)
        elif k is Kind.SERVER_UP:
            self._advance(Phase.SERVER_UP, events, d.get("url") or "")
        elif k is Kind.READY:
            self._mark_ready("log", events)
        elif k is Kind.HEALTH_FAILED:
            self._unhealthy(strip_prefix(line), events)
        elif k is Kind.ERROR and (
            not ready and self._fail_fast is None and rc.PORT_IN_USE in self._cards_matching(line)
        ):
            # sglang would poll for ~120 s before giving up: stop it now
            self._fail_fast = diagnosis_for(
                rc.PORT_IN_USE,
                strip_prefix(line),
                self._fix_flags(),
                free_port=free_port(self.endpoint.host, self.endpoint.port + 1),
            )
            # nothing to drain on a server that never bound its port
            threading.Thread(
                target=self.stop, args=(min(self.stop_grace, FAIL_FAST_GRACE_S),), daemon=True
            ).start()

    def _cards_matching(self, line: str) -> set[str]:
        return {c.code for c in rc.runtime_cards() if c.matches(line)}

    def _summary_event(self) -> MonitorEvent:
        s = self._state.summary
        assert s is not None
        mem = f"{s.available_gpu_mem_gb:.2f} GB" if s.available_gpu_mem_gb is not None else "?"
        return self._event(
            EventKind.SUMMARY,
            f"max_total_num_tokens={s.max_total_num_tokens}, max_running_requests={s.max_running_requests}, "
            f"context_len={s.context_len}, available_gpu_mem={mem}",
            **vars(s),
        )

    def _headroom(self, events: list[MonitorEvent]) -> None:
        s = self._state.summary
        if s is None or s.available_gpu_mem_gb is None:
            return
        if any(h.code in (rc.HEADROOM_LOW, rc.HEADROOM_HIGH) for h in self._state.hints):
            return
        total = self._gpu_total_gb or self._load_begin_avail
        fraction = self._fix_flags().get("mem_fraction_static")
        hint = hints.headroom_hint(
            s.available_gpu_mem_gb, total, fraction if isinstance(fraction, float) else None
        )
        if hint is not None:
            self._add_hint(hint, events)

    def _add_hint(self, hint: Finding, events: list[MonitorEvent]) -> None:
        self._state.hints = (*self._state.hints, hint)
        events.append(self._event(EventKind.HINT, hint.message, **hint.to_json()))

    def _maybe_log_stats(self, events: list[MonitorEvent]) -> None:
        # the log is the source of load figures only while HTTP gives none
        st = self._state
        if st.load is not None and st.load.source != "log":
            return
        now = time.time()
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
        events.append(self._stats_event(st.load))

    def _stats_event(self, load: LoadStats) -> MonitorEvent:
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
        return self._event(EventKind.STATS, ", ".join(parts) or "idle", **load.to_json())

    def _mark_ready(self, via: str, events: list[MonitorEvent]) -> None:
        st = self._state
        if st.ready_at is not None or st.status.finished:
            return
        self._advance(Phase.READY, events)
        st.ready_at = time.time()
        if st.status is Status.STARTING:
            st.status = Status.READY
        elapsed = st.ready_at - (st.started_at or st.ready_at)
        if self._run:
            self._run.update_status(status=str(Status.READY), ready_at=st.ready_at)
        events.append(
            self._event(
                EventKind.READY,
                f"ready in {elapsed:.1f} s at {st.url}",
                via=via,
                url=st.url,
                pid=st.pid,
                startup_s=round(elapsed, 3),
            )
        )
        self._ready_event.set()

    def _unhealthy(self, message: str, events: list[MonitorEvent]) -> None:
        st = self._state
        if st.status is not Status.READY:
            return
        st.status = Status.UNHEALTHY
        st.diagnosis = diagnosis_for(rc.HEALTH, message, self._fix_flags())
        events.append(self._event(EventKind.UNHEALTHY, message, card=rc.HEALTH))

    def _fix_flags(self) -> dict[str, Any]:
        """Flag values in effect, the server's own report first."""
        out: dict[str, Any] = dict(self._observed)
        out.update(self.spec.flags.values)
        if self.spec.resolved:
            out.update({k: v for k, v in self.spec.resolved.items() if v is not None})
        out.update({k: v for k, v in self._resolved_log.items() if v is not None})
        out.update({k: v for k, v in self._resolved_http.items() if v is not None})
        return out

    # --- polling

    def _poll_loop(self, stop: threading.Event) -> None:
        start = time.monotonic()
        next_probe = next_load = next_gpu = 0.0
        next_health = float("inf")
        post_ready_done = False
        gpu_probe = self._gpu_probe or _default_gpu_probe(self.spec.environment())
        gpu_on = self.gpu_interval is not None
        ready_path = READY_PATH
        while not stop.is_set():
            now = time.monotonic()
            status = self._state.status
            if gpu_on and now >= next_gpu:
                gpu_on = self._sample_gpus(gpu_probe, stop)
                next_gpu = now + (self.gpu_interval or 0)
            due = [next_gpu] if gpu_on else []
            if status is Status.STARTING:
                if self.startup_timeout is not None and now - start > self.startup_timeout:
                    self._startup_timed_out()
                    return
                if now >= next_probe:
                    next_probe = now + self.probe_interval
                    ready_path = self._probe_ready(ready_path, stop)
                due.append(next_probe)
            elif status in (Status.READY, Status.UNHEALTHY):
                if not post_ready_done:
                    post_ready_done = True
                    self._after_ready(stop)
                    if self.health_interval is not None:
                        next_health = now + self.health_interval
                if now >= next_load:
                    next_load = now + self.metrics_interval
                    self._poll_load(stop)
                    self._probe_ready(ready_path, stop)
                if now >= next_health and self.health_interval is not None:
                    next_health = now + self.health_interval
                    threading.Thread(
                        target=self._check_health, args=(stop,), name="sglaunch-health", daemon=True
                    ).start()
                due += [next_load, next_health]
            wait = min(due, default=now + 0.25) - time.monotonic()
            stop.wait(min(max(wait, 0.01), 0.25))

    def _probe_ready(self, path: str, stop: threading.Event) -> str:
        try:
            res = request(self.endpoint, path, timeout=2.0)
        except OSError:
            return path  # refused while the model loads: normal
        events: list[MonitorEvent] = []
        with self._lock:
            if stop.is_set():
                return path
            st = self._state
            if res.status == 404 and path == READY_PATH:
                return "/health"  # a server without /ready: fall back as sglang's tests do
            if res.status == 200:
                if st.ready_at is None:
                    self._mark_ready("http", events)
                elif st.status is Status.UNHEALTHY:
                    st.status = Status.READY
                    events.append(self._event(EventKind.HEALTHY, "/ready answers 200 again"))
            elif res.status == 503:
                if st.ready_at is None:
                    self._advance(Phase.SERVER_UP, events)
                elif st.status is Status.READY and st.stop_requested_at is None:
                    st.status = Status.UNHEALTHY
                    if st.diagnosis is None or st.diagnosis.code != rc.HEALTH:
                        st.diagnosis = diagnosis_for(
                            rc.HEALTH,
                            "/ready answers 503: the server marked itself unhealthy",
                            self._fix_flags(),
                        )
                    events.append(
                        self._event(EventKind.UNHEALTHY, "/ready answers 503", card=rc.HEALTH)
                    )
        self._emit(events)
        return path

    def _check_health(self, stop: threading.Event) -> None:
        if not self._health_busy.acquire(blocking=False):
            return
        try:
            # /health runs a one-token generation and waits up to SGLANG_HEALTH_CHECK_TIMEOUT
            res = request(self.endpoint, "/health", timeout=45.0)
        except OSError:
            return
        finally:
            self._health_busy.release()
        events: list[MonitorEvent] = []
        with self._lock:
            if res.status == 503 and self._state.stop_requested_at is None and not stop.is_set():
                self._unhealthy("/health answered 503", events)
        self._emit(events)

    def _after_ready(self, stop: threading.Event) -> None:
        events: list[MonitorEvent] = []
        try:
            res = request(self.endpoint, "/server_info", timeout=5.0)
            info = json.loads(res.body) if res.status == 200 else None
        except (OSError, ValueError):
            info = None
        with self._lock:
            if stop.is_set():
                return
            if isinstance(info, dict):
                self._resolved_http = {k: info.get(k) for k in _ARG_KEYS if k in info}
                if self._state.summary is None:
                    self._state.summary = _summary_from_server_info(info)
                    if self._state.summary is not None:
                        events.append(self._summary_event())
                self._headroom(events)
            if not self.spec.flags.enable_metrics:
                self._add_hint(hints.metrics_off_hint(), events)
        self._emit(events)

    def _poll_load(self, stop: threading.Event) -> None:
        now = time.time()
        load: LoadStats | None = None
        try:
            if self.spec.flags.enable_metrics:
                res = request(self.endpoint, "/metrics", timeout=5.0)
                if res.status == 200:
                    load = self._window.update(parse_prometheus(res.text()), now)
            if load is None:
                res = request(self.endpoint, "/v1/loads", timeout=5.0)
                if res.status == 200:
                    load = from_loads(json.loads(res.body), now)
        except (OSError, ValueError):
            return
        if load is None:
            return
        with self._lock:
            if stop.is_set():
                return
            if (
                load.source == "loads"
                and not load.gen_throughput
                and self._log_load.get("gen_throughput")
            ):
                # /v1/loads refreshes gen_throughput only with --enable-metrics; the log has it
                load = replace(load, gen_throughput=self._log_load["gen_throughput"])
            self._state.load = load
            event = self._stats_event(load)
        self._emit([event])

    def _sample_gpus(self, probe: GpuProbe, stop: threading.Event) -> bool:
        try:
            facts = probe()
        except Exception:
            return False
        if stop.is_set():
            return False
        if facts.mode is not GpuMode.NVML:
            with self._lock:
                self._state.gpu_note = facts.status
            return False
        samples = tuple(
            GpuSample(d.index, d.name, d.memory_used, d.memory_total, d.utilization)
            for d in facts.devices
        )
        with self._lock:
            self._state.gpus = samples
            if samples and self._gpu_total_gb is None:
                self._gpu_total_gb = samples[0].memory_total / (1 << 30)
            event = self._event(
                EventKind.GPU,
                "; ".join(
                    f"GPU{s.index} {_gib(s.memory_used)}/{_gib(s.memory_total)} GiB"
                    + (f", {s.utilization}%" if s.utilization is not None else "")
                    for s in samples
                ),
                gpus=[vars(s) for s in samples],
            )
        self._emit([event])
        return True

    def _startup_timed_out(self) -> None:
        with self._lock:
            st = self._state
            where = (
                st.progress.label if st.progress else (st.phase.label if st.phase else "start-up")
            )
            self._fail_fast = diagnosis_for(
                rc.STARTUP_TIMEOUT,
                f"the server did not become ready within {self.startup_timeout:g} s (last phase: {where})",
                self._fix_flags(),
            )
        self.stop()

    # --- exit

    def _on_exit(self, returncode: int) -> None:
        if self._released:
            return
        try:
            self._record_exit(returncode)
        finally:
            self._done.set()  # whatever happened, nobody may wait forever

    def _record_exit(self, returncode: int) -> None:
        self._stop_poll.set()
        if self._relay is not None:
            # the relay ends when every writer of its pipe is gone
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._relay.wait(READER_DRAIN_S)
        self._stop_reading.set()
        self._reader_done.wait(READER_DRAIN_S)
        events: list[MonitorEvent] = []
        with self._lock:
            st = self._state
            st.returncode = returncode
            st.ended_at = time.time()
            st.progress = None
            if self._fail_fast is not None:
                st.status = Status.FAILED if st.ready_at is None else Status.DIED
                st.diagnosis = self._fail_fast
            elif st.stop_requested_at is not None:
                st.status = Status.STOPPED
            elif st.ready_at is None:
                st.status = Status.FAILED
                st.diagnosis = self._diagnose(returncode, ready=False)
            elif returncode in (0, -signal.SIGTERM, -signal.SIGINT):
                st.status = Status.STOPPED  # stopped from outside, cleanly
            else:
                st.status = Status.DIED
                st.diagnosis = self._diagnose(returncode, ready=True)
            if self._log_file is not None and self._run is not None:
                with contextlib.suppress(OSError, ValueError):
                    self._run.close_log()
                self._log_file = None
            failed = st.status in (Status.FAILED, Status.DIED)
            if failed and st.diagnosis is not None:
                d = st.diagnosis
                events.append(
                    self._event(
                        EventKind.FAILURE,
                        f"{d.title}: {d.message}",
                        code=d.code,
                        diagnosis=d.to_json(),
                    )
                )
            events.append(
                self._event(
                    EventKind.EXITED,
                    f"server {st.status} ({exit_text(returncode)})",
                    status=str(st.status),
                    returncode=returncode,
                    stop_requested=st.stop_requested_at is not None,
                )
            )
            status_fields = {
                "status": str(st.status),
                "returncode": returncode,
                "ended_at": st.ended_at,
                "diagnosis": st.diagnosis.to_json() if failed and st.diagnosis else None,
            }
        if self._run:
            with contextlib.suppress(OSError):
                self._run.update_status(**status_fields)
        self._emit(events)

    def _diagnose(self, returncode: int, *, ready: bool) -> Diagnosis:
        ep = self.endpoint
        return diagnose(
            list(self._ring),
            ready=ready,
            returncode=returncode,
            flags=self._fix_flags(),
            free_port=lambda: free_port(ep.host, ep.port + 1),
        )


def _summary_from_server_info(info: Mapping[str, Any]) -> StartupSummary | None:
    states = info.get("internal_states") or [{}]
    first = states[0] if isinstance(states, list) and states and isinstance(states[0], dict) else {}
    memory = first.get("memory_usage") if isinstance(first.get("memory_usage"), dict) else {}
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


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.0f}ms"


def _gib(n: int | None) -> str:
    return "?" if n is None else f"{n / (1 << 30):.1f}"
