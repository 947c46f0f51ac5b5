"""What the host around a launch is like: plain frozen data, filled by `sglaunch.host`.

Every field the collectors could not read is None (or empty) with the reason in `notes`,
so a check can tell "not there" from "not known" and say which.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True)
class PythonPackages:
    """The launch interpreter's packages, as that interpreter reports them."""

    python: str
    # why the interpreter could not be asked (not found, timed out, crashed); "" when it answered
    error: str = ""
    sglang: str | None = None
    torch: str | None = None
    torch_cuda: str | None = None  # torch.version.cuda: None for a CPU build
    # (distribution, version) that sglang's METADATA pins with ==, unconditional ones only
    pins: tuple[tuple[str, str], ...] = ()
    # distribution -> installed version (None: not installed), for every pinned name
    installed: Mapping[str, str | None] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class PortUse:
    port: int
    purpose: str  # "--port (the HTTP server)", "dist-init port (rendezvous)", ...
    free: bool
    # who holds it when it is taken: "pid 123 (python)", or "" when that is not known
    holder: str = ""
    # a bind failure other than "in use" (permission, no such address): the OS's words
    error: str = ""
    alternative: int | None = None  # a port that was free when this one was found taken


@dataclass(frozen=True)
class Shard:
    name: str
    # bytes the file must have (8 + header + payload), None when its header is unreadable
    expected: int | None
    actual: int | None  # None: the file is not there
    problem: str = ""  # the header's own problem, when it has one


@dataclass(frozen=True)
class Checkpoint:
    source: str
    local: bool  # a folder here (or in the Hugging Face cache); else sglang downloads it
    path: str = ""
    index: str = ""  # the index file read, "" without one
    shards: tuple[Shard, ...] = ()
    weight_bytes: int | None = None
    # a model sglang will download: its size when known, and the free space where it goes
    download_bytes: int | None = None
    download_dir: str = ""
    disk_free: int | None = None
    problem: str = ""  # the index unreadable, the folder unreadable


@dataclass(frozen=True)
class GpuHeld:
    """GPU memory other processes already hold on one device (NVML)."""

    index: int
    used: int
    total: int
    processes: tuple[str, ...] = ()  # "pid 42 (python)"


@dataclass(frozen=True)
class Rendezvous:
    host: str
    port: int | None
    addresses: tuple[str, ...] = ()  # what the name resolves to
    local_addresses: tuple[str, ...] = ()  # this host's own addresses
    error: str = ""  # why it did not resolve (or did not parse)


UNLIMITED = -1


@dataclass(frozen=True)
class HostFacts:
    packages: PythonPackages | None = None
    # NVML: the driver's CUDA ("12.8"), or None with the reason in nvml_error
    driver_cuda: str | None = None
    nvml_error: str = ""
    gpu_count: int | None = None  # every GPU the driver has, before CUDA_VISIBLE_DEVICES
    gpu_uuids: tuple[str, ...] = ()
    gpu_held: tuple[GpuHeld, ...] = ()
    ports: tuple[PortUse, ...] = ()
    # the variables the server will see (the launch's own over this shell's)
    env: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    shm_bytes: int | None = None
    mem_total: int | None = None
    mem_available: int | None = None
    checkpoint: Checkpoint | None = None
    nodes: int = 1
    rendezvous: Rendezvous | None = None
    memlock: int | None = None  # bytes, UNLIMITED, or None when unknown
    infiniband: tuple[str, ...] = ()  # /sys/class/infiniband entries
    # what a collector could not read, one line each ("/proc/meminfo: permission denied")
    notes: tuple[str, ...] = ()
