"""The start-up reducer, fed transcript lines with made-up times: no process, no thread, no HTTP."""

from __future__ import annotations

import pytest

from sglaunch.runtime.failures import Diagnosis, diagnosis_for
from sglaunch.runtime.load import LoadStats
from sglaunch.runtime.logparse import parse_line
from sglaunch.runtime.startup import StartupTracker, parse_server_args
from sglaunch.runtime.state import EventKind, GpuSample, MonitorEvent, Phase, Status
from sglaunch.validators.cards import runtime as rc

T = "[2026-11-01 12:00:{s:02d}]"
TRANSCRIPT = [
    "server_args={'model_path': 'm', 'tp_size': 1, 'mem_fraction_static': 0.83, 'chunked_prefill_size': 8192}",
    "Init parallel begin.",
    "Load weight begin. avail mem=78.50 GB",
    "Loading safetensors checkpoint shards:  50% Completed | 2/4 [00:04<00:04, 2.00s/it]",
    "Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:08<00:00, 2.00s/it]",
    "Load weight end. elapsed=8.00 s, type=LlamaForCausalLM, avail mem=63.40 GB, mem usage=15.10 GB.",
    "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 500000, K size: 26.70 GB, V size: 26.70 GB",
    "Memory pool end. avail mem=9.80 GB",
    "Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, avail mem=9.60 GB",
    "Capturing batches (bs=256 avail_mem=9.55 GB):   0%|          | 0/4 [00:00<?, ?it/s]",
    "Capturing batches (bs=128 avail_mem=9.45 GB):  25%|██        | 1/4 [00:01<00:03, 1.0s/it]",
    "Capture target decode CUDA graph end. bs=[1, 64, 128, 256], elapsed=6.00 s, mem usage=0.80 GB, avail mem=8.80 GB.",
    "max_total_num_tokens=500000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=32768, available_gpu_mem=8.80 GB",
    "INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)",
    'INFO:     127.0.0.1:4242 - "POST /generate HTTP/1.1" 200 OK',
    "The server is fired up and ready to roll!",
]


def stamped(i: int, msg: str) -> str:
    # tqdm bars have no prefix; everything else is a logger line
    return msg if msg.startswith(("Loading", "Capturing")) else f"{T.format(s=i)} {msg}"


def feed(tracker: StartupTracker, lines: list[str], t0: float = 100.0) -> list[MonitorEvent]:
    out: list[MonitorEvent] = []
    for i, msg in enumerate(lines):
        line = stamped(i, msg)
        ev = parse_line(line)
        if ev is not None:
            out += tracker.log(ev, line, t0 + i).events
    return out


def started(**flags: object) -> StartupTracker:
    tracker = StartupTracker(flags)
    tracker.spawned(4242, "/runs/r", "http://127.0.0.1:30000", ("python", "-m", "x"), 100.0)
    return tracker


def no_diagnosis(code: int, ready: bool) -> Diagnosis:
    raise AssertionError("not expected to diagnose")


def test_a_whole_startup_goes_through_every_phase_in_order() -> None:
    tracker = started()
    events = feed(tracker, TRANSCRIPT)
    st = tracker.state
    phases = [e.data["phase"] for e in events if e.kind is EventKind.PHASE]
    assert phases == ["init", "loading_weights", "kv_cache", "cuda_graph", "server_up", "warmup"]
    assert st.status is Status.READY and st.phase is Phase.READY and st.ready_at == 115.0
    assert st.weights is not None and st.weights.mem_usage_gb == 15.1
    assert st.kv_cache is not None and (st.kv_cache.tokens, st.kv_cache.avail_mem_gb) == (
        500000,
        9.8,
    )
    assert st.graphs[0].batch_sizes == (1, 64, 128, 256) and st.progress is None
    assert st.summary is not None and st.summary.max_running_requests == 4096
    ready = [e for e in events if e.kind is EventKind.READY]
    assert len(ready) == 1 and ready[0].data["startup_s"] == 15.0
    # the first captured batch size is the largest: what the fixes need
    assert tracker.fix_flags()["cuda_graph_max_bs_decode"] == 256
    assert tracker.fix_flags()["mem_fraction_static"] == 0.83


