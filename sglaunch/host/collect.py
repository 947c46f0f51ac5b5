"""The host facts, read from this machine: one function per fact, each bounded and quiet.

Every collector returns what it found, or None with a note saying why; none raises for an
odd host (no NVML, an unreadable /proc, a name that does not resolve, an interpreter that
hangs). `collect_host_facts` calls them all; tests replace any of them through `Collectors`.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import json
import os
import resource
import shutil
import socket
import struct
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from sglaunch.errors import UserError
from sglaunch.facts.hf_cache import hf_cache_dirs
from sglaunch.facts.model import ModelNotCached, resolve_model_dir
from sglaunch.memory.weights import read_safetensors_header, safetensors_payload_bytes
from sglaunch.validators.rules.host.checks import DEFAULT_HOST, nodes_of, ports_to_bind, split_addr
from sglaunch.validators.rules.host.facts import (
    UNLIMITED,
    Checkpoint,
    GpuHeld,
    HostFacts,
    PortUse,
    PythonPackages,
    Rendezvous,
    Shard,
)

PROBE_TIMEOUT = 20.0  # seconds for the launch interpreter to list its packages
DNS_TIMEOUT = 5.0
# the names in sglang's Requires-Dist whose exact pins are checked: its kernels and torch
PINNED_PREFIXES = ("flashinfer", "sgl-kernel", "sglang-kernel", "torch")
ENV_NAMES = (
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "CUDA_VISIBLE_DEVICES",
)

# Run under the launch interpreter: package versions through importlib.metadata, and
# torch's CUDA build read from torch/version.py as text (importing torch takes seconds
# and initialises CUDA libraries; the file is what torch.version.cuda returns).
_PROBE = r"""
import json, os, re, importlib.util
from importlib import metadata as md
def ver(n):
    try:
        return md.version(n)
    except Exception:
        return None
out = {"sglang": ver("sglang"), "torch": ver("torch"), "torch_cuda": None, "requires": [], "installed": {}}
try:
    spec = importlib.util.find_spec("torch")
    locs = list(spec.submodule_search_locations or []) if spec else []
    if locs:
        src = open(os.path.join(locs[0], "version.py"), encoding="utf-8").read()
        m = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", src, re.M)
        out["torch_cuda"] = m.group(1) if m else None
except Exception:
    pass
if out["sglang"]:
    try:
        out["requires"] = md.requires("sglang") or []
    except Exception:
        pass
for req in out["requires"]:
    name = re.split(r"[\s\[<>=!~;(]", req.strip(), maxsplit=1)[0]
    if name:
        out["installed"][name] = ver(name)
