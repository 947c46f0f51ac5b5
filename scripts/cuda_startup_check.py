"""Measure what CUDA and NCCL start-up take on a real GPU, against sglaunch's estimate.

For the GPU machine: sglang takes its baseline free memory P after the CUDA
context and torch.distributed (NCCL) are up, and sglaunch can only estimate
that start-up cost before launch (`validators/memory/baseline.py`). This script
takes the same steps with this interpreter's torch on one GPU, with NVML's and
torch's view of the device memory and the wall time after each:

    import torch -> torch.cuda.init() -> CUDA context -> first allocation
    -> first bf16 matmul (cuBLAS) -> 1-rank NCCL process group -> first all_reduce

then prints the measured costs beside the ones sglaunch's memory plan assumes.
Plain lines first, then everything as one JSON object on the last line. Exits 0
when every step ran, 1 when one failed (the steps before it are still reported),
2 when there is no GPU (NVML or torch sees none). Run it on an idle GPU: NVML's
device-wide numbers count every process on it.

    python scripts/cuda_startup_check.py [--device N]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import socket
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

MIB = 1 << 20
GIB = 1 << 30


@dataclass(frozen=True)
class Stage:
    """The device memory after one start-up step, and the wall time the step took."""

    name: str
    wall_s: float
    nvml_used_mib: float
    nvml_free_mib: float
    torch_free_mib: float | None = None  # torch.cuda.mem_get_info, once a context exists
    torch_reserved_mib: float | None = None  # torch's caching allocator


@dataclass(frozen=True)
class Assumption:
    """One start-up quantity: what was measured here and what sglaunch assumes for it."""

    what: str
    measured_gib: float | None
    assumed: str


def _mib(n: int | float) -> float:
    return round(n / MIB, 1)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Probe:
    """Records one Stage per step; `torch` is None until it has been imported."""

    def __init__(self, nvml: Any, handle: Any, device: int) -> None:
        self.nvml = nvml
        self.handle = handle
        self.device = device
        self.torch: Any = None
        self.context = False
        self.stages: list[Stage] = []
        self.kept: list[Any] = []  # tensors the steps made, alive until the end

    def record(self, name: str, wall_s: float) -> Stage:
        info = self.nvml.nvmlDeviceGetMemoryInfo(self.handle)
        torch_free = reserved = None
        # mem_get_info itself creates the context: asked only once a step has made one
        if self.context and self.torch is not None:
            torch_free = _mib(self.torch.cuda.mem_get_info(self.device)[0])
            reserved = _mib(self.torch.cuda.memory_reserved(self.device))
        stage = Stage(
            name, round(wall_s, 3), _mib(info.used), _mib(info.free), torch_free, reserved
        )
        self.stages.append(stage)
        # as each step ends: a step that hangs (NCCL) and is killed leaves the ones before it
        torch_part = f", torch free {torch_free:.0f} MiB" if torch_free is not None else ""
        print(f"{name}: {stage.wall_s:.3f} s, NVML used {stage.nvml_used_mib:.0f} MiB{torch_part}")
        sys.stdout.flush()
        return stage

    def step(self, name: str, run: Any) -> Stage:
        t0 = time.perf_counter()
        run()
        if self.context:
            self.torch.cuda.synchronize(self.device)
        return self.record(name, time.perf_counter() - t0)


def _steps(p: Probe) -> list[tuple[str, Any]]:
    def import_torch() -> None:
        # the image's CUDA build; imported here so a machine without it still gets exit 2
        import torch

        p.torch = torch

    def cuda_init() -> None:
        if not p.torch.cuda.is_available():
            raise LookupError("torch sees no CUDA device")
        p.torch.cuda.init()

    def context() -> None:
        p.torch.cuda.set_device(p.device)
        p.torch.cuda.mem_get_info(p.device)
        p.context = True

    def first_allocation() -> None:
        p.kept.append(p.torch.empty(MIB, dtype=p.torch.uint8, device=p.device))

    def first_matmul() -> None:
        a = p.torch.randn(1024, 1024, device=p.device, dtype=p.torch.bfloat16)
        p.kept.append(a @ a)

    def nccl_group() -> None:
        import torch.distributed as dist

        dist.init_process_group(
            "nccl",
            init_method=f"tcp://127.0.0.1:{_free_port()}",
            rank=0,
            world_size=1,
            timeout=datetime.timedelta(seconds=120),
            device_id=p.torch.device("cuda", p.device),
        )

    def all_reduce() -> None:
        import torch.distributed as dist

        t = p.torch.ones(MIB, device=p.device)
        dist.all_reduce(t)

    return [
        ("import torch", import_torch),
        ("torch.cuda.init()", cuda_init),
        ("CUDA context (first mem_get_info)", context),
        ("first allocation (1 MiB)", first_allocation),
        ("first bf16 matmul (cuBLAS)", first_matmul),
        ("NCCL process group (world size 1)", nccl_group),
        ("first all_reduce (4 MiB)", all_reduce),
    ]


def compare(stages: list[Stage]) -> list[Assumption]:
    """The measured costs beside sglaunch's: cost = NVML free before - torch free after."""
    from sglaunch.validators.memory.baseline import MULTI_GPU_COST_GIB, SINGLE_GPU_COST_GIB

    by = {s.name: s for s in stages}
    before = stages[0].nvml_free_mib if stages else None

    def cost(name: str) -> float | None:
        s = by.get(name)
        if before is None or s is None or s.torch_free_mib is None:
            return None
        return round((before - s.torch_free_mib) / 1024, 3)

    reference = "0.5-1 GiB (docs/reference/sglang-0.5.23-memory.md, not in the plan alone)"
    return [
        Assumption("CUDA context", cost("CUDA context (first mem_get_info)"), reference),
        Assumption("context + cuBLAS", cost("first bf16 matmul (cuBLAS)"), "not modelled apart"),
        Assumption(
            "start-up cost, one GPU (context + NCCL, world size 1)",
            cost("first all_reduce (4 MiB)"),
            f"{SINGLE_GPU_COST_GIB} GiB (baseline.SINGLE_GPU_COST_GIB)",
        ),
        Assumption(
            "start-up cost, TP > 1 (NCCL + custom all-reduce across GPUs)",
            None,
            f"{MULTI_GPU_COST_GIB} GiB (baseline.MULTI_GPU_COST_GIB); one GPU here: not measured",
        ),
    ]


