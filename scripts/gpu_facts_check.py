"""Read the real GPUs through sglaunch's NVML facts and print what was found.

For the GPU machine: proves `sglaunch.facts.gpu.probe_gpus()` against a real driver.
Prints one plain line per device, then the same facts as one JSON object on the last
line. Exits 1 when NVML found no GPU (planning mode), 0 otherwise.

    .venv/bin/python scripts/gpu_facts_check.py
"""

from __future__ import annotations

import json
import sys
from typing import Any

from sglaunch.facts.gpu import probe_gpus
from sglaunch.validators.facts import GIB, GpuFacts, GpuMode


def facts_json(facts: GpuFacts) -> dict[str, Any]:
    return {
        "mode": str(facts.mode),
        "status": facts.status,
        "driver_version": facts.driver_version,
        "cuda_version": facts.cuda_version,
        "devices": [
            {
                "index": d.index,
                "name": d.name,
                "uuid": d.uuid,
                "capability": f"{d.capability[0]}.{d.capability[1]}",
                "sm": d.sm,
                "arch": d.arch,
                "memory_total_gib": round(d.memory_total / GIB, 2),
                "memory_used_gib": round(d.memory_used / GIB, 2)
                if d.memory_used is not None
                else None,
                "memory_free_gib": round(d.memory_free / GIB, 2)
                if d.memory_free is not None
                else None,
                "utilization_pct": d.utilization,
                "temperature_c": d.temperature,
                "power_w": d.power_draw,
                "pci_bus_id": d.pci_bus_id,
            }
            for d in facts.devices
        ],
    }


def main(nvml: Any | None = None) -> int:
    facts = probe_gpus(nvml=nvml)
    if facts.mode is not GpuMode.NVML:
        print(f"no NVML GPU: {facts.status}", file=sys.stderr)
        # the planning preset's devices are not hardware: report none
        print(json.dumps({"mode": str(facts.mode), "status": facts.status, "devices": []}))
        return 1
    print(
        f"driver {facts.driver_version or '?'}, CUDA {facts.cuda_version or '?'}, {facts.count} GPU(s)"
    )
    for d in facts.devices:
        used = f"{d.memory_used / GIB:.1f}" if d.memory_used is not None else "?"
        print(
            f"GPU{d.index}: {d.name} · compute capability {d.capability[0]}.{d.capability[1]} ({d.sm}, {d.arch}) · "
            f"{used}/{d.memory_total / GIB:.1f} GiB used · utilisation "
            f"{d.utilization if d.utilization is not None else '?'}%"
        )
    print(json.dumps(facts_json(facts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