print(json.dumps(out))
"""


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def sglang_pins(requires: Iterable[str]) -> list[tuple[str, str]]:
    """(name, version) for each unconditional `name[extra]==version` that is a kernel or torch."""
    out: list[tuple[str, str]] = []
    for req in requires:
        spec, _, marker = req.partition(";")
        if "extra" in marker:
            continue
        name, sep, version = spec.partition("==")
        name = name.split("[")[0].strip()
        version = version.split(",")[0].strip()
        if not sep or not version or any(c in version for c in "*<>!~"):
            continue
        key = _norm(name)
        # torch itself, not torchaudio or torch-memory-saver
        if key.startswith(PINNED_PREFIXES) and (key == "torch" or not key.startswith("torch")):
            out.append((name, version))
    return out


def read_packages(python: str, timeout: float = PROBE_TIMEOUT) -> PythonPackages:
    """The launch interpreter's sglang, torch (and its CUDA build) and sglang's pinned kernels."""
    try:
        done = subprocess.run(
            [python, "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return PythonPackages(python, error=f"no answer in {timeout:g} s")
    except OSError as exc:
        return PythonPackages(python, error=exc.strerror or str(exc))
    try:
        data = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return PythonPackages(python, error=last[:200])
    installed = {str(k): (str(v) if v else None) for k, v in dict(data["installed"]).items()}
    pins = sglang_pins(str(r) for r in data.get("requires") or [])
    by_norm = {_norm(k): v for k, v in installed.items()}
    return PythonPackages(
        python,
        sglang=data.get("sglang"),
        torch=data.get("torch"),
        torch_cuda=data.get("torch_cuda"),
        pins=tuple(pins),
        installed=MappingProxyType({n: by_norm.get(_norm(n)) for n, _ in pins}),
    )


@dataclass(frozen=True)
class NvmlFacts:
    driver_cuda: str | None = None
    error: str = ""
    count: int | None = None
    uuids: tuple[str, ...] = ()
    held: tuple[GpuHeld, ...] = ()


def read_nvml(nvml: Any | None = None) -> NvmlFacts:
    """The driver's CUDA version (nvmlSystemGetCudaDriverVersion), the GPUs, and the memory
    other processes hold on each; the reason when NVML is not there."""
    if nvml is None:
        try:
            import pynvml  # heavy, and absent on hosts without the NVIDIA stack
        except ImportError:
            return NvmlFacts(error="nvidia-ml-py is not installed")
        nvml = pynvml
    try:
        nvml.nvmlInit()
    except Exception as exc:
        name = type(exc).__name__
        if "LibraryNotFound" in name or "libnvidia-ml" in str(exc):
            return NvmlFacts(error="no NVIDIA driver: libnvidia-ml.so is missing")
        return NvmlFacts(error=f"NVML did not start ({str(exc) or name})")
    try:
        # the _v2 name is the same call in older bindings
        get = getattr(nvml, "nvmlSystemGetCudaDriverVersion", None)
        version = int((get or nvml.nvmlSystemGetCudaDriverVersion_v2)())
        cuda = f"{version // 1000}.{(version % 1000) // 10}"
        count = int(nvml.nvmlDeviceGetCount())
        uuids: list[str] = []
        held: list[GpuHeld] = []
        for i in range(count):
            handle = nvml.nvmlDeviceGetHandleByIndex(i)
            uuid = nvml.nvmlDeviceGetUUID(handle)
            uuids.append(uuid.decode() if isinstance(uuid, bytes) else str(uuid))
            mem = nvml.nvmlDeviceGetMemoryInfo(handle)
            procs = _gpu_processes(nvml, handle)
            held.append(GpuHeld(i, int(mem.used), int(mem.total), procs))
        return NvmlFacts(cuda, count=count, uuids=tuple(uuids), held=tuple(held))
    except Exception as exc:
        return NvmlFacts(error=f"NVML error ({str(exc) or type(exc).__name__})")
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()


def _gpu_processes(nvml: Any, handle: Any) -> tuple[str, ...]:
    try:
        procs = nvml.nvmlDeviceGetComputeRunningProcesses(handle)
    except Exception:
        return ()
    return tuple(_process(int(p.pid)) for p in procs[:4])


def _process(pid: int) -> str:
    import psutil  # only to name a process that holds something

    try:
        return f"pid {pid} ({psutil.Process(pid).name()})"
    except Exception:
        return f"pid {pid}"


def resolve(name: str, timeout: float = DNS_TIMEOUT) -> tuple[tuple[str, ...], str]:
    """(addresses, "") or ((), why): getaddrinfo in a thread, given up after `timeout`."""
    result: list[Any] = []

    def lookup() -> None:
        try:
            result.append(socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP))
        except (OSError, UnicodeError) as exc:
            result.append(exc)

    worker = threading.Thread(target=lookup, daemon=True)
    worker.start()
    worker.join(timeout)
    if not result:
        return (), f"{name} does not resolve (no answer in {timeout:g} s)"
    found = result[0]
    if isinstance(found, Exception):
        why = found.strerror if isinstance(found, OSError) and found.strerror else str(found)
        return (), f"{name} does not resolve ({why})"
    addrs: list[str] = []
    for *_, sockaddr in found:
        if sockaddr[0] not in addrs:
            addrs.append(str(sockaddr[0]))
    return tuple(addrs), ""


def _bind(host: str, port: int) -> OSError | None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as s:
            # as uvicorn binds: a port in TIME_WAIT is free to it
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((host, port))
    except OSError as exc:
        return exc
    return None


def port_holder(port: int) -> str:
    """Who listens on `port`: "pid N (name)" where the OS tells, else ""."""
    import psutil  # the socket table with owners; only when a port is taken

    try:
        conns = psutil.net_connections(kind="inet")
    except (psutil.Error, OSError):
        return ""
    for c in conns:
        if c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN:
            return _process(c.pid) if c.pid else ""
    return ""


def probe_ports(ports: Iterable[tuple[int, str]], host: str) -> tuple[PortUse, ...]:
    """Try to bind each port as sglang will: the HTTP ports on `host`, the rest everywhere."""
    out: list[PortUse] = []
    for port, purpose in ports:
        where = host if purpose.startswith(("--port", "--grpc")) else "0.0.0.0"
        exc = _bind(where, port)
        if exc is None:
            out.append(PortUse(port, purpose, True))
        elif exc.errno == errno.EADDRINUSE:
            alt = _free_near(where, port) if purpose.startswith("--port") else None
            out.append(PortUse(port, purpose, False, port_holder(port), alternative=alt))
        else:
            out.append(PortUse(port, purpose, False, error=exc.strerror or str(exc)))
    return tuple(out)


def _free_near(host: str, port: int) -> int | None:
    for candidate in range(port + 1, min(port + 100, 65535)):
        if _bind(host, candidate) is None:
            return candidate
    return None


def read_shm(path: Path = Path("/dev/shm")) -> tuple[int | None, str]:
    try:
        st = os.statvfs(path)
    except OSError as exc:
        return None, f"{path}: {exc.strerror or exc}; its size was not checked"
    return st.f_frsize * st.f_blocks, ""


def read_meminfo(path: Path = Path("/proc/meminfo")) -> tuple[int | None, int | None, str]:
    """(MemTotal, MemAvailable) in bytes from /proc/meminfo, or the reason it is unreadable."""
    try:
        text = path.read_text(encoding="ascii", errors="replace")[:65536]
    except OSError as exc:
        return None, None, f"{path}: {exc.strerror or exc}; host memory was not checked"
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            values[key.strip()] = int(parts[0]) * 1024
    total = values.get("MemTotal")
    if total is None:
        return None, None, f"{path} has no MemTotal; host memory was not checked"
    return total, values.get("MemAvailable"), ""


def read_memlock() -> int | None:
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    except (OSError, ValueError):
        return None
    return UNLIMITED if soft == resource.RLIM_INFINITY else int(soft)


def read_infiniband(path: Path = Path("/sys/class/infiniband")) -> tuple[str, ...]:
    try:
        return tuple(sorted(os.listdir(path)))
    except OSError:
        return ()


def local_addresses() -> tuple[str, ...]:
    import psutil  # the host's interface addresses

    out: list[str] = []
    try:
        for addrs in psutil.net_if_addrs().values():
            out += [a.address.split("%")[0] for a in addrs if a.family in (2, 10)]
    except (psutil.Error, OSError):
        pass
    return tuple(dict.fromkeys(out))


def read_rendezvous(addr: str, timeout: float = DNS_TIMEOUT) -> Rendezvous:
    host, port = split_addr(addr)
    if not host:
        return Rendezvous(addr, port, error="has no host")
    addrs, error = resolve(host, timeout)
    return Rendezvous(host, port, addrs, local_addresses(), error)


def _expected_size(path: Path) -> tuple[int | None, str]:
    """Bytes a safetensors file must have (8 + header + payload), from its header."""
    header, problem = read_safetensors_header(path)
    if header is None:
        return None, problem or "has no readable header"
    try:
        with path.open("rb") as fh:
            (n,) = struct.unpack("<Q", fh.read(8))
    except (OSError, struct.error) as exc:
        return None, f"cannot be read ({exc})"
    payload = safetensors_payload_bytes(path)
    return (8 + n + payload if payload is not None else None), ""


def read_checkpoint(source: str, env: Mapping[str, str]) -> Checkpoint:
    """The shards the launch will load, each present and as large as its header says; for a
    model sglang downloads, the free space where it goes."""
    try:
        folder = resolve_model_dir(source, env)
    except ModelNotCached:
        return _download(source, env, hf_cache_dirs(env)[0])
    except UserError as exc:
        return Checkpoint(source, True, problem=exc.message)
    index = folder / "model.safetensors.index.json"
    if not index.is_file():
        files = sorted(folder.glob("*.safetensors"))
        shards = tuple(_shard(folder, f.name) for f in files)
        total = _total(shards)
        return Checkpoint(source, True, str(folder), "", shards, total)
    try:
        data = json.loads(index.read_text(encoding="utf-8"))
        names = sorted({str(v) for v in dict(data.get("weight_map") or {}).values()})
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)[:120]
        return Checkpoint(source, True, str(folder), index.name, problem=f"{index.name}: {why}")
    shards = tuple(_shard(folder, n) for n in names if "/" not in n and "\\" not in n)
    return Checkpoint(source, True, str(folder), index.name, shards, _total(shards))


def _shard(folder: Path, name: str) -> Shard:
    path = folder / name
    try:
        size = path.stat().st_size
    except OSError:
        return Shard(name, None, None)
    expected, problem = _expected_size(path)
    if expected is not None and size < expected:
        problem = ""
    return Shard(name, expected, size, problem if expected is None else "")


def _total(shards: tuple[Shard, ...]) -> int | None:
    sizes = [s.expected for s in shards]
    return sum(s for s in sizes if s is not None) if shards and None not in sizes else None


def _download(source: str, env: Mapping[str, str], cache: Path) -> Checkpoint:
    where = cache
    while not where.exists() and where != where.parent:
        where = where.parent
    try:
        free: int | None = shutil.disk_usage(where).free
    except OSError:
        free = None
    return Checkpoint(source, False, download_dir=str(cache), disk_free=free)


def host_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The variables the host checks read, in either case; never any other (secrets)."""
    wanted = {n.lower() for n in ENV_NAMES}
    return {k: v for k, v in environ.items() if k.lower() in wanted}


