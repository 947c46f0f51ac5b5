"""The runtime against the stand-in server, one test per scenario of reference §7.5.

Each test runs the real Monitor (spawn, capture, log parsing, HTTP probes) and checks the
phases it saw, readiness, what it read from /metrics or /v1/loads, the card it chose,
the exit status, and that every process of the server tree is gone afterwards.
"""

from __future__ import annotations

import json
import socket
import threading
from functools import partial
from pathlib import Path

import pytest

from sglaunch.facts.gpu import probe_gpus
from sglaunch.runtime import EventKind, LaunchSpec, Monitor, Phase, PortInUseError, Status
from sglaunch.runtime.probe import Endpoint, request
from sglaunch.secrets import MASK
from sglaunch.validators.cards import runtime as rc
from tests.support.processes import (
    FakeNvml,
    fake_spec,
    free_tcp_port,
    launch,
    wait_for,
    wait_gone,
    wait_tree,
)

ALL_PHASES = tuple(Phase)
TRAFFIC = json.dumps(
    [
        {
            "t": 0,
            "running": 12,
            "queue": 3,
            "new_tokens": 4000,
            "new_seq": 8,
            "gen_tps": 2400.0,
            "token_usage": 0.31,
        },
        {"t": 40, "running": 0, "queue": 0, "gen_tps": 0.0, "token_usage": 0.0},
    ]
)


def _load_from(monitor: Monitor, source: str, **expected: object) -> bool:
    load = monitor.snapshot().load
    return (
        load is not None
        and load.source == source
        and all(getattr(load, k) == v for k, v in expected.items())
    )


def _status_file(monitor: Monitor) -> dict:
    assert monitor.run_dir is not None
    return json.loads((monitor.run_dir / "run.json").read_text())


def test_ok_phases_summary_metrics_gpus_and_clean_stop(monitors: list[Monitor]) -> None:
    spec = fake_spec("--enable-metrics", env={"FAKE_SGLANG_LOAD_SCRIPT": TRAFFIC})
    gpu = partial(probe_gpus, nvml=FakeNvml(), env={}, with_processes=False)
    monitor, rec, tree = launch(monitors, spec, gpu_probe=gpu, gpu_interval=0.2)

    assert monitor.wait_ready(60), monitor.log_tail(30)
    assert len(wait_tree(monitor.pid, 3)) == 3  # main, scheduler, detokenizer
    st = monitor.snapshot()
    assert st.status is Status.READY
    # HTTP may show the server ready before the log reader reaches the warmup's line
    assert wait_for(lambda: monitor.snapshot().phases == ALL_PHASES, 10), st.phases
    st = monitor.snapshot()
    assert st.summary is not None and st.summary.source == "log"
    assert (
        st.summary.max_total_num_tokens,
        st.summary.max_running_requests,
        st.summary.context_len,
    ) == (
        500000,
        2048,
        32768,
    )
    assert st.summary.available_gpu_mem_gb == pytest.approx(8.8)
    assert (
        st.kv_cache is not None
        and st.kv_cache.tokens == 500000
        and st.kv_cache.dtype == "torch.bfloat16"
    )
    assert st.weights is not None and st.weights.model_class == "LlamaForCausalLM"
    assert [g.what for g in st.graphs] == ["target prefill", "target decode"]
    assert st.graphs[1].batch_sizes == (1, 2, 4, 8, 16, 32)
    assert not [
        h for h in st.hints if h.code.startswith("runtime-gpu-headroom")
    ]  # 8.8 GB is healthy
    shard_steps = [
        e.data["done"] for e in rec.of(EventKind.PROGRESS) if e.data["phase"] == "loading_weights"
    ]
    assert shard_steps[-1] == 4 and len(set(shard_steps)) >= 4
    assert any(e.data.get("detail") == "bs=32" for e in rec.of(EventKind.PROGRESS))

    # the load script starts right after warm-up: /metrics shows it
    assert wait_for(lambda: _load_from(monitor, "metrics", running=12), 30)
    load = monitor.snapshot().load
    assert load is not None and load.source == "metrics"
    assert load.queued == 3 and load.token_usage == pytest.approx(0.31)
    assert load.max_total_tokens == 500000
    assert wait_for(
        lambda: monitor.snapshot().load.ttft is not None and monitor.snapshot().load.ttft.p50, 5
    )
    ttft = monitor.snapshot().load.ttft
    assert 0.0 < ttft.p50 <= ttft.p90 <= ttft.p99
    assert wait_for(
        lambda: monitor.snapshot().load.itl is not None and monitor.snapshot().load.itl.p50, 5
    )
    assert wait_for(lambda: bool(monitor.snapshot().gpus), 30)
    gpu0 = monitor.snapshot().gpus[0]
    assert gpu0.utilization == 87 and gpu0.memory_total == 80 << 30
    snapshot = json.loads(json.dumps(monitor.snapshot().to_json()))  # what a UI or --json gets
    assert snapshot["status"] == "ready" and snapshot["summary"]["context_len"] == 32768
    assert snapshot["load"]["ttft"]["p50"] > 0 and snapshot["gpus"][0]["utilization"] == 87

    returncode = monitor.stop()
    st = monitor.snapshot()
    assert returncode == 0 and st.returncode == 0
    assert st.status is Status.STOPPED and st.stop_requested_at is not None
    assert st.diagnosis is None
    assert rec.kinds()[-1] is EventKind.EXITED
    assert EventKind.STOP_REQUESTED in rec.kinds()
    assert not wait_gone(tree.stop())
    status = _status_file(monitor)
    assert status["status"] == "stopped" and status["returncode"] == 0 and status["ready_at"]
    log = (monitor.run_dir / "server.log").read_text()
    assert "The server is fired up and ready to roll!" in log
    assert "Loading safetensors checkpoint shards:  50% Completed | 2/4" in log  # \r-split tqdm
    assert "Gracefully exiting" in log


