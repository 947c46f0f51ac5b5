"""What the oracle costs, against what sglang itself takes to reject a launch line.

    SGLAUNCH_SGLANG_PYTHON=.venv-sglang/bin/python python bench/oracle.py [--queries 40]

Prints: the worker's cold start; warm query latency (median, p95) as the
client sees it; the worker's and one resolving child's memory (RSS, and PSS,
which splits the copy-on-write pages they share); the time
`python -m sglang.launch_server` takes to reject the same bad MiniCPM line in
the same environment (median of 3, `--device cpu` so that it gets as far as
the MiniCPM rule on a machine without a GPU); and the ratio. Then
`sglaunch check` as a whole process (bench/check_process.py): with the shared
oracle service warm and cold, and with a worker of its own
(`--no-oracle-service`), against the same `launch_server` time. Budgets: warm
answer under 100 ms median; a check process with a warm service under 0.2 s. Also
printed: what the worker spends around sglang's own resolution (handing the request
to its child, the answer back): the child is forked before the request arrives, and
builds sglang's argument parser while it waits (how many answers used it is printed).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from sglaunch.facts.model import model_path_for_sglang
from sglaunch.facts.presets import parse_gpu_spec
from sglaunch.oracle import Oracle

ROOT = Path(__file__).resolve().parents[1]
BUDGET_MS = 100.0
# sglang only imports on a CPU-only box through sglaunch's shims
LAUNCH = (
    "import importlib.util, runpy, sys\n"
    "spec = importlib.util.spec_from_file_location('_sglaunch_sglang_import', {shim!r})\n"
    "m = importlib.util.module_from_spec(spec); sys.modules[spec.name] = m\n"
    "spec.loader.exec_module(m); m.prepare()\n"
    "sys.argv = ['sglang.launch_server', *sys.argv[1:]]\n"
    "runpy.run_module('sglang.launch_server', run_name='__main__', alter_sys=True)\n"
)


def memory_kib(pid: int) -> tuple[int, int]:
    """(RSS, PSS) in KiB from /proc."""
    rss = pss = 0
    with open(f"/proc/{pid}/smaps_rollup", encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("Rss:"):
                rss = int(line.split()[1])
            elif line.startswith("Pss:"):
                pss = int(line.split()[1])
    return rss, pss


def children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(") ", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(entry.name))
    return out


def sglang_rejects(python: str, argv: list[str], runs: int) -> tuple[float, str]:
    shim = str(ROOT / "sglaunch" / "in_sglang" / "sglang_import.py")
    times, last = [], ""
    for _ in range(runs):
        t0 = time.perf_counter()
        done = subprocess.run(
            [python, "-c", LAUNCH.format(shim=shim), *argv],
            capture_output=True,
            text=True,
            timeout=600,
        )
        times.append(time.perf_counter() - t0)
        lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
        last = lines[-1] if lines else f"exit {done.returncode}"
    return statistics.median(times), last


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--sglang-python", default=None)
    ap.add_argument("--launch-runs", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON too")
    ap.add_argument(
        "--check-runs", type=int, default=10, help="warm `sglaunch check` processes to time"
    )
    args = ap.parse_args()

    h100x2, b200 = parse_gpu_spec("H100x2"), parse_gpu_spec("B200x1")
    # the bundled MiniCPM SALA example: a MiniCPM architecture sglang loads without remote code
    with contextlib.nullcontext(model_path_for_sglang("example:minicpm-sala")) as tmp:
        bad = ["--model-path", tmp, "--attn-dp-size", "2", "--tp-size", "2"]
        lines = [
            (bad, h100x2),
            (["--model-path", tmp], b200),
            (["--model-path", tmp, "--tp-size", "2"], h100x2),
            (["--model-path", tmp, "--tp-size", "two"], b200),
        ]
        t0 = time.perf_counter()
        oracle = Oracle(args.sglang_python, timeout=60.0)
        status = oracle.start()
        cold = time.perf_counter() - t0
        if not status.available:
            print(f"bench/oracle.py: the oracle is unavailable: {status.reason}", file=sys.stderr)
            return 2
        try:
            latencies, around, prebuilt = [], [], 0
            for i in range(args.queries):
                argv, gpu = lines[i % len(lines)]
                t1 = time.perf_counter()
                answer = oracle.resolve(argv, {}, gpu)
                latencies.append((time.perf_counter() - t1) * 1000)
                timing = answer.timing
                if "child_s" in timing and "total_s" in timing:
                    around.append((timing["child_s"] - timing["total_s"]) * 1000)
                # sglang's parser built by the waiting child before the request came
                prebuilt += "parser_prebuilt_s" in timing
                if not answer.answered:
                    print(f"bench/oracle.py: query failed: {answer.fault}", file=sys.stderr)
                    return 2
            worker = oracle.worker_pid
            assert worker is not None
            w_rss, w_pss = memory_kib(worker)
            hang = threading.Thread(
                target=oracle.resolve, args=(bad, {"SGLAUNCH_ORACLE_TEST_HANG": "1"}, h100x2)
            )
            hang.start()
            time.sleep(1.5)
            kids = children(worker)
            # the hanging child, not the spare waiting beside it: the one that resolved more
            c_rss, c_pss = max((memory_kib(k) for k in kids), default=(0, 0))
        finally:
            oracle.close()
        hang.join(timeout=60)
        python = status.python or ""
        reject_s, reject_msg = sglang_rejects(python, [*bad, "--device", "cpu"], args.launch_runs)

    from check_process import BUDGET_S, time_check_processes

    checks = time_check_processes(python, args.check_runs)
    lat = sorted(latencies)
    median = statistics.median(lat)
    p95 = lat[min(len(lat) - 1, round(0.95 * (len(lat) - 1)))]
    numbers = {
        "sglang_version": status.sglang_version,
        "cold_start_s": round(cold, 2),
        "import_s": status.import_s,
        "queries": len(lat),
        "warm_median_ms": round(median, 1),
        "warm_p95_ms": round(p95, 1),
        "worker_around_resolution_ms": round(statistics.median(around), 1) if around else None,
        "prebuilt_parser_answers": prebuilt,
        "worker_rss_mib": round(w_rss / 1024),
        "worker_pss_mib": round(w_pss / 1024),
        "child_rss_mib": round(c_rss / 1024),
        "child_pss_mib": round(c_pss / 1024),
        "sglang_reject_s": round(reject_s, 2),
        "sglang_reject_message": reject_msg,
        "speedup": round(reject_s * 1000 / median, 1),
        "check_warm_median_s": round(checks.warm_median_s, 3),
        "check_warm_p95_s": round(checks.warm_p95_s, 3),
        "check_warm_cpu_s": round(checks.warm_cpu_s, 3),
        "load_average": round(checks.load, 2),
        "check_cold_service_s": round(checks.cold_s, 2),
        "check_in_process_s": round(checks.in_process_s, 2),
        "check_speedup": round(reject_s / checks.warm_median_s, 1),
    }
    print(
        f"oracle cold start        {numbers['cold_start_s']:.2f} s (sglang imports {status.import_s:.2f} s)"
    )
    print(
        f"warm query ({len(lat)} queries)  median {median:.1f} ms, p95 {p95:.1f} ms (budget {BUDGET_MS:.0f} ms)"
    )
    if around:
        print(
            f"around the resolution    median {statistics.median(around):.1f} ms in the worker "
            "(request to its waiting child, answer back); "
            f"{prebuilt} of {len(lat)} answers with the parser the child built ahead"
        )
    print(
        f"memory                   worker RSS {numbers['worker_rss_mib']} MiB (PSS {numbers['worker_pss_mib']}), "
        f"child RSS {numbers['child_rss_mib']} MiB (PSS {numbers['child_pss_mib']})"
    )
    print(f"sglang rejects the line  {reject_s:.2f} s (launch_server until exit: {reject_msg})")
    print(f"ratio                    the warm oracle answers {numbers['speedup']}x sooner")
    print(
        f"`sglaunch check` process  warm service: median {checks.warm_median_s:.3f} s, "
        f"p95 {checks.warm_p95_s:.3f} s ({checks.warm_runs} runs; budget {BUDGET_S:g} s), "
        f"its own CPU {checks.warm_cpu_s:.3f} s, load average {checks.load:.1f}; "
        f"cold service {checks.cold_s:.2f} s; --no-oracle-service {checks.in_process_s:.2f} s"
    )
    print(
        f"ratio                    a warm-service check is {numbers['check_speedup']}x sooner "
        f"than launch_server's verdict ({reject_s:.2f} s)"
    )
    if args.json:
        print(json.dumps(numbers))
    return 0 if median < BUDGET_MS and checks.within_budget else 1


if __name__ == "__main__":
    sys.exit(main())
