"""What following a busy server costs sglaunch: CPU (% of one core) and memory (RSS).

The stand-in server (tests/fake_sglang_server.py) writes FAKE_SGLANG_LOG_RATE decode
lines a second once ready, with --enable-metrics; the monitor reads /metrics once a
second, parses every line, keeps a bounded ring buffer and writes the full log to disk.
Budget: under 10% of one core, memory flat (the ring buffer is bounded).

    .venv/bin/python bench/monitor.py [--seconds 10] [--rate 2000] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
FAKE = ROOT / "tests" / "fake_sglang_server.py"
CPU_BUDGET_PCT = 10.0
RSS_BUDGET_MB = 5.0  # growth allowed over the run: allocator noise, not a leak


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)  # every thread of this process, no children
    return usage.ru_utime + usage.ru_stime


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rate", type=int, default=2000, help="log lines per second")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds before measuring")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    os.environ.setdefault("SGLAUNCH_HOME", tempfile.mkdtemp(prefix="sglaunch-bench-"))
    from sglaunch.runtime import LaunchSpec, Monitor

    spec = LaunchSpec(
        argv=(
            "--model-path",
            "meta-llama/Llama-3.1-8B-Instruct",
            "--port",
            str(_free_port()),
            "--enable-metrics",
        ),
        command_prefix=(sys.executable, str(FAKE)),
        env={"FAKE_SGLANG_TIME_SCALE": "0.02", "FAKE_SGLANG_LOG_RATE": str(args.rate)},
        profile="bench",
    )
    log_buffer = 2000
    monitor = Monitor(spec, metrics_interval=1.0, log_buffer=log_buffer, stop_grace=5.0)
    me = psutil.Process()
    monitor.start()
    try:
        if not monitor.wait_ready(60):
            print("the stand-in server did not become ready", file=sys.stderr)
            return 2
        time.sleep(args.warmup)  # the ring buffer fills up first
        rss0, cpu0, lines0, t0 = (
            me.memory_info().rss,
            _cpu_seconds(),
            monitor.snapshot().log_lines,
            time.monotonic(),
        )
        time.sleep(args.seconds)
        rss1, cpu1, lines1, t1 = (
            me.memory_info().rss,
            _cpu_seconds(),
            monitor.snapshot().log_lines,
            time.monotonic(),
        )
        ring = len(monitor.log_tail(10 * log_buffer))
        load = monitor.snapshot().load
        log_size = (monitor.run_dir / "server.log").stat().st_size if monitor.run_dir else 0
    finally:
        monitor.stop()
    elapsed = t1 - t0
    result = {
        "seconds": round(elapsed, 2),
        "lines_per_s": round((lines1 - lines0) / elapsed),
        "cpu_pct_of_one_core": round(100 * (cpu1 - cpu0) / elapsed, 2),
        "rss_start_mb": round(rss0 / 2**20, 1),
        "rss_end_mb": round(rss1 / 2**20, 1),
        "rss_growth_mb": round((rss1 - rss0) / 2**20, 2),
        "ring_buffer_lines": ring,
        "ring_buffer_limit": log_buffer,
        "server_log_mb": round(log_size / 2**20, 2),
        "metrics_source": load.source if load else None,
    }
    ok = (
        result["cpu_pct_of_one_core"] < CPU_BUDGET_PCT
        and result["rss_growth_mb"] < RSS_BUDGET_MB
        and ring <= log_buffer
    )
    result["within_budget"] = ok
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"log lines        {result['lines_per_s']}/s for {result['seconds']} s (metrics from {result['metrics_source']} at 1 Hz)"
        )
        print(
            f"CPU              {result['cpu_pct_of_one_core']}% of one core (budget {CPU_BUDGET_PCT:g}%)"
        )
        print(
            f"RSS              {result['rss_start_mb']} MB -> {result['rss_end_mb']} MB ({result['rss_growth_mb']:+} MB)"
        )
        print(
            f"ring buffer      {ring} lines (limit {log_buffer}); server.log {result['server_log_mb']} MB on disk"
        )
        print("within budget" if ok else "OVER BUDGET")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
