"""The local GPUs through NVML (`nvidia-ml-py`, import name `pynvml`).

`probe_gpus()` never raises: no driver, no GPU or an NVML error gives a
one-line status and planning mode. The NVML module is a parameter so tests
pass a fake at the `pynvml` boundary; `pynvml` itself is imported only here,
inside the function.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from sglaunch.facts.presets import DEFAULT_PLANNING, parse_gpu_spec
from sglaunch.validators.facts import GpuDevice, GpuFacts, GpuMode, GpuProcess


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _cuda_text(version: int) -> str:
    # NVML reports 12080 for CUDA 12.8
    return f"{version // 1000}.{(version % 1000) // 10}"


def _try(nvml: Any, name: str, *args: Any, default: Any = None) -> Any:
    """nvml.NAME(*args), or `default` when this NVML lacks it or raises (a field this GPU or
    driver does not report)."""
    try:
        return getattr(nvml, name)(*args)
    except Exception:
        return default


def visible_indices(env_value: str | None, uuids: list[str]) -> list[int] | None:
    """Physical indices CUDA would expose for CUDA_VISIBLE_DEVICES, in its order.

    None means the variable is unset (all devices). Like CUDA, enumeration
    stops at the first entry that names no device; an empty value hides all.
    """
    if env_value is None:
        return None
    out: list[int] = []
    for raw in env_value.split(","):
        item = raw.strip()
        if not item:
            break
        if item.lstrip("-").isdigit():
            idx = int(item)
            if idx < 0 or idx >= len(uuids):
                break
            chosen = idx
        else:
            matches = [i for i, u in enumerate(uuids) if u.startswith(item) or u == "GPU-" + item]
            if len(matches) != 1:
                break
            chosen = matches[0]
        if chosen in out:
            break  # CUDA rejects duplicates
        out.append(chosen)
    return out


def select_visible(gpu: GpuFacts, visible: str) -> GpuFacts:
    """The probed GPUs that CUDA_VISIBLE_DEVICES=`visible` leaves, in CUDA's order.

    `gpu` lists physical devices by their NVML index, and the value names them by index
    or UUID, as CUDA reads it (enumeration stops at the first entry that names none).
    """
    count = max((d.index for d in gpu.devices), default=-1) + 1
    uuids = [""] * count
    for d in gpu.devices:
        uuids[d.index] = d.uuid
    by_index = {d.index: d for d in gpu.devices}
    chosen = visible_indices(visible, uuids) or []
    devices = tuple(by_index[i] for i in chosen if i in by_index)
    return replace(gpu, devices=devices, status=f"CUDA_VISIBLE_DEVICES={visible} · {gpu.status}")


def planning_fallback(reason: str, preset: str = DEFAULT_PLANNING) -> GpuFacts:
    facts = parse_gpu_spec(preset)
    return replace(
        facts,
        status=f"{reason} — planning mode with {facts.describe()} (choose with --gpu NAMExCOUNT)",
    )


def probe_gpus(
    nvml: Any | None = None,
    env: Mapping[str, str] | None = None,
    *,
    fallback_preset: str = DEFAULT_PLANNING,
    with_processes: bool = True,
) -> GpuFacts:
    """Every visible GPU with its facts; planning mode (and why) when there are none."""
    env = os.environ if env is None else env
    if nvml is None:
        try:
            import pynvml  # heavy: pynvml, and absent without the NVIDIA stack
        except ImportError:
            return planning_fallback("nvidia-ml-py is not installed", fallback_preset)
        nvml = pynvml
    try:
        nvml.nvmlInit()
    except Exception as exc:
        return planning_fallback(_init_reason(exc, nvml), fallback_preset)
    try:
        return _read(nvml, env, fallback_preset, with_processes)
    except Exception as exc:
        return planning_fallback(
            f"NVML error ({_text(exc) or type(exc).__name__})", fallback_preset
        )
    finally:
        _try(nvml, "nvmlShutdown")


def _milli(value: Any) -> float | None:
    return value / 1000.0 if isinstance(value, int | float) else None


def _init_reason(exc: Exception, nvml: Any) -> str:
    name = type(exc).__name__
    if "LibraryNotFound" in name:
        return "no NVIDIA driver found (libnvidia-ml.so is missing)"
    if "DriverNotLoaded" in name:
        return "the NVIDIA driver is not loaded"
    if "NoPermission" in name:
        return "no permission to use NVML"
    return f"NVML could not start ({_text(exc) or name})"


def _read(
    nvml: Any, env: Mapping[str, str], fallback_preset: str, with_processes: bool
) -> GpuFacts:
    driver = _text(_try(nvml, "nvmlSystemGetDriverVersion", default=""))
    cuda_raw = _try(nvml, "nvmlSystemGetCudaDriverVersion_v2") or _try(
        nvml, "nvmlSystemGetCudaDriverVersion"
    )
    cuda = _cuda_text(int(cuda_raw)) if cuda_raw else ""
    total = int(nvml.nvmlDeviceGetCount())
    handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(total)]
    uuids = [_text(_try(nvml, "nvmlDeviceGetUUID", h, default="")) for h in handles]
    visible = visible_indices(env.get("CUDA_VISIBLE_DEVICES"), uuids)
    order = list(range(total)) if visible is None else visible
    if total == 0:
        return planning_fallback("the NVIDIA driver sees no GPU", fallback_preset)
    if not order:
        return planning_fallback(
            f"CUDA_VISIBLE_DEVICES={env.get('CUDA_VISIBLE_DEVICES')!r} hides every GPU",
            fallback_preset,
        )
    devices = []
    for phys in order:
        h = handles[phys]
        mem = nvml.nvmlDeviceGetMemoryInfo(h)
        major, minor = nvml.nvmlDeviceGetCudaComputeCapability(h)
        rates = _try(nvml, "nvmlDeviceGetUtilizationRates", h)
        util = getattr(rates, "gpu", None)
        temp = _try(nvml, "nvmlDeviceGetTemperature", h, getattr(nvml, "NVML_TEMPERATURE_GPU", 0))
        power = _milli(_try(nvml, "nvmlDeviceGetPowerUsage", h))
        limit = _milli(_try(nvml, "nvmlDeviceGetEnforcedPowerLimit", h))
        pci = _try(nvml, "nvmlDeviceGetPciInfo", h)
        bus = _text(pci.busId) if pci is not None else ""
        procs: tuple[GpuProcess, ...] = ()
        if with_processes:
            raw = _try(nvml, "nvmlDeviceGetComputeRunningProcesses", h, default=[]) or []
            procs = tuple(
                GpuProcess(
                    pid=int(p.pid),
                    name=_process_name(int(p.pid)),
                    used_memory=getattr(p, "usedGpuMemory", None),
                )
                for p in raw
            )
        devices.append(
            GpuDevice(
                index=phys,
                name=_text(nvml.nvmlDeviceGetName(h)),
                memory_total=int(mem.total),
                memory_used=int(mem.used),
                memory_free=int(mem.free),
                capability=(int(major), int(minor)),
                uuid=uuids[phys],
                utilization=util,
                temperature=temp,
                power_draw=power,
                power_limit=limit,
                processes=procs,
                pci_bus_id=bus,
            )
        )
    facts = GpuFacts(
        mode=GpuMode.NVML, devices=tuple(devices), driver_version=driver, cuda_version=cuda
    )
    hidden = total - len(devices)
    note = f" ({hidden} hidden by CUDA_VISIBLE_DEVICES)" if hidden else ""
    return replace(
        facts, status=f"{facts.describe()} · driver {driver or '?'} · CUDA {cuda or '?'}{note}"
    )


def _process_name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def gpu_facts_for(
    spec: str | None, env: Mapping[str, str] | None = None, nvml: Any | None = None
) -> GpuFacts:
    """`--gpu NAMExCOUNT` when given, else the real GPUs, else the default planning preset."""
    if spec:
        return parse_gpu_spec(spec)
    return probe_gpus(nvml=nvml, env=env)