def test_tensor_parallel_rank_tags_and_millisecond_stamps(monitors: list[Monitor]) -> None:
    spec = fake_spec("--tp-size", "2", "--enable-metrics", env={"SGLANG_LOG_MS": "1"})
    monitor, _, tree = launch(monitors, spec)
    assert monitor.wait_ready(60)
    assert len(wait_tree(monitor.pid, 4)) == 4  # two schedulers
    # HTTP may show the server ready before the log reader reaches the warmup's line
    assert wait_for(lambda: monitor.snapshot().phases == ALL_PHASES, 10), monitor.snapshot()
    st = monitor.snapshot()
    assert st.summary is not None and st.summary.max_total_num_tokens == 500000
    assert any(" TP1] Load weight begin" in line for line in monitor.log_tail(400))
    monitor.stop()
    assert not wait_gone(tree.stop())


def test_log_level_warning_is_followed_over_http(monitors: list[Monitor]) -> None:
    monitor, _, tree = launch(monitors, fake_spec("--log-level", "warning"))
    assert monitor.wait_ready(60)
    st = monitor.snapshot()
    # no INFO line at all; tqdm bars are not logging, so they still show
    assert Phase.INIT not in st.phases and Phase.KV_CACHE not in st.phases
    assert Phase.LOADING_WEIGHTS in st.phases and Phase.READY in st.phases
    assert wait_for(lambda: monitor.snapshot().summary is not None, 30)
    summary = monitor.snapshot().summary
    assert summary.source == "server_info" and summary.max_total_num_tokens == 500000
    assert summary.available_gpu_mem_gb == pytest.approx(8.8)
    monitor.stop()
    assert not wait_gone(tree.stop())


