"""`sglaunch check` with sglang's verdict, timed as a whole process (bench/oracle.py runs it).

Three ways: the shared oracle service already warm (the usual case after the
first check), the service cold (this check starts it and waits for sglang's
imports), and `--no-oracle-service` (a worker of the check's own, cold every
time). Each run must end with sglang's own verdict ("rejected by sglang"), or
the number would mean nothing. The services live in a temporary folder and are
stopped at the end. Bytecode is written (PYTHONDONTWRITEBYTECODE is dropped)
and one built-in-only check runs first, as an installed sglaunch has its .pyc.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

BUDGET_S = 0.2
FLAGS = ["--attn-dp-size", "2", "--tp-size", "2"]


@dataclass(frozen=True)
class CheckTimes:
    warm_median_s: float
    warm_p95_s: float
    warm_runs: int
    warm_cpu_s: float  # the check process's own CPU (user + system), median: load-independent
    cold_s: float
    in_process_s: float
    load: float  # the 1-minute load average when the warm runs ended

    @property
    def within_budget(self) -> bool:
        return self.warm_median_s < BUDGET_S


def _command(python: str, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "sglaunch",
        "check",
        "--model",
        "example:minicpm-sala",
        "--gpu",
        "H100x2",
        "--sglang-python",
        python,
        *extra,
        "--",
        *FLAGS,
    ]


_CPU: list[float] = []


def _timed(cmd: list[str], env: dict[str, str], *, verdict: bool = True) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    _CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if verdict and "rejected by sglang" not in done.stderr:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the check did not get sglang's verdict: {tail}")
    return elapsed


def _stop(folder: Path) -> None:
    from sglaunch.oracle.service_admin import stop_services

    stop_services(folder=folder)


def time_check_processes(python: str, warm_runs: int = 10) -> CheckTimes:
    folder = Path(tempfile.mkdtemp(prefix="sglaunch-bench-"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update({"SGLAUNCH_RUNTIME_DIR": str(folder), "NO_COLOR": "1"})
    env.pop("SGLAUNCH_NO_ORACLE_SERVICE", None)
    try:
        _timed(_command(python, "--no-oracle"), env, verdict=False)  # writes the bytecode
        in_process = _timed(_command(python, "--no-oracle-service"), env)
        cold = _timed(_command(python), env)
        _CPU.clear()
        warm = sorted(_timed(_command(python), env) for _ in range(max(warm_runs, 1)))
        cpu = statistics.median(_CPU)
        load = os.getloadavg()[0]
    finally:
        _stop(folder)
        with_files = list(folder.iterdir())
        for path in with_files:
            path.unlink(missing_ok=True)
        folder.rmdir()
    p95 = warm[min(len(warm) - 1, round(0.95 * (len(warm) - 1)))]
    return CheckTimes(
        warm_median_s=statistics.median(warm),
        warm_p95_s=p95,
        warm_runs=len(warm),
        warm_cpu_s=cpu,
        cold_s=cold,
        in_process_s=in_process,
        load=load,
    )