def test_progress_is_reported_once_per_step_and_never_backwards() -> None:
    tracker = started()
    events = feed(tracker, TRANSCRIPT[:5])
    shards = [(e.data["done"], e.data["total"]) for e in events if e.kind is EventKind.PROGRESS]
    assert shards == [(2, 4), (4, 4)]
    again = feed(tracker, [TRANSCRIPT[4]])
    assert not [e for e in again if e.kind is EventKind.PROGRESS]
    # a late line of an earlier phase moves nothing back
    feed(tracker, TRANSCRIPT[5:9])
    assert tracker.state.phase is Phase.CUDA_GRAPH
    feed(tracker, ["Init parallel begin."])
    assert tracker.state.phase is Phase.CUDA_GRAPH


def test_http_ready_before_the_log_says_it_counts_once() -> None:
    tracker = started()
    feed(tracker, TRANSCRIPT[:8])
    assert [e.kind for e in tracker.http_ready(120.0)] == [EventKind.READY]
    assert tracker.state.status is Status.READY
    assert not [e for e in feed(tracker, TRANSCRIPT[-1:]) if e.kind is EventKind.READY]


def test_the_warmup_read_after_http_said_ready_still_counts_as_a_phase() -> None:
    # a busy machine: the poller sees the server ready before the reader reaches the
    # warmup's /generate line, which sglang logged before its "ready to roll"
    tracker = started()
    feed(tracker, TRANSCRIPT[:14])
    tracker.http_ready(120.0)
    events = feed(tracker, TRANSCRIPT[14:])
    st = tracker.state
    assert st.phases == tuple(Phase)  # every phase, in order
    assert st.phase is Phase.READY
    assert not [e for e in events if e.kind is EventKind.PHASE]  # nothing said after ready


def test_requests_after_the_log_said_ready_are_traffic_not_warmup() -> None:
    tracker = started()
    feed(tracker, [m for m in TRANSCRIPT if "POST /generate" not in m])
    feed(tracker, ['INFO:     127.0.0.1:4242 - "POST /generate HTTP/1.1" 200 OK'])
    assert Phase.WARMUP not in tracker.state.phases


def test_unhealthy_after_ready_and_back() -> None:
    tracker = started()
    feed(tracker, TRANSCRIPT)
    [ev] = tracker.http_unavailable(130.0)
    assert ev.kind is EventKind.UNHEALTHY and tracker.state.status is Status.UNHEALTHY
    assert tracker.state.diagnosis is not None and tracker.state.diagnosis.code == rc.HEALTH
    [ev] = tracker.http_ready(131.0)
    assert ev.kind is EventKind.HEALTHY and tracker.state.status is Status.READY
    # while starting, 503 only means the HTTP server is up
    fresh = started()
    assert [e.data["phase"] for e in fresh.http_unavailable(101.0)] == ["server_up"]


def test_a_bind_error_before_ready_asks_the_caller_to_stop_at_once() -> None:
    tracker = started()
    line = (
        f"{T.format(s=3)} ERROR:    [Errno 98] error while attempting to bind on address "
        "('127.0.0.1', 30000): address already in use"
    )
    ev = parse_line(line)
    assert ev is not None
    step = tracker.log(ev, line, 103.0)
    assert step.port_in_use is not None and "address already in use" in step.port_in_use


@pytest.mark.parametrize(
    ("ready", "stop", "returncode", "status"),
    [
        (False, False, 1, Status.FAILED),
        (True, False, 0, Status.STOPPED),
        (True, False, -9, Status.DIED),
        (True, True, -15, Status.STOPPED),
        (False, True, -15, Status.STOPPED),
    ],
)
def test_exit_outcomes(ready: bool, stop: bool, returncode: int, status: Status) -> None:
    tracker = started()
    feed(tracker, TRANSCRIPT if ready else TRANSCRIPT[:5])
    if stop:
        assert tracker.stop_requested(4242, 200.0)
        assert tracker.stop_requested(4242, 201.0) == []  # once
    asked: list[tuple[int, bool]] = []

    def why(code: int, was_ready: bool) -> Diagnosis:
        asked.append((code, was_ready))
        return diagnosis_for(rc.CRASH, "boom", {})

    events = tracker.exited(returncode, 300.0, fail_fast=None, diagnose=why)
    assert tracker.state.status is status and events[-1].kind is EventKind.EXITED
    failed = status in (Status.FAILED, Status.DIED)
    assert (EventKind.FAILURE in [e.kind for e in events]) is failed
    assert asked == ([(returncode, ready)] if failed else [])
    assert (tracker.exit_record()["diagnosis"] is not None) is failed


