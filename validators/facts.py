"""The facts the rules read: the model, the GPUs, the flags and the environment.

Plain frozen data with no I/O. The core (`sglaunch.facts`) fills them from NVML,
Hugging Face configs and the flag parser; tests build them by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from sglaunch.validators.memory.baseline import MemoryFacts
from sglaunch.validators.memory.shapes import ModelShapes, WeightBreakdown
from sglaunch.validators.release_spans import semantics

GIB = 1024**3


def arch_family(major: int, minor: int) -> str:
    """The marketing architecture for a compute capability, as NVIDIA names it."""
    if major == 7:
        return "Turing" if minor >= 5 else "Volta"
    if major == 8:
        return "Ada" if minor == 9 else "Ampere"
    if major == 9:
        return "Hopper"
    if major in (10, 11, 12):
        return "Blackwell"
    if major < 7:
        return "Pascal or older"
    return "unknown"


def parse_version(text: str | None) -> tuple[int, ...]:
    """'12.8' -> (12, 8); anything unparsable -> ()."""
    if not text:
        return ()
    parts: list[int] = []
    for piece in str(text).split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    name: str
    used_memory: int | None = None


@dataclass(frozen=True)
class GpuDevice:
    index: int
    name: str
    memory_total: int
    capability: tuple[int, int]
    uuid: str = ""
    memory_used: int | None = None
    memory_free: int | None = None
    utilization: int | None = None  # percent
    temperature: int | None = None  # Celsius
    power_draw: float | None = None  # watts
    power_limit: float | None = None
    processes: tuple[GpuProcess, ...] = ()
    pci_bus_id: str = ""
    nvlink_peers: tuple[int, ...] = ()

    @property
    def arch(self) -> str:
        return arch_family(*self.capability)

    @property
    def sm(self) -> str:
        return f"sm{self.capability[0]}{self.capability[1]}"

    @property
    def memory_total_gib(self) -> float:
        return self.memory_total / GIB


class GpuMode(StrEnum):
    NVML = "nvml"
    PLANNING = "planning"


@dataclass(frozen=True)
class GpuFacts:
    """The GPUs sglang would see: real ones from NVML, or a planning preset."""

    mode: GpuMode
    devices: tuple[GpuDevice, ...] = ()
    driver_version: str = ""
    # The CUDA version the platform reports; sglang compares torch.version.cuda,
    # which never exceeds what the driver supports.
    cuda_version: str = ""
    status: str = ""
    preset: str = ""
    # planning: driver_version and cuda_version are a preset's assumptions (the rules and the
    # oracle's emulation need some), never to be reported as this machine's
    versions_assumed: bool = False
    # the machines one server spans (sglang's --nnodes); `devices` are ONE node's GPUs,
    # every node alike
    nodes: int = 1

    @property
    def count(self) -> int:
        """The GPUs of one node."""
        return len(self.devices)

    @property
    def primary(self) -> GpuDevice | None:
        return self.devices[0] if self.devices else None

    @property
    def capability(self) -> tuple[int, int] | None:
        return self.primary.capability if self.primary else None

    def _cuda_at_least(self, version: tuple[int, int]) -> bool:
        return parse_version(self.cuda_version)[:2] >= version

    def has_major(self, majors: tuple[int, ...], cuda: tuple[int, int]) -> bool:
        """sglang's `_check_cuda_device_version`: device 0's major and the CUDA version."""
        cap = self.capability
        return cap is not None and cap[0] in majors and self._cuda_at_least(cuda)

    @property
    def is_blackwell(self) -> bool:
        # srt/utils/common.py:297: majors 10, 11, 12 with CUDA >= 12.8
        return self.has_major((10, 11, 12), (12, 8))

    @property
    def is_sm100(self) -> bool:
        # srt/utils/common.py: is_sm100_supported, major 10 with CUDA >= 12.8
        return self.has_major((10,), (12, 8))

    @property
    def is_hopper(self) -> bool:
        return self.is_sm90

    @property
    def is_sm90(self) -> bool:
        # srt/utils/common.py: is_sm90 needs CUDA >= 12.3
        return self.has_major((9,), (12, 3))

    @property
    def is_sm120(self) -> bool:
        return self.has_major((12,), (12, 8))

    def describe(self) -> str:
        if not self.devices:
            return "no GPU"
        names: dict[str, int] = {}
        for d in self.devices:
            names[d.name] = names.get(d.name, 0) + 1
        return self.across_nodes(", ".join(f"{n}× {name}" for name, n in names.items()))

    def across_nodes(self, node: str) -> str:
        """`node` (one node's GPUs, as written) on this many machines: '2 nodes × 8× H100'."""
        return f"{self.nodes} nodes × {node}" if self.nodes > 1 else node

    def on_nodes(self, nodes: int) -> GpuFacts:
        """These GPUs as each of `nodes` machines; the status names the topology too."""
        if nodes == self.nodes:
            return self
        spread = replace(self, nodes=nodes)
        old, new = self.describe(), spread.describe()
        status = self.status.replace(old, new, 1) if old in self.status else self.status
        return replace(spread, status=status)


class FlagIssueKind(StrEnum):
    UNKNOWN = "unknown"
    AMBIGUOUS = "ambiguous"
    INVALID_VALUE = "invalid-value"
    INVALID_CHOICE = "invalid-choice"
    MISSING_VALUE = "missing-value"
    UNEXPECTED_VALUE = "unexpected-value"


@dataclass(frozen=True)
class FlagIssue:
    """A problem the flag parser found; `message` is argparse's own text for it."""

    kind: FlagIssueKind
    option: str
    message: str
    dest: str | None = None
    value: str | None = None
    suggestions: tuple[str, ...] = ()
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
class ModelFacts:
    """What sglang reads from a model's Hugging Face config (never the weights)."""

    source: str
    architectures: tuple[str, ...] = ()
    model_type: str = ""
    num_hidden_layers: int | None = None
    num_attention_heads: int | None = None
    num_key_value_heads: int | None = None
    hidden_size: int | None = None
    head_dim: int | None = None
    vocab_size: int | None = None
    context_length: int | None = None  # as sglang derives it (get_context_length)
    dtype: str | None = None
    quantization: str | None = None
    is_multimodal: bool = False
    # MLA (DeepSeek-style latent attention): KV heads mean something else there
    is_mla: bool = False
    # sglang 0.5.23 has a native model class for config.architectures[0]
    sglang_native: bool | None = None
    # MiniCPM SALA (sglang's MiniCPMHybridConfig, model_type "minicpm_sala")
    mixer_types: tuple[str, ...] | None = None
    has_minicpm_sparse_attention: bool = False
    has_lightning_layers: bool = False
    # Remote code
    has_auto_map: bool = False
    transformers_knows_type: bool | None = None
    needs_remote_code: bool = False
    loaded_with: str = "json"  # "transformers" or "json"
    # Where sglang's own config class rejects this config (message, ref)
    config_error: str | None = None
    config_error_ref: str = ""
    weight_bytes: int | None = None
    weight_source: str | None = None
    config_path: str = ""
    notes: tuple[str, ...] = ()
    # the memory plan's inputs: attention/state shapes and per-tensor weight groups
    shapes: ModelShapes | None = None
    weights: WeightBreakdown | None = None

    @property
    def architecture(self) -> str:
        return self.architectures[0] if self.architectures else ""

    @property
    def is_minicpm_sala(self) -> bool:
        return self.model_type == "minicpm_sala"


# sglang 0.5.23 defaults for the flags the built-in rules read, used when the
# caller gives no schema defaults (tests, the bare rule engine). The flags an
# older release lacks (attn_dp_size before 0.5.22) keep the value that means
# "off", which is what that release does.
FALLBACK_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        "tp_size": 1,
        "pp_size": 1,
        "dp_size": 1,
        "attn_dp_size": 1,
        "ep_size": 1,
        "nnodes": 1,
        "enable_dp_attention": False,
        "ep_join_mode": None,
        "enable_hierarchical_cache": False,
        "disable_radix_cache": False,
        "attention_backend": None,
        "prefill_attention_backend": None,
        "decode_attention_backend": None,
        "disaggregation_mode": "null",
        "mem_fraction_static": None,
        "context_length": None,
        "trust_remote_code": False,
        "kv_cache_dtype": "auto",
        "base_gpu_id": 0,
        "gpu_id_step": 1,
        "model_path": None,
        "device": None,
    }
)