def _no_gpu(reason: str) -> int:
    print(f"no GPU: {reason}", file=sys.stderr)
    print(json.dumps({"status": "no-gpu", "reason": reason, "stages": []}))
    return 2


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--device", type=int, default=0, help="the GPU index (default 0)")
    args = ap.parse_args(argv)
    try:
        import pynvml as nvml  # the driver's view, before anything makes a context

        nvml.nvmlInit()
    except Exception as exc:
        return _no_gpu(f"NVML: {exc}")
    try:
        count = int(nvml.nvmlDeviceGetCount())
        if args.device >= count:
            return _no_gpu(f"NVML sees {count} GPU(s), no index {args.device}")
        handle = nvml.nvmlDeviceGetHandleByIndex(args.device)
        name = nvml.nvmlDeviceGetName(handle)
        name = name.decode() if isinstance(name, bytes) else str(name)
        driver = nvml.nvmlSystemGetDriverVersion()
        driver = driver.decode() if isinstance(driver, bytes) else str(driver)
        total = int(nvml.nvmlDeviceGetMemoryInfo(handle).total)
        print(f"GPU{args.device}: {name}, {total / GIB:.1f} GiB, driver {driver}")
        probe = Probe(nvml, handle, args.device)
        probe.record("before CUDA (NVML only)", 0.0)
        error = None
        for label, run in _steps(probe):
            try:
                probe.step(label, run)
            except LookupError as exc:
                return _no_gpu(str(exc))
            except Exception as exc:
                error = f"{label}: {type(exc).__name__}: {exc}"
                break
        torch_version = getattr(probe.torch, "__version__", None)
        cuda_version = getattr(getattr(probe.torch, "version", None), "cuda", None)
        nccl_version = None
        if probe.torch is not None and probe.context:
            try:
                nccl_version = ".".join(str(x) for x in probe.torch.cuda.nccl.version())
            except Exception:
                nccl_version = None
        with_dist = probe.torch is not None and probe.torch.distributed.is_initialized()
        if with_dist:
            with contextlib.suppress(Exception):
                probe.torch.distributed.destroy_process_group()
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()

    print(f"torch {torch_version or '?'} (CUDA {cuda_version or '?'}, NCCL {nccl_version or '?'})")
    rows = compare(probe.stages)
    for row in rows:
        measured = f"{row.measured_gib:.2f} GiB" if row.measured_gib is not None else "-"
        print(f"{row.what}: measured {measured} | assumed {row.assumed}")
    if error is not None:
        print(f"FAILED at {error}", file=sys.stderr)
    report = {
        "status": "error" if error else "ok",
        "error": error,
        "gpu": {"index": args.device, "name": name, "memory_total_mib": _mib(total)},
        "driver": driver,
        "torch": torch_version,
        "cuda": cuda_version,
        "nccl": nccl_version,
        "pid": os.getpid(),
        "stages": [asdict(s) for s in probe.stages],
        "comparison": [asdict(r) for r in rows],
    }
    print(json.dumps(report))
    return 1 if error else 0


if __name__ == "__main__":
    sys.exit(main())
