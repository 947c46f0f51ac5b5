"""Planning presets: GPUs a person may not have yet, with their real capability and memory."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from sglaunch.errors import UserError
from sglaunch.validators.facts import GpuDevice, GpuFacts, GpuMode

MIB = 1024**2

# The driver's CUDA version assumed for a planned machine: current drivers
# report 12.9+, which is what Blackwell needs (sglang requires >= 12.8). Assumptions for
# the rules and the oracle's emulation: reported as assumed, never as a machine's facts.
DEFAULT_CUDA = "12.9"
DEFAULT_DRIVER = "575.57.08"


@dataclass(frozen=True)
class Preset:
    key: str
    name: str  # as NVML reports it
    capability: tuple[int, int]
    memory_mib: int  # as NVML reports total memory
    aliases: tuple[str, ...] = ()

    @property
    def memory_bytes(self) -> int:
        return self.memory_mib * MIB


PRESETS: tuple[Preset, ...] = (
    Preset("H100", "NVIDIA H100 80GB HBM3", (9, 0), 81559, ("H100-80GB", "H100SXM")),
    Preset("H100-PCIE", "NVIDIA H100 PCIe", (9, 0), 81559, ("H100PCIE",)),
    Preset("H200", "NVIDIA H200", (9, 0), 143771, ("H200-141GB",)),
    Preset("H20", "NVIDIA H20", (9, 0), 97871),
    Preset("GH200", "NVIDIA GH200 480GB", (9, 0), 97871),
    Preset("B200", "NVIDIA B200", (10, 0), 183359),
    Preset("B300", "NVIDIA B300 SXM6 AC", (10, 3), 275040),
    Preset("GB200", "NVIDIA GB200", (10, 0), 189471),
    Preset("A100", "NVIDIA A100-SXM4-80GB", (8, 0), 81920, ("A100-80GB",)),
    Preset("A100-40GB", "NVIDIA A100-SXM4-40GB", (8, 0), 40960, ("A10040GB",)),
    Preset("A10G", "NVIDIA A10G", (8, 6), 23028),
    Preset("L40S", "NVIDIA L40S", (8, 9), 46068),
    Preset("L4", "NVIDIA L4", (8, 9), 23034),
    Preset("RTX3090", "NVIDIA GeForce RTX 3090", (8, 6), 24576, ("3090",)),
    Preset("RTX4090", "NVIDIA GeForce RTX 4090", (8, 9), 24564, ("4090",)),
    Preset("RTX5090", "NVIDIA GeForce RTX 5090", (12, 0), 32607, ("5090",)),
    Preset(
        "RTXPRO6000",
        "NVIDIA RTX PRO 6000 Blackwell Server Edition",
        (12, 0),
        97887,
        ("RTX-PRO-6000",),
    ),
    Preset("GB10", "NVIDIA GB10", (12, 1), 122570, ("DGX-SPARK", "SPARK")),
)

DEFAULT_PLANNING = "H100x8"

_SPEC = re.compile(r"^\s*(?P<name>[A-Za-z0-9 _.\-]+?)\s*(?:[x×*]\s*(?P<count>\d+))?\s*$", re.I)


def _norm(text: str) -> str:
    return re.sub(r"[\s_\-]", "", text).upper()


def find_preset(name: str) -> Preset | None:
    wanted = _norm(name)
    for p in PRESETS:
        if wanted == _norm(p.key) or wanted in (_norm(a) for a in p.aliases):
            return p
    return None


def preset_names() -> list[str]:
    return [p.key for p in PRESETS]


def parse_gpu_spec(spec: str, cuda_version: str = DEFAULT_CUDA) -> GpuFacts:
    """'H100x8' -> planning facts for eight H100s. Raises UserError with the way out."""
    m = _SPEC.match(spec or "")
    if not m:
        raise UserError(
            f"cannot read --gpu {spec!r}: write NAMExCOUNT, for example H100x8 or RTX5090x1"
        )
    preset = find_preset(m.group("name"))
    if preset is None:
        close = difflib.get_close_matches(
            _norm(m.group("name")), [_norm(p.key) for p in PRESETS], n=1
        )
        hint = (
            f"did you mean {next(p.key for p in PRESETS if _norm(p.key) == close[0])}? "
            if close
            else ""
        )
        raise UserError(
            f"unknown GPU {m.group('name')!r} in --gpu {spec}: {hint}"
            f"the presets are {', '.join(preset_names())}"
        )
    count = int(m.group("count") or 1)
    if not 1 <= count <= 64:
        raise UserError(f"--gpu {spec}: the count must be between 1 and 64")
    return planning_facts(preset, count, cuda_version=cuda_version)


def planning_facts(preset: Preset, count: int, *, cuda_version: str = DEFAULT_CUDA) -> GpuFacts:
    devices = tuple(
        GpuDevice(
            index=i,
            name=preset.name,
            memory_total=preset.memory_bytes,
            capability=preset.capability,
            uuid=f"GPU-planning-{preset.key.lower()}-{i}",
            memory_used=0,
            memory_free=preset.memory_bytes,
        )
        for i in range(count)
    )
    return GpuFacts(
        mode=GpuMode.PLANNING,
        devices=devices,
        driver_version=DEFAULT_DRIVER,
        cuda_version=cuda_version,
        versions_assumed=True,
        status=f"planning mode: {count}× {preset.name} (sm{preset.capability[0]}{preset.capability[1]}, {round(preset.memory_mib / 1024)} GiB)",
        preset=f"{preset.key}x{count}",
    )
