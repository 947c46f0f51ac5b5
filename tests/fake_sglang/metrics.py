"""Prometheus metrics in sglang's names and labels, rendered as text format 0.0.4."""

from __future__ import annotations

import math
import threading
import time
from typing import Any, ClassVar

from fake_sglang.common import (
    E2E_BUCKETS,
    GRAPH_PHASES,
    ITL_BUCKETS,
    QUEUE_BUCKETS,
    TTFT_BUCKETS,
    scaled,
)

# --- metrics -------------------------------------------------------------------------


def _fmt(v: float) -> str:
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    return repr(float(v))


def _labels(d: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{d[k]}"' for k in sorted(d)) + "}"


class Histogram:
    def __init__(
        self, name: str, help_text: str, buckets: tuple[float, ...], labels: dict[str, str]
    ) -> None:
        self.name, self.help, self.buckets, self.labels = name, help_text, buckets, labels
        self.counts = [0] * len(buckets)
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.count += 1
        self.sum += value
        for i, b in enumerate(self.buckets):
            if value <= b:
                self.counts[i] += 1

    def render(self) -> list[str]:
        out = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"]
        for b, c in zip(self.buckets, self.counts, strict=True):
            lab = dict(self.labels)
            lab_text = _labels(lab)[:-1] + f',le="{float(b)}"}}'
            out.append(f"{self.name}_bucket{lab_text} {float(c)}")
        out.append(f'{self.name}_bucket{_labels(self.labels)[:-1]},le="+Inf"}} {float(self.count)}')
        out.append(f"{self.name}_count{_labels(self.labels)} {float(self.count)}")
        out.append(f"{self.name}_sum{_labels(self.labels)} {self.sum!r}")
        return out


