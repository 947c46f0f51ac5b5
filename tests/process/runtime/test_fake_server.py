"""The stand-in server itself keeps to reference §7: endpoints per phase, metrics, auth."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from sglaunch.runtime.probe import Endpoint, request
from sglaunch.runtime.prometheus import parse_prometheus
from tests.support.processes import FAKE, MODEL, fake_env, free_tcp_port, wait_for


def _start(*flags: str, scenario: str = "ok") -> tuple[subprocess.Popen[str], Endpoint]:
    port = free_tcp_port()
    env = {**os.environ, **fake_env(scenario)}
    proc = subprocess.Popen(
        [sys.executable, str(FAKE), "--model-path", MODEL, "--port", str(port), *flags],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    return proc, Endpoint("127.0.0.1", port)


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[str]]]:
    made: list[subprocess.Popen[str]] = []
    yield made
    for p in made:
        if p.poll() is None:
            p.terminate()
        p.wait(10)


def _status(ep: Endpoint, path: str) -> int | None:
    try:
        return request(ep, path, timeout=2.0).status
    except OSError:
        return None


def test_port_is_closed_while_loading(procs: list[subprocess.Popen[str]]) -> None:
    proc, ep = _start(scenario="hang_loading")
    procs.append(proc)
    assert wait_for(lambda: proc.poll() is None, 30)
    for _ in range(5):
        with pytest.raises(ConnectionRefusedError):
            request(ep, "/health")


def test_metrics_text_and_endpoints_when_up(procs: list[subprocess.Popen[str]]) -> None:
    proc, ep = _start("--enable-metrics", "--served-model-name", "llama")
    procs.append(proc)
    assert wait_for(lambda: _status(ep, "/ready") == 200, 20)
    res = request(ep, "/metrics")
    assert res.content_type == "text/plain; version=0.0.4; charset=utf-8"
    m = parse_prometheus(res.text())
    ((labels, value),) = m.series("sglang:max_total_num_tokens")
    assert value == 500000.0
    assert [k for k, _ in labels] == [
        "engine_type",
        "model_name",
        "moe_ep_rank",
        "pp_rank",
        "tp_rank",
    ]
    assert dict(labels)["model_name"] == "llama"
    for name in (
        "sglang:num_running_reqs",
        "sglang:token_usage",
        "sglang:gen_throughput",
        "sglang:cache_hit_rate",
    ):
        assert m.series(name), name  # per-batch gauges exist after the warm-up prefill
    assert m.types["sglang:time_to_first_token_seconds"] == "histogram"
    assert m.buckets("sglang:time_to_first_token_seconds")[float("inf")] >= 1  # the warm-up request
    assert m.total("sglang:num_requests_total") >= 1
    assert len(m.series("sglang:startup_cuda_graph_time_seconds")) == 6
    info = json.loads(request(ep, "/server_info").body)
    assert info["version"] == "0.5.23" and info["max_total_num_tokens"] == 500000
    assert json.loads(request(ep, "/v1/models").body)["data"][0]["id"] == "llama"
    assert request(ep, "/nope").status == 404
    assert _status(ep, "/health") == 200


def test_no_metrics_route_without_the_flag_and_auth_with_a_key(
    procs: list[subprocess.Popen[str]],
) -> None:
    proc, ep = _start("--api-key", "sk-fake-key")
    procs.append(proc)
    assert wait_for(lambda: _status(ep, "/ready") == 200, 20)  # /ready needs no key
    res = request(ep, "/metrics")
    assert res.status == 404 and json.loads(res.body) == {"detail": "Not Found"}
    res = request(ep, "/v1/loads")
    assert res.status == 401 and json.loads(res.body) == {"error": "Unauthorized"}
    keyed = Endpoint(ep.host, ep.port, "sk-fake-key")
    loads = json.loads(request(keyed, "/v1/loads").body)
    assert loads["loads"][0]["max_total_num_tokens"] == 500000
    assert loads["loads"][0]["gen_throughput"] == 0.0  # refreshed only with --enable-metrics


def test_unknown_flag_exits_two_like_sglang() -> None:
    proc, _ = _start("--definitely-not-a-flag")
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 2
    assert (
        err.splitlines()[-1]
        == "sglang serve: error: unrecognized arguments: --definitely-not-a-flag"
    )
    assert "usage: sglang serve [-h]" in err
