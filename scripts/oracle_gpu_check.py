"""Prove on a real GPU machine that the oracle never creates a CUDA context.

    python scripts/oracle_gpu_check.py [--sglang-python PATH] [--json]

Starts the oracle, resolves a launch line against this machine's real GPU
facts (read with NVML here, in this process), keeps one resolving child
alive, and meanwhile asks NVML for every compute and graphics process on
every GPU. The check fails if a process of the worker tree is among them, or
if any new process appeared at all (in a container NVML reports host PIDs, so
the second test is the one that cannot be fooled). Prints the verdict; exit 0
on PASS, 1 on FAIL, 2 when it cannot run (no GPU, no sglang).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
from typing import Any


def gpu_processes(nvml: Any) -> set[int]:
    """Every PID NVML lists as a compute or graphics process, on every GPU."""
    pids: set[int] = set()
    for i in range(nvml.nvmlDeviceGetCount()):
        handle = nvml.nvmlDeviceGetHandleByIndex(i)
        for query in (
            "nvmlDeviceGetComputeRunningProcesses",
            "nvmlDeviceGetGraphicsRunningProcesses",
        ):
            fn = getattr(nvml, query, None)
            if fn is None:
                continue
            with contextlib.suppress(nvml.NVMLError):
                pids.update(int(p.pid) for p in fn(handle))
    return pids


def process_tree(root: int) -> set[int]:
    """`root` and all its descendants, from /proc."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as fh:
                    parents[int(entry)] = int(fh.read().rsplit(") ", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    tree = {root}
    grew = True
    while grew:
        grew = False
        for pid, ppid in parents.items():
            if ppid in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return tree


def check(sglang_python: str | None) -> dict[str, Any]:
    try:
        import pynvml as nvml
    except ImportError:
        return {"verdict": "CANNOT RUN", "reason": "nvidia-ml-py is not installed"}
    try:
        nvml.nvmlInit()
    except Exception as exc:
        return {"verdict": "CANNOT RUN", "reason": f"NVML: {exc}"}
    from sglaunch.facts.gpu import probe_gpus
    from sglaunch.facts.model import model_path_for_sglang
    from sglaunch.oracle import Oracle

    try:
        if nvml.nvmlDeviceGetCount() == 0:
            return {"verdict": "CANNOT RUN", "reason": "NVML sees no GPU"}
        gpu = probe_gpus()
        before = gpu_processes(nvml)
        report: dict[str, Any] = {"gpu": gpu.describe(), "cuda": gpu.cuda_version}
        # the bundled MiniCPM SALA example: loads without remote code
        tmp = model_path_for_sglang("example:minicpm-sala")
        with Oracle(sglang_python, timeout=30.0) as oracle:
            status = oracle.status
            report["sglang_python"] = status.python
            if not status.available:
                return {**report, "verdict": "CANNOT RUN", "reason": status.reason}
            argv = ["--model-path", tmp, "--tp-size", str(max(1, gpu.count))]
            answer = oracle.resolve(argv, {}, gpu)
            report["answer"] = (
                "ok" if answer.ok else (answer.error.message if answer.error else answer.fault)
            )
            if answer.resolved:
                report["attention_backend"] = answer.resolved.get("attention_backend")
            # hold one resolving child alive while NVML is asked
            hang = threading.Thread(
                target=oracle.resolve, args=(argv, {"SGLAUNCH_ORACLE_TEST_HANG": "1"}, gpu)
            )
            hang.start()
            time.sleep(2.0)
            worker = oracle.worker_pid
            tree = process_tree(worker) if worker else set()
            during = gpu_processes(nvml)
            oracle.close()
            hang.join(timeout=40)
        report["worker_tree"] = sorted(tree)
        report["gpu_processes_before"] = sorted(before)
        report["gpu_processes_during"] = sorted(during)
        in_tree = sorted(tree & during)
        new = sorted(during - before)
        if len(tree) < 2:
            report["verdict"] = "FAIL"
            report["reason"] = "no resolving child was seen; the check did not cover one"
        elif in_tree or new:
            report["verdict"] = "FAIL"
            report["reason"] = f"GPU processes from the oracle: in its tree {in_tree}, new {new}"
        else:
            report["verdict"] = "PASS"
            report["reason"] = (
                f"no CUDA context in the oracle's {len(tree)} processes on {gpu.describe()}"
            )
        return report
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sglang-python", default=None, help="the interpreter with sglang")
    ap.add_argument("--json", action="store_true", help="print the whole report as JSON")
    args = ap.parse_args()
    report = check(args.sglang_python)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(f"{report['verdict']}: {report.get('reason', '')}")
    return {"PASS": 0, "FAIL": 1}.get(report["verdict"], 2)


if __name__ == "__main__":
    sys.exit(main())