def test_without_metrics_reads_v1_loads_behind_an_api_key(monitors: list[Monitor]) -> None:
    secret = "sk-test-0123456789abcdef"
    spec = fake_spec("--api-key", secret, env={"FAKE_SGLANG_LOAD_SCRIPT": TRAFFIC})
    monitor, _, tree = launch(monitors, spec)
    assert monitor.wait_ready(60)
    assert wait_for(lambda: _load_from(monitor, "loads", running=12), 30)
    load = monitor.snapshot().load
    assert load.source == "loads" and load.queued == 3
    assert load.ttft is None  # no histograms without --enable-metrics
    # gen_throughput is 0 in /v1/loads without metrics: the decode log line fills it in
    assert wait_for(lambda: monitor.snapshot().load.gen_throughput == pytest.approx(2400.0), 30)
    assert wait_for(lambda: any(h.code == rc.METRICS_OFF for h in monitor.snapshot().hints), 30)
    # the bearer token is needed: without it the server answers 401
    ep = monitor.endpoint
    assert request(Endpoint(ep.host, ep.port), "/v1/loads").status == 401
    monitor.stop()
    assert not wait_gone(tree.stop())
    for path in monitor.run_dir.iterdir():
        assert secret not in path.read_text(), path.name
    argv = json.loads((monitor.run_dir / "argv.json").read_text())
    assert argv["argv"][argv["argv"].index("--api-key") + 1] == MASK
    assert f"'api_key': '{MASK}'" in (monitor.run_dir / "server.log").read_text()


@pytest.mark.parametrize(
    ("scenario", "flags", "card", "returncode", "reached"),
    [
        ("fatal_scheduler", (), rc.SCHEDULER_EXCEPTION, -9, Phase.LOADING_WEIGHTS),
        ("oom_no_mem", ("--mem-fraction-static", "0.7"), rc.KV_OOM, -9, Phase.LOADING_WEIGHTS),
        ("oom_kv_weights", ("--mem-fraction-static", "0.5"), rc.KV_OOM, -9, Phase.LOADING_WEIGHTS),
        ("oom_cuda_graph", (), rc.GRAPH_OOM, -9, Phase.CUDA_GRAPH),
        ("scheduler_sigkill", (), rc.SCHEDULER_KILLED, 1, Phase.LOADING_WEIGHTS),
        ("warmup_fail", (), rc.WARMUP, -9, Phase.WARMUP),
        ("argparse_error", (), rc.ARGPARSE, 2, Phase.LAUNCHED),
    ],
)
def test_startup_failure_gets_its_card(
    monitors: list[Monitor],
    scenario: str,
    flags: tuple[str, ...],
    card: str,
    returncode: int,
    reached: Phase,
) -> None:
    monitor, rec, tree = launch(monitors, fake_spec(*flags, scenario=scenario))
    assert monitor.wait(60), monitor.log_tail(30)
    st = monitor.snapshot()
    assert st.status is Status.FAILED
    assert st.returncode == returncode
    assert st.diagnosis is not None and st.diagnosis.code == card, st.diagnosis
    assert reached in st.phases and Phase.READY not in st.phases
    assert st.phase is not None and st.phase.order <= Phase.WARMUP.order
    failure = rec.of(EventKind.FAILURE)
    assert failure and failure[0].data["code"] == card
    assert rec.kinds()[-1] is EventKind.EXITED
    status = _status_file(monitor)
    assert status["status"] == "failed" and status["diagnosis"]["code"] == card
    pids = tree.stop()
    if scenario != "argparse_error":
        assert len(pids) >= 3  # the tree existed: main, scheduler, detokenizer
    assert not wait_gone(pids)


def test_kv_cache_oom_fix_raises_the_fraction(monitors: list[Monitor]) -> None:
    monitor, _, _ = launch(
        monitors, fake_spec("--mem-fraction-static", "0.7", scenario="oom_no_mem")
    )
    assert monitor.wait(60)
    d = monitor.snapshot().diagnosis
    assert d.message.startswith(
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static"
    )
    assert d.fixes[0].set == {"mem_fraction_static": 0.75}


