"""The oracle service with sglang's real resolution (the CPU sglang env, SGLAUNCH_SGLANG_PYTHON).

Several processes at once on first use, a service killed mid-life, a request
that hangs next to one that does not, relative paths from the client's folder,
and `sglaunch check` / `oracle status` / `oracle stop` as processes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from sglaunch.facts.model import model_path_for_sglang
from sglaunch.oracle.service_client import ServiceOracle
from tests.support.processes import wait_for, wait_gone
from tests.support.service import H100X2, live_service_pids, service_processes

pytestmark = pytest.mark.oracle

DP_ERROR = "MiniCPM does not support DP attention"
HANG = {"SGLAUNCH_ORACLE_TEST_HANG": "1"}
CHILD = Path(__file__).resolve().parents[2] / "support" / "client_child.py"


def sala() -> str:
    return model_path_for_sglang("example:minicpm-sala")


def bad_line(model: str | None = None) -> list[str]:
    return ["--model-path", model or sala(), "--attn-dp-size", "2", "--tp-size", "2"]


def test_concurrent_first_use_ends_with_one_service(sglang_python: str, folder: Path) -> None:
    procs = [
        subprocess.Popen(
            [sys.executable, str(CHILD), sglang_python, str(folder), *bad_line()],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        results.append(json.loads(out))
    assert all(r["available"] for r in results), results
    assert {r["error"] for r in results} == {DP_ERROR}
    pids = {r["service_pid"] for r in results}
    assert len(pids) == 1, results
    assert set(service_processes(folder)) == pids == live_service_pids(folder)
    assert len({r["worker_pid"] for r in results}) == 1


def test_a_killed_service_gives_way_to_a_new_one(sglang_python: str, folder: Path) -> None:
    oracle = ServiceOracle(sglang_python, folder=folder, timeout=60)
    assert oracle.start().available, oracle.status.reason
    try:
        pid, worker = oracle.service_pid, oracle.worker_pid
        assert pid and worker
        assert oracle.resolve(bad_line(), {}, H100X2).error is not None
        os.kill(pid, signal.SIGKILL)
        assert wait_gone([pid, worker]) == set()  # the warm worker died with its service
        # the next request finds the stale socket, starts a new service, and is answered
        answer = oracle.resolve(bad_line(), {}, H100X2)
        assert answer.error is not None and answer.error.message == DP_ERROR, answer.fault
        assert oracle.service_pid not in (None, pid)
        assert live_service_pids(folder) == {oracle.service_pid}
    finally:
        oracle.close()


def test_a_hung_request_times_out_and_the_others_are_answered(
    sglang_python: str, folder: Path
) -> None:
    hung = ServiceOracle(sglang_python, folder=folder, timeout=4)
    patient = ServiceOracle(sglang_python, folder=folder, timeout=60)
    hasty = ServiceOracle(sglang_python, folder=folder, timeout=1)
    for o in (hung, patient, hasty):
        assert o.start().available, o.status.reason
    try:
        service, worker = hung.service_pid, hung.worker_pid
        answers: dict[str, object] = {}
        thread = threading.Thread(
            target=lambda: answers.update(hung=hung.resolve(bad_line(), HANG, H100X2))
        )
        thread.start()
        assert wait_for(lambda: _resolving(folder), timeout=30)
        # queued behind the hung one: its own 1 s pass first, so it is told the service is busy
        busy = hasty.resolve(bad_line(), {}, H100X2)
        answered = patient.resolve(bad_line(), {}, H100X2)
        thread.join(60)
        stuck = answers["hung"]
        assert stuck.timed_out and "did not finish within" in stuck.fault  # type: ignore[attr-defined]
        assert busy.timed_out and "busy" in busy.fault
        assert answered.error is not None and answered.error.message == DP_ERROR
        # the service and its warm worker stayed up
        assert patient.service_pid == service
        assert hung.resolve(bad_line(), {}, H100X2).error is not None
        assert live_service_pids(folder) == {service}
        assert hung.worker_pid == worker
    finally:
        for o in (hung, patient, hasty):
            o.close()


def test_relative_paths_are_read_from_the_clients_folder(
    sglang_python: str, folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tmp_path / "sala"
    model.mkdir()
    (model / "config.json").write_text(Path(sala(), "config.json").read_text())
    monkeypatch.chdir(tmp_path)
    with ServiceOracle(sglang_python, folder=folder, timeout=60) as oracle:
        answer = oracle.resolve(bad_line("sala"), {}, H100X2)
    assert answer.error is not None and answer.error.message == DP_ERROR, answer


def test_the_service_sizes_the_pool_with_sglangs_own_code(sglang_python: str, folder: Path) -> None:
    # what `fit --oracle` asks: the built-in plan's numbers against sglang's pool configurator
    from sglaunch.facts.model import load_model_facts
    from sglaunch.facts.presets import parse_gpu_spec
    from sglaunch.flags.schema import bundled_schema
    from sglaunch.memory.oracle_request import oracle_memory_request
    from sglaunch.session import LaunchSession
    from sglaunch.validators.memory.plan import plan_memory

    session = LaunchSession(bundled_schema(), planning_default="H100x1")
    session.request_model("example:llama-3.1-8b")
    session.model_loaded("example:llama-3.1-8b", load_model_facts("example:llama-3.1-8b"))
    plan = plan_memory(session.check_input())
    request = oracle_memory_request(plan, session.model)
    argv = ["--model-path", model_path_for_sglang("example:llama-3.1-8b")]
    with ServiceOracle(sglang_python, folder=folder, timeout=60) as oracle:
        answer = oracle.resolve(argv, {}, parse_gpu_spec("H100x1"), memory=request)
        plain = oracle.resolve(argv, {}, parse_gpu_spec("H100x1"))
    assert answer.ok and answer.memory is not None, answer
    assert answer.memory["max_total_num_tokens"] == plan.max_total_num_tokens
    assert answer.memory["max_running_requests"] == plan.max_running_requests
    assert plain.ok and plain.memory is None  # asked only when asked


def _resolving(folder: Path) -> bool:
    from sglaunch.oracle.ipc import ServicePaths
    from sglaunch.oracle.service_client import hello, try_connect

    [lock] = folder.glob("oracle-*.lock")
    channel = try_connect(ServicePaths.from_lock(lock))
    assert channel is not None
    try:
        info = hello(channel)
    finally:
        channel.close()
    return bool(info and info["resolving"])


def run_cli(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sglaunch", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "SGLAUNCH_RUNTIME_DIR": str(folder), "NO_COLOR": "1"},
    )


def status_line(stderr: str) -> str:
    [line] = [ln for ln in stderr.splitlines() if "sglang check:" in ln]
    return line.split("sglang check:", 1)[1].strip()


def test_check_status_and_stop_as_processes(sglang_python: str, folder: Path) -> None:
    check = ["check", "--model", "example:minicpm-sala", "--gpu", "H100x2", "--"]
    flags = ["--attn-dp-size", "2", "--tp-size", "2"]
    cold = run_cli(folder, *check, *flags)
    warm = run_cli(folder, *check, *flags)
    for res in (cold, warm):
        assert res.returncode == 1, res.stderr
        assert status_line(res.stderr).startswith("rejected by sglang 0.5.23")
    status = run_cli(folder, "oracle", "status", "--json")
    [service] = json.loads(status.stdout)["services"]
    assert service["python"] == sglang_python and service["sglang_version"] == "0.5.23"
    assert service["state"] == "ready" and service["requests"] >= 2
    assert service["pid"] in service_processes(folder)
    text = run_cli(folder, "oracle", "status")
    assert f"oracle service pid {service['pid']} · sglang 0.5.23 · {sglang_python}" in text.stderr
    stopped = run_cli(folder, "oracle", "stop")
    assert stopped.returncode == 0 and f"pid {service['pid']}" in stopped.stderr
    assert wait_gone([service["pid"], service["worker_pid"]]) == set()
    after = run_cli(folder, "oracle", "status")
    assert "no oracle service is running" in after.stderr
    # --no-oracle-service: sglang's verdict from a worker of the check's own
    own = run_cli(folder, *check[:-1], "--no-oracle-service", "--", *flags)
    assert status_line(own.stderr).startswith("rejected by sglang 0.5.23"), own.stderr
    assert service_processes(folder) == []