@dataclass(frozen=True)
class CheckInput:
    """Everything one validation reads. `flags` holds only what the user set."""

    flags: Mapping[str, Any]
    gpu: GpuFacts
    model: ModelFacts | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)
    flag_issues: tuple[FlagIssue, ...] = ()
    # CLI spelling per dest, for messages ("tp_size" -> "--tp-size")
    cli_names: Mapping[str, str] = field(default_factory=dict)
    # The sglang release the verdict is for (validators/release_spans.py); its rules
    # and their semantics follow it. "" means the newest supported release.
    sglang_version: str = ""
    # start-up memory beyond the GPU facts (calibration, --assume-free-gib)
    memory: MemoryFacts | None = None

    @property
    def release(self) -> str:
        """The supported release whose semantics the rules use for this check."""
        return semantics(self.sglang_version)

    def is_set(self, dest: str) -> bool:
        return dest in self.flags

    def value(self, dest: str) -> Any:
        if dest in self.flags:
            return self.flags[dest]
        if dest in self.defaults:
            return self.defaults[dest]
        return FALLBACK_DEFAULTS.get(dest)

    def cli(self, dest: str) -> str:
        return self.cli_names.get(dest) or "--" + dest.replace("_", "-")

    def env_bool(self, name: str, default: bool = False) -> bool:
        """sglang's EnvBool: true/1/yes/y, false/0/no/n; anything else warns and uses the default."""
        raw = self.env.get(name)
        if raw is None:
            return default
        low = raw.lower()
        if low in ("true", "1", "yes", "y"):
            return True
        if low in ("false", "0", "no", "n"):
            return False
        return default
