"""How fast is the built-in tier? Prints numbers; the README quotes them.

1. A full re-validation after one flag change (build the input, run every rule),
   for the MiniCPM SALA example: median and p99 over many runs. Budget < 1 ms.
2. `sglaunch check --no-oracle` as a whole process, wall time (min and median of
   runs), for both kinds of model: one whose config is read as data (the SALA
   example) and one transformers knows (the Llama example, like Qwen and
   DeepSeek), the latter first (an empty facts cache: transformers is imported)
   and repeated (transformers' answer read from the cache). Budgets: < 0.5 s
   read as data; a repeat check < 0.3 s (a first one pays transformers' import).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
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


def process_wall(
    model: str, *, fresh_home: bool, home: str, runs: int = PROCESS_RUNS
) -> list[float]:
    """Wall times of `check --no-oracle` on `model`; `fresh_home`: every run with an
    empty SGLAUNCH_HOME (no cached facts), else all runs sharing `home`."""
    exe = os.path.join(os.path.dirname(sys.executable), "sglaunch")
    cmd = [
        exe,
        "check",
        "--model",
        model,
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
    for i in range(runs):
        env = {**BYTECODE_ENV, "SGLAUNCH_HOME": os.path.join(home, str(i) if fresh_home else "")}
        t0 = time.perf_counter()
        subprocess.run(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env
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
    with tempfile.TemporaryDirectory(prefix="sglaunch-bench-") as home:
        data = process_wall("example:minicpm-sala", fresh_home=False, home=home)
        first = process_wall("example:llama-3.1-8b", fresh_home=True, home=home)
        # the repeat runs share `home`, where the data runs left no facts for Llama: warm it
        process_wall("example:llama-3.1-8b", fresh_home=False, home=home, runs=1)
        repeat = process_wall("example:llama-3.1-8b", fresh_home=False, home=home)
    load = os.getloadavg()[0]
    print(
        f"`sglaunch check --no-oracle` process wall time ({PROCESS_RUNS} runs each, load {load:.1f}):"
    )
    for label, w, budget in (
        ("config read as data (SALA example)", data, 0.5),
        ("transformers config, first check (Llama example, empty cache)", first, None),
        ("transformers config, repeat check (facts cache)", repeat, 0.3),
    ):
        print(
            f"  {label}: median {statistics.median(w):.3f} s, min {min(w):.3f} s  "
            + (f"(budget {budget:g} s)" if budget else "(transformers' import: no budget)")
        )
    print(
        f"  repeat / first: {min(repeat) / min(first):.2f}; repeat / read-as-data: "
        f"{min(repeat) / min(data):.2f} (min of runs)"
    )


if __name__ == "__main__":
    main()
