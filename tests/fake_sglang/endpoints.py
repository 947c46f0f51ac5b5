"""What each HTTP endpoint answers (the payloads), and the request handler."""

from __future__ import annotations

import json
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from fake_sglang.common import GRAPH_PHASES, SCENARIO, STATUS_TEXT, VERSION, _env_float, scaled
from fake_sglang.state import ServerState

if TYPE_CHECKING:
    from fake_sglang.server import FakeServer


class Endpoints:
    """The payload builders the handler calls; mixed into FakeServer."""

    def model_info(self) -> dict[str, Any]:
        return {
            "model_path": self.args.model_path,
            "served_model_name": self.served,
            "tokenizer_path": self.args.tokenizer_path or self.args.model_path,
            "is_generation": True,
            "preferred_sampling_params": None,
            "weight_version": "default",
            "load_format": self.args.load_format or "auto",
            "reasoning_parser": None,
            "tool_call_parser": None,
            "disaggregation_mode": "null",
            "has_image_understanding": False,
            "has_audio_understanding": False,
            "model_type": "llama",
            "architectures": ["LlamaForCausalLM"],
        }

    def server_info(self) -> dict[str, Any]:
        st = self.state
        info = self.resolved()
        memory = {
            "weight": 15.1,
            "kvcache": 53.4,
            "startup_available": 8.8,
            "token_capacity": self.max_tokens,
            "token_capacity_swa": None,
            "graph": {p: (0.8 if p == "decode" else 0.0) for p in GRAPH_PHASES},
        }
        info.update(
            {
                "launch_command": "sglang serve " + " ".join(self.argv),
                "status": "ready",
                "max_total_num_tokens": self.max_tokens,
                "max_req_input_len": self.context_len - 5,
                "hicache_object_layout": None,
                "kv_events": None,
                "startup_time": self.startup_time,
                "internal_states": [
                    {
                        **self.resolved(),
                        "world_size": self.args.tp_size or 1,
                        "startup_time": self.startup_time,
                        "effective_max_running_requests_per_dp": self.args.max_running_requests
                        or 2048,
                        "last_gen_throughput": st.gen_tps,
                        "memory_usage": memory,
                        "disaggregation_mode": "null",
                        "decode_cuda_graph_bs": [1, 2, 4, 8, 16, 32],
                        "decode_cuda_graph_memory_gb": 0.8,
                    }
                ],
                "version": VERSION,
                "frontend": "python",
            }
        )
        return info

    def loads(self) -> dict[str, Any]:
        st = self.state
        used = int(st.token_usage * self.max_tokens)
        metrics_on = bool(self.args.enable_metrics)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + "Z"
        return {
            "timestamp": stamp,
            "version": VERSION,
            "accelerator": "cuda",
            "num_accelerators": self.args.tp_size or 1,
            "loads": [
                {
                    "timestamp": stamp,
                    "dp_rank": 0,
                    "num_running_reqs": st.running,
                    "num_waiting_reqs": st.queue,
                    "num_waiting_uncached_tokens": 0,
                    "num_used_tokens": used,
                    "num_total_tokens": self.max_tokens,
                    "num_active_tokens": used,
                    "num_prealloc_ready_tokens": 0,
                    "max_total_num_tokens": self.max_tokens,
                    "max_running_requests": self.args.max_running_requests or 2048,
                    "token_usage": round(st.token_usage, 4),
                    "gen_throughput": st.gen_tps if metrics_on else 0.0,
                    "cache_hit_rate": 0.0,
                    "utilization": 0.0,
                    "total_prefill_uncached_tokens": 0,
                    "total_prefill_busy_us": 0,
                    "decode_moments": None,
                    "memory": {
                        "weight_gb": 15.1,
                        "kv_cache_gb": 53.4,
                        "graph_gb": 0.8,
                        "token_capacity": self.max_tokens,
                    },
                    "disaggregation": {},
                    "queues": {
                        "waiting": st.queue,
                        "grammar": 0,
                        "paused": 0,
                        "retracted": 0,
                        "prealloc_ready": 0,
                    },
                }
            ],
        }

    def generate(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        st = self.state
        if SCENARIO == "warmup_fail" and not st.first_generate:
            return 500, {
                "object": "error",
                "message": "CUDA error: device-side assert triggered",
                "type": "InternalServerError",
                "param": None,
                "code": 500,
            }
        text = str(body.get("text", ""))
        params = body.get("sampling_params") or {}
        max_new = int(params.get("max_new_tokens", 128))
        prompt = max(len(text.split()) + 1, 1)
        with st.lock:
            st.inflight += 1
        try:
            self.prefill_line(new_seq=1, new_tokens=prompt)
            time.sleep(scaled(0.2))
            self.metrics.request(prompt, max_new, 0.05, 0.012, 0.001)
            self.metrics.set_batch(
                st.running, st.queue, int(st.token_usage * self.max_tokens), st.gen_tps, 0.0, False
            )
        finally:
            with st.lock:
                st.inflight -= 1
        st.first_generate = True
        out = {
            "text": " Paris" + " ." * max(max_new - 1, 0),
            "output_ids": list(range(max_new)),
            "meta_info": {
                "id": uuid.uuid4().hex,
                "finish_reason": {"type": "length", "length": max_new},
                "prompt_tokens": prompt,
                "weight_version": "default",
                "num_retractions": 0,
                "reasoning_tokens": 0,
                "completion_tokens": max_new,
                "cached_tokens": 0,
                "e2e_latency": 0.05 + 0.012 * max_new,
            },
        }
        return 200, out

    def health(self) -> int:
        st = self.state
        if st.gracefully_exit:
            self.log.warning("Health check request received during shutdown. Returning 503.")
            return 503
        if st.status == ServerState.STARTING:
            return 503
        if SCENARIO == "health_timeout":
            tic = time.strftime("%H:%M:%S")
            timeout = int(_env_float("SGLANG_HEALTH_CHECK_TIMEOUT", 20))
            time.sleep(scaled(timeout))
            self.log.error(
                f"Health check failed. Server couldn't get a response from detokenizer for last {timeout} seconds. "
                f"tic start time: {tic}. last_heartbeat time: {tic}"
            )
            st.status = ServerState.UNHEALTHY
            return 503
        time.sleep(scaled(1.0))
        if st.running == 0 and st.queue == 0:
            self.prefill_line(new_seq=1, new_tokens=1)
        if st.status == ServerState.UNHEALTHY:
            st.status = ServerState.UP
        return 200


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


ANY = ("GET", "POST", "PUT")
# path -> (handler method, methods it answers); anything else is a 404, as FastAPI's
ROUTES: dict[str, tuple[str, tuple[str, ...]]] = {
    "/health": ("r_health", ANY),
    "/health_generate": ("r_health", ANY),
    "/ready": ("r_ready", ANY),
    "/model_info": ("r_model_info", ANY),
    "/get_model_info": ("r_model_info", ANY),
    "/server_info": ("r_server_info", ANY),
    "/get_server_info": ("r_server_info", ANY),
    "/v1/models": ("r_models", ANY),
    "/v1/loads": ("r_loads", ANY),
    "/metrics": ("r_metrics", ANY),
    "/flush_cache": ("r_flush_cache", ("GET", "POST")),
    "/freeze_gc": ("r_freeze_gc", ("GET", "POST")),
    "/generate": ("r_generate", ("POST", "PUT")),
}


OPEN_PATHS = ("/health", "/ready", "/metrics")


class _Handler(BaseHTTPRequestHandler):
    fake: FakeServer  # set per server by _handler_for
    protocol_version = "HTTP/1.1"
    server_version = "uvicorn"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        pass  # uvicorn-style access lines are written in _send

    def _send(
        self,
        code: int,
        body: bytes | str | dict[str, Any] | None,
        ctype: str = "application/json",
    ) -> None:
        if isinstance(body, dict):
            payload = json.dumps(body).encode()
        elif isinstance(body, str):
            payload = body.encode()
        else:
            payload = body or b""
        self.send_response_only(code)
        self.send_header("date", self.date_time_string())
        self.send_header("server", "uvicorn")
        self.send_header("content-length", str(len(payload)))
        if payload:
            self.send_header("content-type", ctype)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)
        path = self.path.split("?", 1)[0]
        self.fake.metrics.count_http(path, self.command, code)
        if not (self.fake.access_exclude and path.startswith(self.fake.access_exclude)):
            host, port = self.client_address[:2]
            self.fake.log.uvicorn(
                f'{host}:{port} - "{self.command} {self.path} HTTP/1.1" {code} {STATUS_TEXT.get(code, "")}'.rstrip(),
                fd=1,
            )

    def _authorized(self, path: str) -> bool:
        key = self.fake.args.api_key
        if not key or path.startswith(OPEN_PATHS):
            return True
        return self.headers.get("Authorization", "") == f"Bearer {key}"

    def _body(self) -> dict[str, Any]:
        n = int(self.headers.get("Content-Length") or 0)
        if not n:
            return {}
        try:
            data = json.loads(self.rfile.read(n) or b"{}")
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def do_GET(self) -> None:
        self._route()

    def do_POST(self) -> None:
        self._route()

    def do_PUT(self) -> None:
        self._route()

    def _route(self) -> None:
        path = self.path.split("?", 1)[0]
        self.fake.metrics.http_active(path, self.command, 1)
        try:
            self._dispatch(path)
        finally:
            self.fake.metrics.http_active(path, self.command, -1)

    def _dispatch(self, path: str) -> None:
        body = self._body() if self.command in ("POST", "PUT") else {}
        if not self._authorized(path):
            self._send(401, {"error": "Unauthorized"})
            return
        route = ROUTES.get(path)
        if route is None or self.command not in route[1]:
            self._send(404, {"detail": "Not Found"})
            return
        getattr(self, route[0])(path, body)

    # --- one method per endpoint (ROUTES maps paths to them) ---

    def r_health(self, path: str, body: dict[str, Any]) -> None:
        self._send(self.fake.health(), b"")

    def r_ready(self, path: str, body: dict[str, Any]) -> None:
        st = self.fake.state
        ok = st.status == ServerState.UP and not st.gracefully_exit
        if st.gracefully_exit:
            self.fake.log.warning("Health check request received during shutdown. Returning 503.")
        self._send(200 if ok else 503, b"")

    def _deprecated(self, path: str, new: str) -> None:
        self.fake.log.warning(
            f"Endpoint '{path}' is deprecated and will be removed in a future version. "
            f"Please use '{new}' instead."
        )

    def r_model_info(self, path: str, body: dict[str, Any]) -> None:
        if path == "/get_model_info":
            self._deprecated(path, "/model_info")
        self._send(200, self.fake.model_info())

    def r_server_info(self, path: str, body: dict[str, Any]) -> None:
        if path == "/get_server_info":
            self._deprecated(path, "/server_info")
        self._send(200, self.fake.server_info())

    def r_models(self, path: str, body: dict[str, Any]) -> None:
        card = {"id": self.fake.served, "object": "model", "created": int(self.fake.start_time),
                "owned_by": "sglang", "root": self.fake.served, "parent": None,
                "max_model_len": self.fake.context_len}  # fmt: skip
        self._send(200, {"object": "list", "data": [card]})

    def r_loads(self, path: str, body: dict[str, Any]) -> None:
        self._send(200, self.fake.loads())

    def r_metrics(self, path: str, body: dict[str, Any]) -> None:
        if not self.fake.args.enable_metrics:
            self._send(404, {"detail": "Not Found"})
            return
        self._send(
            200,
            self.fake.metrics.render(self.fake.startup_time),
            "text/plain; version=0.0.4; charset=utf-8",
        )

    def r_flush_cache(self, path: str, body: dict[str, Any]) -> None:
        st = self.fake.state
        if st.running or st.queue:
            self.fake.sched_log(
                f"Cache not flushed because there are pending requests. #queue-req: {st.queue}, "
                f"#running-req: {st.running}"
            )
            self._send(400, "Flush cache failed.\n", "text/plain; charset=utf-8")
            return
        self.fake.sched_log("Cache flushed successfully!")
        self._send(
            200,
            "Cache flushed.\nPlease check backend logs for more details. (When there are running or "
            "waiting requests, the operation will not be performed.)\n",
            "text/plain; charset=utf-8",
        )

    def r_freeze_gc(self, path: str, body: dict[str, Any]) -> None:
        self._send(200, "Garbage collection frozen.\n", "text/plain; charset=utf-8")

    def r_generate(self, path: str, body: dict[str, Any]) -> None:
        code, payload = self.fake.generate(body)
        self._send(code, payload)


def _handler_for(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    return type("Handler", (_Handler,), {"fake": server})
