"""A server's odd answers: an endless body is cut off, and a malformed one never stops the
poller that follows the server (it died on the first, and the monitor went blind)."""

from __future__ import annotations

import http.server
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from sglaunch.runtime.load import LoadStats
from sglaunch.runtime.poller import Poller, PollPlan
from sglaunch.runtime.probe import MAX_BODY, Endpoint, request
from sglaunch.runtime.state import GpuSample, Status
from tests.support.processes import wait_for


class Answers:
    loads: bytes = b'{"loads": [1]}'  # a list of numbers where objects belong


def serve(answers: Answers) -> Iterator[Endpoint]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/endless":
                self.send_response(200)
                self.end_headers()
                chunk = b"x" * (1 << 20)
                try:
                    for _ in range((MAX_BODY >> 20) + 8):
                        self.wfile.write(chunk)
                except OSError:
                    pass  # the client stopped reading: that is the point
                return
            body = answers.loads if self.path == "/v1/loads" else b"{}"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield Endpoint("127.0.0.1", server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def answers() -> Answers:
    return Answers()


@pytest.fixture
def endpoint(answers: Answers) -> Iterator[Endpoint]:
    yield from serve(answers)


class Sink:
    def __init__(self) -> None:
        self.loads: list[LoadStats] = []

    def status(self) -> Status:
        return Status.READY

    def on_ready(self) -> None: ...
    def on_unavailable(self) -> None: ...
    def on_health_failed(self) -> None: ...
    def on_server_info(self, info: Mapping[str, Any] | None) -> None: ...
    def on_gpus(self, samples: tuple[GpuSample, ...]) -> None: ...
    def on_gpu_note(self, note: str) -> None: ...
    def on_startup_timeout(self) -> None: ...

    def on_load(self, load: LoadStats) -> None:
        self.loads.append(load)


def test_an_endless_answer_is_cut_off_with_a_connection_error(endpoint: Endpoint) -> None:
    with pytest.raises(ConnectionError, match="more than 32 MiB"):
        request(endpoint, "/endless", timeout=10.0)


def test_a_malformed_answer_does_not_stop_the_poller(endpoint: Endpoint, answers: Answers) -> None:
    sink = Sink()
    plan = PollPlan(
        endpoint, enable_metrics=False, metrics_interval=0.05, health_interval=None,
        gpu_interval=None,
    )  # fmt: skip
    poller = Poller(plan, sink, None)
    thread = poller.start()
    try:
        time.sleep(1.5)  # it meets the malformed answer several times
        assert thread.is_alive() and sink.loads == []
        answers.loads = b'{"loads": [{"num_running_reqs": 3, "num_waiting_reqs": 1}]}'
        assert wait_for(lambda: bool(sink.loads), 30)
        assert sink.loads[-1].running == 3 and sink.loads[-1].queued == 1
    finally:
        poller.stop()
        thread.join(5)
    assert not thread.is_alive()