class Metrics:
    """The Prometheus text sglang's multiprocess collector serves, for one unified engine."""

    GAUGE_HELP: ClassVar[dict[str, str]] = {
        "num_running_reqs": "The number of running requests.",
        "num_queue_reqs": "The number of requests in the waiting queue.",
        "num_grammar_queue_reqs": "The number of requests in the grammar waiting queue.",
        "gen_throughput": "The generation throughput (token/s).",
        "cache_hit_rate": "The prefix cache hit rate.",
        "decode_sum_seq_lens": "The sum of all sequence lengths in decode.",
        "token_usage": "The token usage.",
        "full_token_usage": "The token usage for full attention layers.",
        "num_used_tokens": "The number of used tokens.",
        "kv_available_tokens": "Number of free token slots in the KV cache pool.",
        "kv_evictable_tokens": "Number of evictable (radix-cached) token slots in the KV cache pool.",
        "kv_used_tokens": "Number of actively used token slots in the KV cache pool.",
        "utilization": "The utilization.",
        "fwd_occupancy": "Forward pass GPU occupancy percentage.",
        "new_token_ratio": "The new token ratio.",
        "is_cuda_graph": "Whether the batch is using CUDA graph.",
    }
    CONST_HELP: ClassVar[dict[str, str]] = {
        "max_total_num_tokens": "Maximum total number of tokens in the KV cache pool.",
        "weight_memory_usage_gb": "Memory used by model weights in GB.",
        "kv_cache_memory_usage_gb": "Memory used by the KV cache pools in GB.",
        "page_size": "KV cache page size in tokens.",
        "num_pages": "Number of KV cache pages.",
        "context_len": "Maximum context length.",
        "startup_available_gpu_memory_gb": "Available GPU memory in GB at startup.",
    }

    def __init__(self, served: str, tp_size: int, max_tokens: int, context_len: int) -> None:
        self.lock = threading.Lock()
        self.served = served
        self.tp_size = tp_size
        self.max_tokens = max_tokens
        self.context_len = context_len
        self.gauges: dict[str, float] | None = None  # per-batch, after the first prefill
        self.sched_pids: list[int] = []
        tok = {"engine_type": "unified", "is_streaming": "false", "model_name": served}
        self.counters = {
            "prompt_tokens_total": 0.0,
            "generation_tokens_total": 0.0,
            "num_requests_total": 0.0,
        }
        self.tok_labels = tok
        base = {"engine_type": "unified", "model_name": served}
        self.hists = {
            "ttft": Histogram("sglang:time_to_first_token_seconds",
                              "Histogram of time to first token in seconds.", TTFT_BUCKETS, tok),
            "itl": Histogram("sglang:inter_token_latency_seconds",
                             "Histogram of inter-token latency in seconds.", ITL_BUCKETS, base),
            "e2e": Histogram("sglang:e2e_request_latency_seconds",
                             "Histogram of End-to-end request latency in seconds", E2E_BUCKETS, tok),
            "tpot": Histogram("sglang:request_time_per_output_token_seconds",
                              "Per-request TPOT in seconds: (finished_time - first_token_time) / (completion_tokens - 1).",
                              ITL_BUCKETS, tok),
            "queue": Histogram("sglang:queue_time_seconds", "Histogram of queueing time in seconds.",
                               QUEUE_BUCKETS, self.sched_labels(0)),
        }  # fmt: skip
        self.http: dict[tuple[str, str], int] = {}
        self.responses: dict[tuple[str, str, str], int] = {}
        self.realtime = {"prefill_compute": 0.0, "prefill_cache": 0.0, "decode": 0.0}
        self.graph_passes = dict.fromkeys(
            ("decode_cuda_graph", "decode_none", "prefill_cuda_graph", "prefill_none"), 0.0
        )
        self.active: dict[tuple[str, str], int] = {}
        self.last_decode = 0.0

    def sched_labels(self, rank: int) -> dict[str, str]:
        return {
            "engine_type": "unified",
            "model_name": self.served,
            "moe_ep_rank": "0",
            "pp_rank": "0",
            "tp_rank": str(rank),
        }

    def set_batch(
        self, running: int, queue: int, used: int, gen_tps: float, hit_rate: float, graph: bool
    ) -> None:
        with self.lock:
            usage = used / self.max_tokens if self.max_tokens else 0.0
            if gen_tps > 0:
                self.last_decode = time.monotonic()
            self.graph_passes["decode_cuda_graph" if graph else "prefill_none"] += 1
            self.gauges = {
                "num_running_reqs": float(running),
                "num_queue_reqs": float(queue),
                "num_grammar_queue_reqs": 0.0,
                "gen_throughput": float(gen_tps),
                "cache_hit_rate": float(hit_rate),
                "decode_sum_seq_lens": float(used),
                "token_usage": round(usage, 2),
                "full_token_usage": usage,
                "num_used_tokens": float(used),
                "kv_available_tokens": float(self.max_tokens - used),
                "kv_evictable_tokens": 0.0,
                "kv_used_tokens": float(used),
                "utilization": 0.0,
                "fwd_occupancy": float("nan"),
                "new_token_ratio": 0.7,
                "is_cuda_graph": 1.0 if graph else 0.0,
            }

    def request(self, prompt: int, generated: int, ttft: float, itl: float, queue: float) -> None:
        with self.lock:
            self.counters["prompt_tokens_total"] += prompt
            self.counters["generation_tokens_total"] += generated
            self.counters["num_requests_total"] += 1
            self.realtime["prefill_compute"] += prompt
            self.realtime["decode"] += generated
            self.hists["ttft"].observe(ttft)
            for _ in range(max(generated - 1, 0)):
                self.hists["itl"].observe(itl)
            self.hists["tpot"].observe(itl)
            self.hists["e2e"].observe(ttft + itl * max(generated - 1, 0))
            self.hists["queue"].observe(queue)

    def http_active(self, endpoint: str, method: str, delta: int) -> None:
        with self.lock:
            self.active[(endpoint, method)] = self.active.get((endpoint, method), 0) + delta

    def count_http(self, endpoint: str, method: str, status: int) -> None:
        with self.lock:
            self.http[(endpoint, method)] = self.http.get((endpoint, method), 0) + 1
            key = (endpoint, method, str(status))
            self.responses[key] = self.responses.get(key, 0) + 1

    def render(self, startup: dict[str, Any]) -> str:
        with self.lock:
            out: list[str] = []
            for name, help_text in self.CONST_HELP.items():
                out += [f"# HELP sglang:{name} {help_text}", f"# TYPE sglang:{name} gauge"]
                value = {
                    "max_total_num_tokens": self.max_tokens,
                    "weight_memory_usage_gb": 15.1,
                    "kv_cache_memory_usage_gb": 53.4,
                    "page_size": 1.0,
                    "num_pages": self.max_tokens,
                    "context_len": self.context_len,
                    "startup_available_gpu_memory_gb": 8.8,
                }[name]
                for rank in range(self.tp_size):
                    out.append(f"sglang:{name}{_labels(self.sched_labels(rank))} {_fmt(value)}")
            out += ["# HELP sglang:graph_memory_usage_gb Memory used by captured device graphs in GB.",
                    "# TYPE sglang:graph_memory_usage_gb gauge"]  # fmt: skip
            for rank in range(self.tp_size):
                for phase in GRAPH_PHASES:
                    lab = {**self.sched_labels(rank), "phase": phase}
                    out.append(
                        f"sglang:graph_memory_usage_gb{_labels(lab)} {_fmt(0.8 if phase == 'decode' else 0.0)}"
                    )
            if self.gauges is not None:
                # sglang decays gen_throughput to 0 after 30 s without a decode batch
                if time.monotonic() - self.last_decode > scaled(30.0):
                    self.gauges["gen_throughput"] = 0.0
                for name, value in self.gauges.items():
                    out += [
                        f"# HELP sglang:{name} {self.GAUGE_HELP[name]}",
                        f"# TYPE sglang:{name} gauge",
                    ]
                    out.append(f"sglang:{name}{_labels(self.sched_labels(0))} {_fmt(value)}")
            for name, help_text in (("num_retracted_reqs", "The number of retracted requests."),
                                    ("num_paused_reqs", "The number of paused requests by async weight sync.")):  # fmt: skip
                out += [f"# HELP sglang:{name} {help_text}", f"# TYPE sglang:{name} gauge"]
                for rank, pid in enumerate(self.sched_pids):
                    lab = {**self.sched_labels(rank), "pid": str(pid)}
                    out.append(f"sglang:{name}{_labels(lab)} 0.0")
            counter_help = {
                "prompt_tokens_total": "Number of prefill tokens processed.",
                "generation_tokens_total": "Number of generation tokens processed.",
                "num_requests_total": "Number of requests processed.",
            }
            for name, value in self.counters.items():
                out += [
                    f"# HELP sglang:{name} {counter_help[name]}",
                    f"# TYPE sglang:{name} counter",
                ]
                out.append(f"sglang:{name}{_labels(self.tok_labels)} {_fmt(value)}")
            out += ["# HELP sglang:realtime_tokens_total Total number of tokens processed (updated on each log "
                    "interval). mode: prefill_compute, prefill_cache, decode.",
                    "# TYPE sglang:realtime_tokens_total counter"]  # fmt: skip
            for mode, value in self.realtime.items():
                out.append(
                    f"sglang:realtime_tokens_total{_labels({**self.sched_labels(0), 'mode': mode})} {_fmt(value)}"
                )
            out += ["# HELP sglang:cuda_graph_passes_total Total number of forward passes categorized by CUDA graph.",
                    "# TYPE sglang:cuda_graph_passes_total counter"]  # fmt: skip
            for mode, value in self.graph_passes.items():
                lab = {**self.sched_labels(0), "mode": mode}
                out.append(f"sglang:cuda_graph_passes_total{_labels(lab)} {_fmt(value)}")
            for hist in self.hists.values():
                out += hist.render()
            out += ["# HELP sglang:startup_time_seconds Engine startup duration by phase in seconds.",
                    "# TYPE sglang:startup_time_seconds gauge"]  # fmt: skip
            tok_base = {"engine_type": "unified", "model_name": self.served}
            for phase in ("load_weight", "kv_cache_allocation", "scheduler_e2e", "tokenizer_e2e"):
                out.append(
                    f"sglang:startup_time_seconds{_labels({**tok_base, 'phase': phase})} {_fmt(startup[phase])}"
                )
            out += ["# HELP sglang:startup_cuda_graph_time_seconds CUDA graph capture duration by phase in seconds.",
                    "# TYPE sglang:startup_cuda_graph_time_seconds gauge"]  # fmt: skip
            for phase in GRAPH_PHASES:
                value = startup["cuda_graph"][phase]
                out.append(
                    f"sglang:startup_cuda_graph_time_seconds{_labels({**tok_base, 'phase': phase})} {_fmt(value)}"
                )
            out += ["# HELP sglang:http_requests_total Total number of HTTP requests by endpoint and method",
                    "# TYPE sglang:http_requests_total counter"]  # fmt: skip
            for (endpoint, method), n in sorted(self.http.items()):
                out.append(
                    f"sglang:http_requests_total{_labels({'endpoint': endpoint, 'method': method})} {float(n)}"
                )
            out += ["# HELP sglang:http_responses_total Total number of HTTP responses by endpoint and status code",
                    "# TYPE sglang:http_responses_total counter"]  # fmt: skip
            for (endpoint, method, code), n in sorted(self.responses.items()):
                lab = {"endpoint": endpoint, "method": method, "status_code": code}
                out.append(f"sglang:http_responses_total{_labels(lab)} {float(n)}")
            out += ["# HELP sglang:http_requests_active Number of currently active HTTP requests",
                    "# TYPE sglang:http_requests_active gauge"]  # fmt: skip
            for (endpoint, method), n in sorted(self.active.items()):
                lab = {"endpoint": endpoint, "method": method}
                out.append(f"sglang:http_requests_active{_labels(lab)} {float(n)}")
            return "\n".join(out) + "\n"
