"""How fast is the memory plan? Prints numbers; the README quotes them.

For the MiniCPM SALA example on H100x8 (planning preset):
1. one memory plan after a flag change (a keystroke in the TUI re-plans):
   median and p99 over many runs. Budget: well under 1 ms.
2. the layouts table (every tp × dp × pp layout on the 8 GPUs, each planned and
   checked by every rule): median over runs. Budget: under 50 ms.
3. a full re-validation (every rule, the memory rules included) after a flag change.
"""

from __future__ import annotations

import statistics
import time

from sglaunch.checking import build_input
from sglaunch.facts.model import load_model_facts
from sglaunch.facts.presets import parse_gpu_spec
from sglaunch.flags.argv import parse_argv
from sglaunch.flags.schema import bundled_schema
from sglaunch.memory.assumptions import with_memory_facts
from sglaunch.validators.engine import validate
from sglaunch.validators.memory.layouts import plan_layouts
from sglaunch.validators.memory.plan import plan_memory

PLAN_RUNS = 5000
TABLE_RUNS = 100


def _ms(values: list[float]) -> tuple[float, float]:
    values = sorted(values)
    return statistics.median(values) * 1e3, values[int(len(values) * 0.99) - 1] * 1e3


def main() -> None:
    schema = bundled_schema()
    model = load_model_facts("example:minicpm-sala")
    gpu = parse_gpu_spec("H100x8")
    flags = dict(parse_argv(["--tp", "2"], schema).values)
    base = with_memory_facts(build_input(flags, gpu=gpu, model=model, env={}, schema=schema))
    inputs = []
    for i in range(PLAN_RUNS):
        # one flag change per run, as a keystroke in the editor makes it
        changed = {**flags, "mem_fraction_static": 0.80 + (i % 10) / 100}
        inputs.append(base.__class__(**{**base.__dict__, "flags": changed}))
    plan_memory(inputs[0])
    times = []
    for inp in inputs:
        t0 = time.perf_counter()
        plan_memory(inp)
        times.append(time.perf_counter() - t0)
    med, p99 = _ms(times)
    print(
        f"memory plan (MiniCPM SALA, H100x8, tp 2): median {med:.3f} ms, p99 {p99:.3f} ms over {PLAN_RUNS} runs"
    )
    times = []
    for inp in inputs[:PLAN_RUNS]:
        t0 = time.perf_counter()
        validate(inp)
        times.append(time.perf_counter() - t0)
    med, p99 = _ms(times)
    print(f"full re-validation with the memory rules: median {med:.3f} ms, p99 {p99:.3f} ms")
    table = []
    count = 0
    for i in range(TABLE_RUNS):
        t0 = time.perf_counter()
        count = len(plan_layouts(inputs[i]))
        table.append(time.perf_counter() - t0)
    med, p99 = _ms(table)
    print(
        f"layouts table ({count} layouts on 8 GPUs): median {med:.2f} ms, p99 {p99:.2f} ms over {TABLE_RUNS} runs"
    )


if __name__ == "__main__":
    main()