def test_a_fail_fast_diagnosis_wins_over_the_exit_code() -> None:
    tracker = started()
    fast = diagnosis_for(rc.PORT_IN_USE, "address already in use", {})
    tracker.exited(-15, 300.0, fail_fast=fast, diagnose=no_diagnosis)
    assert tracker.state.status is Status.FAILED and tracker.state.diagnosis is fast


def test_load_from_the_log_until_http_gives_figures() -> None:
    tracker = started()
    feed(tracker, TRANSCRIPT)
    decode = (
        "Decode batch, #running-req: 3, #token: 1234, token usage: 0.01, cuda graph: True, "
        "gen throughput (token/s): 456.78, #queue-req: 1"
    )
    [stats] = [e for e in feed(tracker, [decode], t0=200.0) if e.kind is EventKind.STATS]
    assert stats.data["source"] == "log" and stats.data["running"] == 3
    # /v1/loads has no throughput without --enable-metrics: the log's figure fills it
    [ev] = tracker.load(LoadStats(source="loads", at=201.0, running=2))
    assert ev.data["gen_throughput"] == 456.78 and tracker.state.load is not None
    assert not [e for e in feed(tracker, [decode], t0=300.0) if e.kind is EventKind.STATS]


def test_headroom_hint_uses_the_gpu_size_and_metrics_hint_once() -> None:
    tracker = started(mem_fraction_static=0.95)
    tracker.gpus((GpuSample(0, "H100", 70 << 30, 80 << 30, 90),), 99.0)
    low = [
        *TRANSCRIPT[:12],
        TRANSCRIPT[12].replace("available_gpu_mem=8.80", "available_gpu_mem=0.90"),
    ]
    events = feed(tracker, low)
    hints = [e for e in events if e.kind is EventKind.HINT]
    assert [h.data["code"] for h in hints] == [rc.HEADROOM_LOW]
    info = tracker.server_info({"max_total_num_tokens": 1}, 130.0, enable_metrics=False)
    assert [e.data["code"] for e in info] == [rc.METRICS_OFF]


def test_server_args_survive_a_line_that_is_not_a_literal() -> None:
    assert parse_server_args("{'mem_fraction_static': 0.8, 'tp_size': 2, 'x': 1}") == {
        "mem_fraction_static": 0.8,
        "tp_size": 2,
    }
    assert parse_server_args("ServerArgs('mem_fraction_static': 0.7, 'weird': <object>)") == {
        "mem_fraction_static": 0.7
    }


def test_server_args_survive_a_parser_that_breaks(monkeypatch: pytest.MonkeyPatch) -> None:
    # seen under load: CPython 3.11's parser raised SystemError ("AST constructor recursion
    # depth mismatch") in the log reader's thread, and the whole log stopped being read
    import ast

    real = ast.literal_eval
    calls = []

    def flaky(text: str) -> object:
        calls.append(text)
        if len(calls) == 1:
            raise SystemError("AST constructor recursion depth mismatch (before=30, after=186)")
        return real(text)

    monkeypatch.setattr(ast, "literal_eval", flaky)
    assert parse_server_args("{'mem_fraction_static': 0.8, 'tp_size': 2}") == {
        "mem_fraction_static": 0.8,
        "tp_size": 2,
    }


def test_a_startup_timeout_names_the_last_phase() -> None:
    tracker = started()
    feed(tracker, TRANSCRIPT[:4])
    d = tracker.timed_out(900)
    assert d.code == rc.STARTUP_TIMEOUT and "loading weights" in d.message and "900 s" in d.message
