"""GPU emulation for the oracle worker: torch and sglang answer as the given GPUs would.

Runs under the *sglang* interpreter, loaded by path from `oracle_worker.py` (standard
library and sglang only). Two halves: `hide_cuda()` in the warm parent, before
sglang is imported, so every module takes its CPU-only branch at import on any
machine and CUDA/NVML can never initialise; `emulate_gpu()` in each forked
child, right before resolution.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from typing import Any

MIB = 1024**2


def hide_cuda() -> None:
    """Make the process look CPU-only, on a GPU machine too, and keep CUDA and
    NVML out of it for good: an unpatched torch.cuda call raises instead of
    creating a context, as it would with the CPU build of torch."""
    import torch

    def _blocked(*_a: Any, **_k: Any) -> Any:
        raise RuntimeError("sglaunch oracle: CUDA is never initialised in the oracle worker")

    torch.cuda.is_available = lambda: False  # type: ignore[assignment]
    torch.cuda.device_count = lambda: 0  # type: ignore[assignment]
    torch.cuda._lazy_init = _blocked  # type: ignore[attr-defined]
    torch.cuda.init = _blocked  # type: ignore[assignment]
    torch.cuda.is_initialized = lambda: False  # type: ignore[assignment]
    try:
        import pynvml
    except Exception:
        return
    pynvml.nvmlInit = _blocked  # type: ignore[attr-defined]
    if hasattr(pynvml, "nvmlInitWithFlags"):
        pynvml.nvmlInitWithFlags = _blocked


class _DeviceProperties:
    """What torch.cuda.get_device_properties gives, for the fields sglang reads."""

    def __init__(self, dev: dict[str, Any], index: int) -> None:
        self.name = str(dev.get("name") or "NVIDIA GPU")
        self.total_memory = int(dev.get("memory_total") or 0)
        self.major, self.minor = (int(x) for x in dev.get("capability") or (0, 0))
        self.multi_processor_count = int(dev.get("multi_processor_count") or 132)
        self.uuid = str(dev.get("uuid") or f"GPU-sglaunch-emulated-{index}")
        self.is_integrated = 0
        self.is_multi_gpu_board = 0
        self.L2_cache_size = 50 * MIB
        self.gcnArchName = ""

    def __repr__(self) -> str:
        return (
            f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // MIB}MB)"
        )


def _sglang_namespaces() -> list[dict[str, Any]]:
    out = []
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "sglang" or name.startswith("sglang.")):
            continue
        namespace = getattr(module, "__dict__", None)
        if isinstance(namespace, dict):
            out.append(namespace)
    return out


class Bindings:
    """Where the warm parent bound what emulation replaces, found once before forking.

    A child then rebinds and clears in about a millisecond instead of walking
    a thousand module namespaces per request.
    """

    def __init__(self, targets: list[Any]) -> None:
        wanted = {id(t) for t in targets}
        self.sites: list[tuple[dict[str, Any], str, Any]] = []
        self.caches: list[Any] = []
        for namespace in _sglang_namespaces():
            for attr, value in list(namespace.items()):
                if id(value) in wanted:
                    self.sites.append((namespace, attr, value))
                # isinstance first: getattr on a lazy-import proxy would import its target
                elif isinstance(value, functools._lru_cache_wrapper):
                    self.caches.append(value)

    def rebind(self, replacements: dict[int, Any]) -> None:
        for namespace, attr, original in self.sites:
            replacement = replacements.get(id(original))
            if replacement is not None and namespace.get(attr) is original:
                namespace[attr] = replacement

    def clear_caches(self) -> None:
        """Forget every memoised module-level probe: each answered for a CPU-only box."""
        for cached in self.caches:
            with contextlib.suppress(Exception):
                cached.cache_clear()


# the names in srt/utils/common.py that emulation replaces
_FAKED = (
    "get_nvgpu_memory_capacity",
    "get_nvidia_driver_version_str",
    "get_nvidia_driver_version",
    "get_device_sm",
    "get_device_sm_nvidia_smi",
    "is_flashinfer_available",
    "is_mnnvl_fabric_device",
)


def find_bindings() -> Bindings:
    from sglang.srt import platforms
    from sglang.srt.utils import common

    targets = [getattr(common, n) for n in _FAKED if hasattr(common, n)]
    targets.append(platforms.current_platform)
    return Bindings(targets)


def emulate_gpu(gpu: dict[str, Any], bindings: Bindings) -> None:
    """Make torch and sglang answer as the described GPUs would, without CUDA or NVML.

    The list is what sglang 0.5.23's resolution reads (see the resolution
    reference): torch.cuda's device queries, torch.version.cuda, the memoised
    probes in srt/utils/common.py, the nvidia-smi / NVML helpers wherever
    sglang bound them, and the lazily chosen platform object. `bindings` is
    find_bindings()'s answer, found once in the warm parent, not per request.
    """
    devices = list(gpu.get("devices") or [])
    if not devices:
        return  # no GPU: resolve as this CPU-only machine does
    import torch
    from sglang.srt import platforms
    from sglang.srt.platforms.cuda import CudaSRTPlatform
    from sglang.srt.utils import common

    props = [_DeviceProperties(d, i) for i, d in enumerate(devices)]

    def _index(device: Any = None) -> int:
        if device is None:
            return 0
        if isinstance(device, int):
            return device
        index = getattr(device, "index", None)
        if index is not None:
            return int(index)
        if isinstance(device, str) and ":" in device:
            return int(device.rsplit(":", 1)[1])
        return 0

    def _props(device: Any = None) -> _DeviceProperties:
        i = _index(device)
        if not 0 <= i < len(props):
            raise AssertionError("Invalid device id")
        return props[i]

    def _mem_get_info(device: Any = None) -> tuple[int, int]:
        d = devices[_index(device)]
        total = int(d.get("memory_total") or 0)
        free = d.get("memory_free")
        return (int(free) if free is not None else total, total)

    cuda = torch.cuda
    cuda.is_available = lambda: True  # type: ignore[assignment]
    cuda.device_count = lambda: len(props)  # type: ignore[assignment]
    cuda.get_device_capability = lambda device=None: (_props(device).major, _props(device).minor)  # type: ignore[assignment]
    cuda.get_device_name = lambda device=None: _props(device).name  # type: ignore[assignment]
    cuda.get_device_properties = _props  # type: ignore[assignment]
    # "initialised" keeps get_device_sm and friends off NVML; _lazy_init stays blocked.
    cuda.is_initialized = lambda: True  # type: ignore[assignment]
    cuda.mem_get_info = _mem_get_info  # type: ignore[assignment]
    cuda.current_device = lambda: 0  # type: ignore[assignment]
    cuda.is_bf16_supported = lambda including_emulation=True: props[0].major >= 8  # type: ignore[assignment]
    torch.version.cuda = str(gpu.get("cuda_version") or "12.9")  # type: ignore[misc]
    torch.version.hip = None  # type: ignore[misc]

    driver = str(gpu.get("driver_version") or "") or None
    mem_mib = min(p.total_memory for p in props) / MIB
    sm = props[0].major * 10 + props[0].minor
    names = [p.name.upper() for p in props]

    @functools.lru_cache(maxsize=1)
    def get_nvidia_driver_version_str() -> str | None:
        return driver

    @functools.lru_cache(maxsize=1)
    def get_nvidia_driver_version() -> tuple[int, ...]:
        try:
            return tuple(int(x) for x in (driver or "").split(".")) if driver else (0,)
        except ValueError:
            return (0,)

    @functools.lru_cache(maxsize=1)
    def is_flashinfer_available() -> bool:
        # flashinfer-python is a hard dependency of sglang's GPU install
        return common.get_bool_env_var("SGLANG_IS_FLASHINFER_AVAILABLE", default="true")

    @functools.lru_cache(maxsize=1)
    def is_mnnvl_fabric_device() -> bool:
        # by name, as sglang does first; fabric registration would need NVML
        return any(tag in n for n in names for tag in ("GB200", "GB300"))

    fakes: dict[str, Any] = {
        "get_nvgpu_memory_capacity": lambda: mem_mib,
        "get_nvidia_driver_version_str": get_nvidia_driver_version_str,
        "get_nvidia_driver_version": get_nvidia_driver_version,
        "get_device_sm": lambda: sm,
        "get_device_sm_nvidia_smi": lambda: (props[0].major, props[0].minor),
        "is_flashinfer_available": is_flashinfer_available,
        "is_mnnvl_fabric_device": is_mnnvl_fabric_device,
    }
    replacements: dict[int, Any] = {}
    for name, fake in fakes.items():
        original = getattr(common, name, None)
        if original is not None:
            replacements[id(original)] = fake
        setattr(common, name, fake)
    old_platform = platforms._current_platform
    new_platform = CudaSRTPlatform()
    platforms._current_platform = new_platform
    if old_platform is not None:
        replacements[id(old_platform)] = new_platform
    bindings.rebind(replacements)
    bindings.clear_caches()