def test_kv_weights_fix_passes_sglang_minimum(monitors: list[Monitor]) -> None:
    monitor, _, _ = launch(
        monitors, fake_spec("--mem-fraction-static", "0.5", scenario="oom_kv_weights")
    )
    assert monitor.wait(60)
    d = monitor.snapshot().diagnosis
    assert "Loaded weights leave no GPU memory for the KV cache" in d.message
    assert d.fixes[0].set["mem_fraction_static"] > 0.512


def test_cuda_graph_oom_fix_lowers_the_resolved_fraction(monitors: list[Monitor]) -> None:
    monitor, _, _ = launch(monitors, fake_spec(scenario="oom_cuda_graph"))
    assert monitor.wait(60)
    d = monitor.snapshot().diagnosis
    assert d.message.startswith("Exception: Capture cuda graph failed: CUDA out of memory")
    fixes = {k: v for f in d.fixes for k, v in f.set.items()}
    # no flag given: the value sglang resolved (server_args= line, 0.835) goes down
    assert fixes["mem_fraction_static"] == 0.78
    # the capture started at bs=32 (largest first), so half of it
    assert fixes["cuda_graph_max_bs_decode"] == 16
    assert fixes["cuda_graph_backend_decode"] == "disabled"


def test_scheduler_killed_mentions_the_oom_killer(monitors: list[Monitor]) -> None:
    monitor, _, _ = launch(monitors, fake_spec(scenario="scheduler_sigkill"))
    assert monitor.wait(60)
    d = monitor.snapshot().diagnosis
    assert "scheduler died during initialization (exit code: -9)" in d.message
    assert "dmesg" in d.message


def test_argparse_error_rejects_unknown_flags_like_sglang(monitors: list[Monitor]) -> None:
    monitor, _, _ = launch(monitors, fake_spec("--gpu-memory-utilization", "0.9"))
    assert monitor.wait(60)
    st = monitor.snapshot()
    assert st.returncode == 2
    assert st.diagnosis.code == rc.ARGPARSE
    assert (
        st.diagnosis.message
        == "sglang serve: error: unrecognized arguments: --gpu-memory-utilization 0.9"
    )


def test_port_taken_at_bind_is_stopped_early_with_a_free_port_fix(monitors: list[Monitor]) -> None:
    monitor, _, tree = launch(monitors, fake_spec(scenario="port_in_use"))
    assert monitor.wait(60)
    st = monitor.snapshot()
    assert st.status is Status.FAILED
    assert st.diagnosis.code == rc.PORT_IN_USE
    assert "address already in use" in st.diagnosis.message
    assert st.stop_requested_at is not None  # sglaunch did not wait for sglang's 120 polls
    port = st.diagnosis.fixes[0].set["port"]
    assert isinstance(port, int) and port != monitor.endpoint.port
    assert not wait_gone(tree.stop())


def test_port_in_use_is_refused_before_spawning(
    monitors: list[Monitor], sglaunch_home: Path
) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        monitor = Monitor(fake_spec(port=port))
        monitors.append(monitor)
        with pytest.raises(PortInUseError) as err:
            monitor.start()
    assert int(err.value.code) == 3
    assert f"port {port} on 127.0.0.1 is already in use" in err.value.message
    assert err.value.diagnosis.code == rc.PORT_IN_USE
    assert err.value.diagnosis.fixes[0].set["port"] != port
    assert monitor.pid is None and not monitor.running()
    assert not (sglaunch_home / "data" / "runs").exists() or not any(
        (sglaunch_home / "data" / "runs").iterdir()
    )