@dataclass
class Collectors:
    """The fact readers `collect_host_facts` calls; tests replace any of them."""

    packages: Callable[[str], PythonPackages] = read_packages
    nvml: Callable[[], NvmlFacts] = read_nvml
    ports: Callable[[Iterable[tuple[int, str]], str], tuple[PortUse, ...]] = probe_ports
    shm: Callable[[], tuple[int | None, str]] = read_shm
    meminfo: Callable[[], tuple[int | None, int | None, str]] = read_meminfo
    checkpoint: Callable[[str, Mapping[str, str]], Checkpoint] = read_checkpoint
    rendezvous: Callable[[str], Rendezvous] = read_rendezvous
    memlock: Callable[[], int | None] = read_memlock
    infiniband: Callable[[], tuple[str, ...]] = read_infiniband
    extra_notes: list[str] = field(default_factory=list)


def collect_host_facts(
    flags: Mapping[str, Any],
    *,
    environ: Mapping[str, str],
    python: str | None,
    model: str | None,
    nodes: int = 1,
    collectors: Collectors | None = None,
) -> HostFacts:
    """Everything the host checks read, for the launch `flags` in `environ`."""
    c = collectors or Collectors()
    notes: list[str] = list(c.extra_notes)
    nv = c.nvml()
    shm, why = c.shm()
    notes += [why] if why else []
    total, avail, why = c.meminfo()
    notes += [why] if why else []
    host = str(flags.get("host") or DEFAULT_HOST)
    unresolved = ""
    if not _is_address(host):
        addrs, unresolved = resolve(host)
        host = addrs[0] if addrs else host
        notes += [f"--host {unresolved}; its ports were not checked"] if unresolved else []
    ports = c.ports(ports_to_bind(flags, nodes), host) if not unresolved else ()
    dist = flags.get("dist_init_addr")
    multi = nodes_of(flags, nodes) > 1
    facts = HostFacts(
        packages=c.packages(python) if python else None,
        driver_cuda=nv.driver_cuda,
        nvml_error=nv.error,
        gpu_count=nv.count,
        gpu_uuids=nv.uuids,
        gpu_held=nv.held,
        ports=ports,
        env=MappingProxyType(host_env(environ)),
        shm_bytes=shm,
        mem_total=total,
        mem_available=avail,
        checkpoint=c.checkpoint(model, environ) if model else None,
        nodes=nodes_of(flags, nodes),
        rendezvous=c.rendezvous(dist) if multi and isinstance(dist, str) and dist else None,
        memlock=c.memlock() if multi else None,
        infiniband=c.infiniband() if multi else (),
    )
    return replace(facts, notes=tuple(notes))


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True
