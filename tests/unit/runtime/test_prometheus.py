"""Prometheus text parsing, histogram quantiles, and windowed load figures."""

from __future__ import annotations

import math

import pytest

from sglaunch.runtime.load import MetricsWindow, from_loads
from sglaunch.runtime.prometheus import bucket_delta, histogram_quantile, parse_prometheus

LABELS = 'engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0"'


def _hist(name: str, counts: dict[str, float], extra: str = "") -> str:
    lines = [f"# TYPE {name} histogram"]
    for le, c in counts.items():
        lines.append(f'{name}_bucket{{{LABELS}{extra},le="{le}"}} {c}')
    lines.append(f"{name}_count{{{LABELS}{extra}}} {counts['+Inf']}")
    lines.append(f"{name}_sum{{{LABELS}{extra}}} 1.0")
    return "\n".join(lines)


def _scrape(ttft: dict[str, float], generated: float, running: float = 2.0) -> str:
    return "\n".join(
        [
            "# HELP sglang:num_running_reqs The number of running requests.",
            "# TYPE sglang:num_running_reqs gauge",
            f'sglang:num_running_reqs{{{LABELS},tp_rank="0"}} {running}',
            f'sglang:num_running_reqs{{{LABELS},tp_rank="1"}} 99.0',  # only rank 0 counts
            f'sglang:token_usage{{{LABELS},tp_rank="0"}} 0.42',
            f'sglang:fwd_occupancy{{{LABELS},tp_rank="0"}} NaN',
            f'sglang:generation_tokens_total{{engine_type="unified",is_streaming="false",model_name="m"}} {generated}',
            _hist("sglang:time_to_first_token_seconds", ttft, ',is_streaming="false"'),
        ]
    )


def test_parse_labels_escapes_and_special_values() -> None:
    text = (
        '# TYPE x gauge\nx{a="1",b="q\\"uote\\\\",c="line\\nbreak"} 3.5\n'
        "y 1e3 1700000000000\nz +Inf\nbroken{ 1\nw NaN\n"
    )
    m = parse_prometheus(text)
    ((labels, value),) = m.series("x")
    assert dict(labels) == {"a": "1", "b": 'q"uote\\', "c": "line\nbreak"} and value == 3.5
    assert m.series("y")[0][1] == 1000.0 and m.series("z")[0][1] == math.inf
    assert math.isnan(m.series("w")[0][1]) and m.total("w") is None
    assert m.types["x"] == "gauge" and not m.series("broken")


def test_histogram_quantile_interpolates_like_prometheus() -> None:
    buckets = {0.1: 0.0, 0.2: 10.0, 0.4: 20.0, math.inf: 20.0}
    assert histogram_quantile(0.5, buckets) == pytest.approx(0.2)
    assert histogram_quantile(0.9, buckets) == pytest.approx(0.36)
    assert histogram_quantile(0.25, buckets) == pytest.approx(0.15)
    # all in the first bucket: interpolated from 0
    assert histogram_quantile(0.5, {1.0: 4.0, math.inf: 4.0}) == pytest.approx(0.5)
    # a rank in +Inf gives the largest finite bound
    assert histogram_quantile(0.99, {1.0: 1.0, 2.0: 1.0, math.inf: 10.0}) == 2.0
    assert histogram_quantile(0.5, {1.0: 0.0, math.inf: 0.0}) is None
    assert histogram_quantile(0.5, {}) is None
    assert histogram_quantile(0.5, {1.0: 3.0}) is None  # no +Inf: not a histogram


def test_bucket_delta_and_counter_reset() -> None:
    before = {0.1: 1.0, math.inf: 2.0}
    assert bucket_delta({0.1: 3.0, math.inf: 5.0}, before) == {0.1: 2.0, math.inf: 3.0}
    assert bucket_delta({0.1: 0.0, math.inf: 1.0}, before) == {0.1: 0.0, math.inf: 1.0}


def test_buckets_sum_over_label_sets() -> None:
    text = "\n".join(
        [
            _hist("h", {"1.0": 1, "+Inf": 1}, ',is_streaming="false"'),
            _hist("h", {"1.0": 2, "+Inf": 3}, ',is_streaming="true"'),
        ]
    )
    assert parse_prometheus(text).buckets("h") == {1.0: 3.0, math.inf: 4.0}


def test_window_reports_recent_latency_not_lifetime() -> None:
    window = MetricsWindow(window_s=60)
    # lifetime: 100 slow requests (all between 2 and 4 s)
    first = window.update(
        parse_prometheus(_scrape({"0.2": 0, "2": 0, "4": 100, "+Inf": 100}, 1000)), now=100.0
    )
    assert first.ttft is not None and first.ttft.window_s is None and first.ttft.count == 100
    assert 2 <= first.ttft.p50 <= 4
    assert first.running == 2 and first.token_usage == 0.42 and first.generation_rate is None
    # then 10 fast ones (under 0.2 s): the window sees only those
    fast = {"0.2": 10, "2": 10, "4": 110, "+Inf": 110}
    second = window.update(parse_prometheus(_scrape(fast, 3000)), now=110.0)
    assert second.ttft.count == 10 and second.ttft.window_s == 10.0
    assert second.ttft.p99 <= 0.2
    assert second.generation_rate == pytest.approx(200.0)  # 2000 tokens in 10 s
    # ten seconds later they are still within the last minute
    third = window.update(parse_prometheus(_scrape(fast, 3000)), now=120.0)
    assert third.ttft.count == 10 and third.ttft.window_s == 20.0
    # a minute on, the base moves past them: only the newest two remain
    later = {"0.2": 12, "2": 12, "4": 110, "+Inf": 112}
    fourth = window.update(parse_prometheus(_scrape(later, 3000)), now=175.0)
    assert fourth.ttft.count == 2 and fourth.ttft.window_s == pytest.approx(65.0)
    # and when nothing new arrives for a minute: no percentiles rather than stale ones
    idle = window.update(parse_prometheus(_scrape(later, 3000)), now=240.0)
    assert idle.ttft.count == 0 and idle.ttft.p50 is None and idle.generation_rate == 0.0


def test_v1_loads_payload() -> None:
    payload = {
        "loads": [
            {"num_running_reqs": 3, "num_waiting_reqs": 1, "num_used_tokens": 100, "max_total_num_tokens": 1000,
             "token_usage": 0.1, "gen_throughput": 50.0, "cache_hit_rate": 0.5},
            {"num_running_reqs": 2, "num_waiting_reqs": 0, "num_used_tokens": 300, "max_total_num_tokens": 1000,
             "token_usage": 0.3, "gen_throughput": 20.0, "cache_hit_rate": 0.1},
        ]
    }  # fmt: skip
    load = from_loads(payload, now=1.0)
    assert load is not None and load.source == "loads"
    assert (load.running, load.queued, load.used_tokens, load.max_total_tokens) == (5, 1, 400, 2000)
    assert load.token_usage == 0.3 and load.gen_throughput == 70.0
    assert load.cache_hit_rate == pytest.approx(0.3)
    assert from_loads({"loads": []}, now=1.0) is None