def test_crash_after_ready(monitors: list[Monitor]) -> None:
    spec = fake_spec(
        "--enable-metrics", scenario="runtime_crash", env={"FAKE_SGLANG_CRASH_AFTER": "5"}
    )
    monitor, rec, tree = launch(monitors, spec)
    assert monitor.wait_ready(60)
    assert monitor.wait(60)
    st = monitor.snapshot()
    assert st.status is Status.DIED and st.returncode == -9
    assert st.diagnosis.code == rc.CRASH
    assert (
        st.diagnosis.message == "RuntimeError: CUDA error: an illegal memory access was encountered"
    )
    assert "Scheduler hit an exception" not in st.diagnosis.traceback  # prefix stripped
    assert "illegal memory access" in st.diagnosis.traceback
    assert rec.kinds().index(EventKind.READY) < rec.kinds().index(EventKind.FAILURE)
    assert not wait_gone(tree.stop())


def test_health_timeout_marks_the_server_unhealthy(monitors: list[Monitor]) -> None:
    monitor, rec, tree = launch(monitors, fake_spec(scenario="health_timeout"), health_interval=0.2)
    assert monitor.wait_ready(60)
    assert wait_for(lambda: monitor.snapshot().status is Status.UNHEALTHY, 30)
    st = monitor.snapshot()
    assert st.diagnosis.code == rc.HEALTH
    assert rec.of(EventKind.UNHEALTHY)
    assert monitor.running()  # unhealthy, not dead
    monitor.stop()
    assert monitor.snapshot().status is Status.STOPPED
    assert not wait_gone(tree.stop())


def test_hang_while_loading_hits_the_startup_timeout(monitors: list[Monitor]) -> None:
    monitor, _, tree = launch(monitors, fake_spec(scenario="hang_loading"), startup_timeout=1.0)
    assert monitor.wait(60)
    st = monitor.snapshot()
    assert st.status is Status.FAILED
    assert st.diagnosis.code == rc.STARTUP_TIMEOUT
    assert "within 1 s (last phase: loading weights)" in st.diagnosis.message
    assert st.returncode == -15  # SIGTERM while loading: sglang has no handler yet
    assert not wait_gone(tree.stop())


def test_restart_with_edited_argv(monitors: list[Monitor]) -> None:
    monitor, _, tree = launch(monitors, fake_spec())
    assert monitor.wait_ready(60)
    old_pid = monitor.pid
    old_tree = wait_tree(old_pid, 3)
    new_port = free_tcp_port()
    argv = [*monitor.spec.argv[:3], str(new_port), "--enable-metrics"]
    monitor.restart(argv)
    assert monitor.wait_ready(60)
    assert monitor.pid != old_pid and monitor.endpoint.port == new_port
    assert monitor.snapshot().stop_requested_at is None
    assert not wait_gone(old_tree | tree.stop())
    assert wait_for(lambda: _load_from(monitor, "metrics"), 30)


def test_spawned_from_a_short_lived_thread_survives_it(monitors: list[Monitor]) -> None:
    # PR_SET_PDEATHSIG fires when the forking *thread* exits: a UI worker thread must not
    # take the server down with it.
    monitor = Monitor(fake_spec(), probe_interval=0.1, gpu_interval=None, stop_grace=5.0)
    monitors.append(monitor)
    worker = threading.Thread(target=monitor.start)
    worker.start()
    worker.join()
    assert monitor.wait_ready(60)
    pids = wait_tree(monitor.pid, 3)
    assert not wait_for(lambda: not monitor.running(), 1.0)
    assert all(p in monitor.tree_pids() for p in pids)
    monitor.stop()
    assert not wait_gone(pids)


def test_program_not_found_is_one_clear_error(monitors: list[Monitor]) -> None:
    spec = LaunchSpec(
        argv=("--model-path", "m", "--port", str(free_tcp_port())), python="/nonexistent/python3"
    )
    monitor = Monitor(spec)
    monitors.append(monitor)
    with pytest.raises(Exception) as err:
        monitor.start()
    assert "cannot start the server" in str(err.value)
    assert int(err.value.code) == 3
