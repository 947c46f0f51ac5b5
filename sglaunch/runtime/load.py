"""Server load from /metrics (Prometheus) or /v1/loads, as one small record.

Latency percentiles and token rates are computed over a sliding window of scrapes
(the difference of two cumulative histograms), so they describe the last minute, not
the server's lifetime; the first scrape has nothing to subtract and says so.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from sglaunch.runtime.prometheus import Metrics, bucket_delta, quantiles

HISTOGRAMS = {
    "ttft": "sglang:time_to_first_token_seconds",
    "itl": "sglang:inter_token_latency_seconds",
    "e2e": "sglang:e2e_request_latency_seconds",
}
COUNTERS = {
    "generation": "sglang:generation_tokens_total",
    "prompt": "sglang:prompt_tokens_total",
    "requests": "sglang:num_requests_total",
}


@dataclass(frozen=True)
class Latency:
    """Percentiles in seconds; `window_s` None means since the server started."""

    p50: float | None
    p90: float | None
    p99: float | None
    count: int
    window_s: float | None


@dataclass(frozen=True)
class LoadStats:
    source: str  # "metrics", "loads" or "log"
    at: float
    running: int | None = None
    queued: int | None = None
    token_usage: float | None = None
    used_tokens: int | None = None
    max_total_tokens: int | None = None
    gen_throughput: float | None = None  # sglang's own gauge (tokens/s)
    generation_rate: float | None = None  # from the token counter, over the window
    prompt_rate: float | None = None
    cache_hit_rate: float | None = None
    requests_total: int | None = None
    ttft: Latency | None = None
    itl: Latency | None = None
    e2e: Latency | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _rank0(labels: dict[str, str]) -> bool:
    # per-batch gauges come from attention-TP rank 0 of each DP rank
    return labels.get("tp_rank", "0") == "0"


def _opt_int(value: float | None) -> int | None:
    return None if value is None or math.isnan(value) else int(value)


class MetricsWindow:
    """Turns successive /metrics scrapes into LoadStats with windowed rates."""

    def __init__(self, window_s: float = 60.0) -> None:
        self.window_s = window_s
        self._scrapes: deque[tuple[float, dict[str, dict[float, float]], dict[str, float]]] = (
            deque()
        )

    def update(self, metrics: Metrics, now: float) -> LoadStats:
        hists = {key: metrics.buckets(name) for key, name in HISTOGRAMS.items()}
        counters = {key: metrics.total(name) for key, name in COUNTERS.items()}
        counters_now = {k: v for k, v in counters.items() if v is not None}
        # keep the newest scrape older than the window as the base, so the window is
        # never empty when scrapes are further apart than the window is long
        while len(self._scrapes) >= 2 and now - self._scrapes[1][0] >= self.window_s:
            self._scrapes.popleft()
        base = self._scrapes[0] if self._scrapes else None
        self._scrapes.append((now, hists, counters_now))

        latencies: dict[str, Latency | None] = {}
        for key, buckets in hists.items():
            if not buckets:
                latencies[key] = None
                continue
            if base is None:
                delta, window = buckets, None
            else:
                delta, window = bucket_delta(buckets, base[1].get(key, {})), now - base[0]
            p50, p90, p99 = quantiles(delta)
            latencies[key] = Latency(p50, p90, p99, int(delta.get(math.inf, 0)), window)

        rates: dict[str, float | None] = {"generation": None, "prompt": None}
        if base is not None and now > base[0]:
            for key in rates:
                if key in counters_now and key in base[2]:
                    diff = counters_now[key] - base[2][key]
                    rates[key] = diff / (now - base[0]) if diff >= 0 else None

        usage = metrics.largest("sglang:token_usage")
        return LoadStats(
            source="metrics",
            at=now,
            running=_opt_int(metrics.total("sglang:num_running_reqs", _rank0)),
            queued=_opt_int(metrics.total("sglang:num_queue_reqs", _rank0)),
            token_usage=usage,
            used_tokens=_opt_int(metrics.total("sglang:num_used_tokens", _rank0)),
            max_total_tokens=_opt_int(metrics.total("sglang:max_total_num_tokens", _rank0)),
            gen_throughput=metrics.total("sglang:gen_throughput", _rank0),
            generation_rate=rates["generation"],
            prompt_rate=rates["prompt"],
            cache_hit_rate=metrics.largest("sglang:cache_hit_rate"),
            requests_total=_opt_int(counters.get("requests")),
            ttft=latencies["ttft"],
            itl=latencies["itl"],
            e2e=latencies["e2e"],
        )


def from_loads(payload: Mapping[str, Any], now: float) -> LoadStats | None:
    """LoadStats from a /v1/loads JSON body; None when it has no `loads` list."""
    loads = payload.get("loads")
    if not isinstance(loads, list) or not loads:
        return None

    def total(key: str) -> float | None:
        values = [x.get(key) for x in loads if isinstance(x.get(key), int | float)]
        return float(sum(values)) if values else None

    usages = [x["token_usage"] for x in loads if isinstance(x.get("token_usage"), int | float)]
    hits = [x["cache_hit_rate"] for x in loads if isinstance(x.get("cache_hit_rate"), int | float)]
    return LoadStats(
        source="loads",
        at=now,
        running=_opt_int(total("num_running_reqs")),
        queued=_opt_int(total("num_waiting_reqs")),
        token_usage=max(usages) if usages else None,
        used_tokens=_opt_int(total("num_used_tokens")),
        max_total_tokens=_opt_int(total("max_total_num_tokens")),
        gen_throughput=total("gen_throughput"),
        cache_hit_rate=sum(hits) / len(hits) if hits else None,
    )
