"""A fake `pynvml` module: the same functions and errors, backed by a list of devices."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

GIB = 1024**3


class NVMLError(Exception):
    pass


class NVMLError_LibraryNotFound(NVMLError):
    pass


class NVMLError_DriverNotLoaded(NVMLError):
    pass


class NVMLError_Unknown(NVMLError):
    pass


@dataclass
class FakeGpu:
    name: str
    capability: tuple[int, int]
    total_gib: float
    used_gib: float = 1.0
    uuid: str = ""
    util: int = 0
    temp: int = 35
    power_mw: int = 70_000
    pids: list[tuple[int, int]] = field(default_factory=list)


H100 = ("NVIDIA H100 80GB HBM3", (9, 0), 79.6)
B200 = ("NVIDIA B200", (10, 0), 179.1)
A100 = ("NVIDIA A100-SXM4-80GB", (8, 0), 80.0)
RTX5090 = ("NVIDIA GeForce RTX 5090", (12, 0), 31.8)
L40S = ("NVIDIA L40S", (8, 9), 45.0)


def gpu(kind: tuple[str, tuple[int, int], float], i: int, **kw: object) -> FakeGpu:
    name, cap, total = kind
    return FakeGpu(name=name, capability=cap, total_gib=total, uuid=f"GPU-{i:08x}-aaaa-bbbb", **kw)  # type: ignore[arg-type]


class FakeNvml:
    """Stands in for the `pynvml` module at the boundary probe_gpus() uses."""

    NVML_TEMPERATURE_GPU = 0
    NVMLError = NVMLError

    def __init__(
        self,
        gpus: list[FakeGpu],
        *,
        driver: str = "570.124.06",
        cuda: int = 12080,
        init_error: Exception | None = None,
        fail_on: str | None = None,
    ) -> None:
        self.gpus = gpus
        self.driver = driver
        self.cuda = cuda
        self.init_error = init_error
        self.fail_on = fail_on
        self.initialised = False
        self.shutdowns = 0

    def _maybe_fail(self, name: str) -> None:
        if self.fail_on == name:
            raise NVMLError_Unknown("Unknown Error")

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise self.init_error
        self.initialised = True

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1
        self.initialised = False

    def nvmlSystemGetDriverVersion(self) -> str:
        return self.driver

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return self.cuda

    def nvmlDeviceGetCount(self) -> int:
        self._maybe_fail("count")
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> FakeGpu:
        return self.gpus[i]

    def nvmlDeviceGetName(self, h: FakeGpu) -> str:
        return h.name

    def nvmlDeviceGetUUID(self, h: FakeGpu) -> str:
        return h.uuid

    def nvmlDeviceGetMemoryInfo(self, h: FakeGpu) -> SimpleNamespace:
        self._maybe_fail("memory")
        total = int(h.total_gib * GIB)
        used = int(h.used_gib * GIB)
        return SimpleNamespace(total=total, used=used, free=total - used)

    def nvmlDeviceGetCudaComputeCapability(self, h: FakeGpu) -> tuple[int, int]:
        return h.capability

    def nvmlDeviceGetUtilizationRates(self, h: FakeGpu) -> SimpleNamespace:
        return SimpleNamespace(gpu=h.util, memory=0)

    def nvmlDeviceGetTemperature(self, h: FakeGpu, sensor: int) -> int:
        return h.temp

    def nvmlDeviceGetPowerUsage(self, h: FakeGpu) -> int:
        return h.power_mw

    def nvmlDeviceGetEnforcedPowerLimit(self, h: FakeGpu) -> int:
        return 700_000

    def nvmlDeviceGetPciInfo(self, h: FakeGpu) -> SimpleNamespace:
        return SimpleNamespace(busId=b"00000000:18:00.0")

    def nvmlDeviceGetComputeRunningProcesses(self, h: FakeGpu) -> list[SimpleNamespace]:
        return [SimpleNamespace(pid=p, usedGpuMemory=m) for p, m in h.pids]
