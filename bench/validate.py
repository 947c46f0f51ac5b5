"""How fast is the built-in tier? Prints numbers; the README quotes them.

1. A full re-validation after one flag change (build the input, run every rule),
   for the MiniCPM SALA example: median and p99 over many runs. Budget < 1 ms.
2. `sglaunch check --no-oracle` as a whole process, wall time (median of runs).
   Budget < 0.5 s.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

from sglaunch.checking import build_input
from sglaunch.facts.model import load_model_facts
from sglaunch.facts.presets import parse_gpu_spec
from sglaunch.flags.argv import parse_argv
from sglaunch.flags.schema import bundled_schema
from sglaunch.validators.engine import validate

# an installed sglaunch has its .pyc: a shell's PYTHONDONTWRITEBYTECODE would time compiling
BYTECODE_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

RUNS = 5000
PROCESS_RUNS = 7


def revalidation() -> list[float]:
    schema = bundled_schema()
    model = load_model_facts("example:minicpm-sala")
    gpu = parse_gpu_spec("H100x8")
    flags = dict(
        parse_argv(["--tp", "2", "--enable-dp-attention", "--dp-size", "2"], schema).values
    )
    validate(build_input(flags, gpu=gpu, model=model, env={}, schema=schema))  # warm the registry
    times = []
    for i in range(RUNS):
        # one flag change, as a keystroke in the editor makes it
        flags = {**flags, "enable_hierarchical_cache": bool(i % 2)}
        t0 = time.perf_counter()
        validate(build_input(flags, gpu=gpu, model=model, env={}, schema=schema))
        times.append(time.perf_counter() - t0)
    return times


def process_wall() -> list[float]:
    exe = os.path.join(os.path.dirname(sys.executable), "sglaunch")
    cmd = [
        exe,
        "check",
        "--model",
        "example:minicpm-sala",
        "--gpu",
        "H100x8",
        "--no-oracle",
        "--",
        "--tp",
        "2",
        "--enable-dp-attention",
        "--dp-size",
        "2",
    ]
    times = []
    for _ in range(PROCESS_RUNS):
        t0 = time.perf_counter()
        subprocess.run(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=BYTECODE_ENV
        )
        times.append(time.perf_counter() - t0)
    return times


def main() -> None:
    t = sorted(revalidation())
    median = statistics.median(t) * 1e3
    p99 = t[int(len(t) * 0.99) - 1] * 1e3
    print(
        f"re-validation after one flag change (SALA example, {RUNS} runs): median {median:.3f} ms, p99 {p99:.3f} ms  (budget 1 ms)"
    )
    w = process_wall()
    print(
        f"`sglaunch check --no-oracle` process wall time ({PROCESS_RUNS} runs): median {statistics.median(w):.3f} s, min {min(w):.3f} s  (budget 0.5 s)"
    )


if __name__ == "__main__":
    main()
