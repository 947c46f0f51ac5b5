"""The host checks: pure functions over (flags, host facts) -> findings.

`flags` are sglang dest names with the values the launch sets (unset flags take sglang
0.5.23's defaults here). Nothing here reads the host: `sglaunch.host` collects the facts,
and tests hand in their own.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from sglaunch.validators.findings import Finding, Fix, Severity, sort_findings
from sglaunch.validators.rules.host.facts import UNLIMITED, HostFacts, PortUse

GIB = 1024**3
MIB = 1024**2

DEFAULT_PORT = 30000  # srt/arg_groups/fields/serving.py:65-66
DEFAULT_HOST = "127.0.0.1"
# srt/server_args.py:728-729: attention DP's ZMQ block and its node-0 handshake
ZMQ_TCP_PORT_DELTA = 233
DP_ATTENTION_HANDSHAKE_PORT_DELTA = 13

# /dev/shm: NCCL's intra-node SHM transport maps buffers of NCCL_BUFFSIZE (4 MiB) per
# channel for every pair of local ranks, and sglang's own broadcast queue sits beside them.
# Docker's 64 MB default fails as soon as tp > 1 ("Error while creating shared memory
# segment"); below SHM_MIN_BYTES the failure is near certain, below SHM_PER_RANK_BYTES per
# local rank it depends on the channel count NCCL picks (sglang's docker docs use 16-32 GB).
SHM_MIN_BYTES = 512 * MIB
SHM_PER_RANK_BYTES = 1 * GIB

# another process holding more than this on a GPU the launch uses is worth a word
GPU_HELD_BYTES = 1 * GIB

PROXY_NAMES = ("http_proxy", "all_proxy")
HTTPS_PROXY = "https_proxy"


def _int(flags: Mapping[str, Any], dest: str, default: int) -> int:
    value = flags.get(dest)
    if isinstance(value, bool) or not isinstance(value, int):
        return default
    return value


def _num(flags: Mapping[str, Any], dest: str) -> float | None:
    value = flags.get(dest)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def nodes_of(flags: Mapping[str, Any], nodes: int = 1) -> int:
    """The node count: sglang's --nnodes when set, else what the caller knows."""
    return max(1, _int(flags, "nnodes", nodes))


def is_head(flags: Mapping[str, Any]) -> bool:
    return _int(flags, "node_rank", 0) == 0


def local_ranks(flags: Mapping[str, Any], nodes: int = 1) -> int:
    """GPU processes on this node: tp × pp (× dp without attention DP), split over nodes."""
    tp = max(1, _int(flags, "tp_size", 1))
    pp = max(1, _int(flags, "pp_size", 1))
    dp = max(1, _int(flags, "dp_size", 1))
    world = tp * pp * (1 if flags.get("enable_dp_attention") else dp)
    return max(1, math.ceil(world / nodes_of(flags, nodes)))


def split_addr(addr: str) -> tuple[str, int | None]:
    """'host:port' / '[v6]:port' -> (host, port); a port that is not a number -> None."""
    addr = addr.strip()
    if addr.startswith("["):
        host, _, rest = addr[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port = addr.rpartition(":")
        if not host:
            host, port = port, ""
    return host, int(port) if port.isdigit() and int(port) <= 65535 else None


def ports_to_bind(flags: Mapping[str, Any], nodes: int = 1) -> list[tuple[int, str]]:
    """(port, purpose) for every TCP port the launch binds on this node (multinode.md §3)."""
    out: list[tuple[int, str]] = []
    port = _int(flags, "port", DEFAULT_PORT)
    head = is_head(flags)
    out.append((port, "--port (the HTTP server)" if head else "--port (the health server)"))
    for dest, what in (("grpc_port", "--grpc-port"), ("gated_launch_port", "--gated-launch-port")):
        value = flags.get(dest)
        if isinstance(value, int) and not isinstance(value, bool) and (head or dest == "grpc_port"):
            out.append((value, what))
    dist = flags.get("dist_init_addr")
    d_port = split_addr(dist)[1] if isinstance(dist, str) and dist else None
    nccl = flags.get("nccl_port")
    if d_port is None and isinstance(nccl, int) and not isinstance(nccl, bool):
        out.append((nccl, "--nccl-port (the rendezvous)"))
    if d_port is not None and head:
        out.append((d_port, "the --dist-init-addr port (the rendezvous on the head)"))
    if flags.get("enable_dp_attention") and _int(flags, "dp_size", 1) > 1:
        if d_port is not None:
            base = d_port + 1 if d_port + 6 <= 65535 else d_port - 7
            handshake = d_port + DP_ATTENTION_HANDSHAKE_PORT_DELTA
        else:
            base = port + ZMQ_TCP_PORT_DELTA
            if base + 5 > 65535:
                base = port - ZMQ_TCP_PORT_DELTA
            handshake = port + DP_ATTENTION_HANDSHAKE_PORT_DELTA
        names = ("tokenizer", "detokenizer", "rpc", "metrics", "dp controller", "load snapshot")
        out += [(base + i, f"attention-DP {name} port") for i, name in enumerate(names)]
        if head:
            out.append((handshake, "attention-DP handshake port"))
    seen: set[int] = set()
    unique = []
    for p, what in out:
        if p not in seen and 0 < p <= 65535:
            seen.add(p)
            unique.append((p, what))
    return unique


# --- the checks ----------------------------------------------------------------------


@dataclass(frozen=True)
class HostInput:
    flags: Mapping[str, Any]
    facts: HostFacts
    nodes: int = 1
    source: str = ""  # the model as the user named it

    @property
    def gpu_host(self) -> bool:
        """NVML found GPUs: a launch here is a real one, and what it lacks is an error."""
        return self.facts.driver_cuda is not None and bool(self.facts.gpu_count)

    @property
    def ranks(self) -> int:
        return local_ranks(self.flags, self.nodes)


Check = Callable[[HostInput], Iterator[Finding]]
CHECKS: list[Check] = []


def check(func: Check) -> Check:
    CHECKS.append(func)
    return func


def host_checks(
    flags: Mapping[str, Any], facts: HostFacts, *, nodes: int = 1, source: str = ""
) -> list[Finding]:
    """Every host finding for this launch, errors first."""
    inp = HostInput(flags, facts, nodes, source)
    out: list[Finding] = []
    for func in CHECKS:
        out.extend(func(inp))
    return sort_findings(out)


def _finding(
    code: str,
    severity: Severity,
    message: str,
    *,
    flags: tuple[str, ...] = (),
    fixes: tuple[Fix, ...] = (),
    detail: str = "",
) -> Finding:
    return Finding(code, severity, message, flags=flags, fixes=fixes, ref="host", detail=detail)


def _install(python: str, *reqs: str) -> Fix:
    return Fix(label=f"{python} -m pip install {' '.join(repr(r) for r in reqs)}")


def _gib(n: float) -> str:
    return f"{n / GIB:.1f} GiB"


def _version_tuple(text: str | None) -> tuple[int, ...]:
    out: list[int] = []
    for piece in (text or "").split("."):
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        out.append(int(digits))
    return tuple(out)


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _same_version(installed: str, pinned: str) -> bool:
    # a local build tag (+cu128) is the same release as the pin
    return installed.split("+")[0] == pinned.split("+")[0]


@check
def packages(inp: HostInput) -> Iterator[Finding]:
    pk = inp.facts.packages
    if pk is None:
        return
    sev = Severity.ERROR if inp.gpu_host else Severity.WARNING
    if pk.error:
        yield _finding(
            "host-python-unusable",
            sev,
            f"cannot ask the launch interpreter {pk.python} for its packages: {pk.error}",
            fixes=(Fix(label="Name an interpreter with sglang: --sglang-python PATH"),),
        )
        return
    if pk.sglang is None:
        # an error on any host: with no sglang the launch stops at once, GPUs or not
        yield _finding(
            "host-sglang-missing",
            Severity.ERROR,
            f"{pk.python} has no sglang: the launch will fail at once",
            fixes=(_install(pk.python, "sglang"),),
        )
        return
    if pk.torch is None:
        yield _finding(
            "host-torch-missing",
            sev,
            f"{pk.python} has sglang {pk.sglang} but no torch",
            fixes=(_install(pk.python, *_pins_named(pk.pins, "torch")),),
        )
    yield from _cuda_build(inp)
    for name, pinned in pk.pins:
        installed = pk.installed.get(name)
        req = f"{name}=={pinned}"
        if installed is None:
            if name == "torch" and pk.torch is None:
                continue  # said above
            yield _finding(
                "host-package-missing",
                sev,
                f"sglang {pk.sglang} pins {req}, which {pk.python} does not have",
                fixes=(_install(pk.python, req),),
            )
        elif not _same_version(installed, pinned):
            yield _finding(
                "host-package-mismatch",
                sev,
                f"sglang {pk.sglang} pins {req}; {pk.python} has {name} {installed}",
                fixes=(_install(pk.python, req),),
            )


def _pins_named(pins: tuple[tuple[str, str], ...], name: str) -> list[str]:
    return [f"{n}=={v}" for n, v in pins if _norm(n) == name] or [name]


def _cuda_build(inp: HostInput) -> Iterator[Finding]:
    pk, facts = inp.facts.packages, inp.facts
    if pk is None or pk.torch is None:
        return
    if facts.driver_cuda is None:
        why = f" ({facts.nvml_error})" if facts.nvml_error else ""
        build = f"CUDA {pk.torch_cuda}" if pk.torch_cuda else "CPU only"
        yield _finding(
            "host-no-nvml",
            Severity.INFO,
            f"no NVML here{why}: torch {pk.torch} ({build}) not compared with the driver's CUDA",
        )
        return
    if pk.torch_cuda is None:
        if inp.gpu_host:
            yield _finding(
                "host-torch-cpu-only",
                Severity.ERROR,
                f"torch {pk.torch} in {pk.python} is a CPU build: sglang cannot use the GPUs",
                fixes=(
                    Fix(
                        label=f"{pk.python} -m pip install torch --index-url "
                        f"https://download.pytorch.org/whl/cu{_cu_tag(facts.driver_cuda)}"
                    ),
                ),
            )
        return
    if _version_tuple(pk.torch_cuda)[:2] > _version_tuple(facts.driver_cuda)[:2]:
        yield _finding(
            "host-torch-cuda-newer-than-driver",
            Severity.ERROR,
            f"torch {pk.torch} is built for CUDA {pk.torch_cuda}; the driver supports CUDA "
            f"{facts.driver_cuda} at most",
            fixes=(
                Fix(label="Upgrade the NVIDIA driver to one that supports CUDA " + pk.torch_cuda),
                Fix(
                    label=f"{pk.python} -m pip install torch --index-url "
                    f"https://download.pytorch.org/whl/cu{_cu_tag(facts.driver_cuda)}"
                ),
            ),
        )


def _cu_tag(cuda: str) -> str:
    parts = _version_tuple(cuda)[:2]
    return "".join(str(p) for p in parts) if parts else "128"


@check
def ports(inp: HostInput) -> Iterator[Finding]:
    port = _int(inp.flags, "port", DEFAULT_PORT)
    for use in inp.facts.ports:
        if use.free:
            continue
        if use.error:
            yield _finding(
                "host-port-unbindable",
                Severity.WARNING,
                f"port {use.port}, {use.purpose}: cannot bind it here ({use.error})",
                flags=_port_flags(use, port),
            )
            continue
        who = f"held by {use.holder}" if use.holder else "in use"
        fixes: tuple[Fix, ...] = ()
        if use.port == port and use.alternative is not None:
            fixes = (Fix(label=f"Use --port {use.alternative}", set={"port": use.alternative}),)
        yield _finding(
            "host-port-in-use",
            Severity.ERROR,
            f"port {use.port}, {use.purpose}, is {who}",
            flags=_port_flags(use, port),
            fixes=fixes or (Fix(label=f"Stop what holds port {use.port}, or choose another"),),
        )


def _port_flags(use: PortUse, port: int) -> tuple[str, ...]:
    if use.port == port:
        return ("port",)
    if "dist-init" in use.purpose or "attention-DP" in use.purpose:
        return ("dist_init_addr",) if "dist-init" in use.purpose else ("port",)
    for dest in ("grpc_port", "gated_launch_port", "nccl_port"):
        if dest.replace("_", "-") in use.purpose:
            return (dest,)
    return ()


def _env(env: Mapping[str, str], name: str) -> str:
    """A variable in either case, the lower case first (as urllib and requests read them)."""
    return env.get(name) or env.get(name.upper()) or ""


def bypassed(host: str, no_proxy: str) -> bool:
    """Whether `no_proxy` sends requests to `host` straight (urllib's and requests' rules,
    plus CIDR entries, which requests honours)."""
    host = host.strip("[]").lower()
    names = {host}
    if host in ("0.0.0.0", "::", "127.0.0.1", "localhost", "::1"):
        names |= {"127.0.0.1", "localhost"}
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if not entry:
            continue
        if entry == "*":
            return True
        entry = entry.split(":")[0] if entry.count(":") == 1 else entry
        for name in names:
            if name == entry.lstrip(".") or name.endswith("." + entry.lstrip(".")):
                return True
            if "/" in entry and _in_network(name, entry):
                return True
    return False


def _in_network(host: str, cidr: str) -> bool:
    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return False


@check
def proxy(inp: HostInput) -> Iterator[Finding]:
    env = inp.facts.env
    host = str(inp.flags.get("host") or DEFAULT_HOST)
    no_proxy = _env(env, "no_proxy")
    if bypassed(host, no_proxy):
        return
    shown_host = "127.0.0.1,localhost" if host in ("0.0.0.0", "::") else host
    fix = Fix(label=f"export no_proxy={_joined(no_proxy, shown_host)} (and NO_PROXY)")
    for name in PROXY_NAMES:
        value = _env(env, name)
        if value:
            yield _finding(
                "host-proxy-intercepts-warmup",
                Severity.ERROR,
                f"{name} is set and no_proxy does not name {host}: sglang's warm-up request "
                "goes through the proxy and fails (502)",
                flags=("host",),
                fixes=(fix, Fix(label=f"unset {name} {name.upper()} for the launch")),
            )
            return
    if _env(env, HTTPS_PROXY):
        yield _finding(
            "host-proxy-intercepts-warmup",
            Severity.WARNING,
            f"https_proxy is set and no_proxy does not name {host}: an https client of this "
            "server (or a later sglang) goes through the proxy",
            flags=("host",),
            fixes=(fix,),
        )


def _joined(no_proxy: str, host: str) -> str:
    return f"{no_proxy},{host}" if no_proxy else host


@check
def shm(inp: HostInput) -> Iterator[Finding]:
    size, ranks = inp.facts.shm_bytes, inp.ranks
    if size is None or ranks <= 1:
        return
    want = max(SHM_MIN_BYTES, ranks * SHM_PER_RANK_BYTES)
    if size >= want:
        return
    severity = Severity.ERROR if size < SHM_MIN_BYTES else Severity.WARNING
    yield _finding(
        "host-shm-too-small",
        severity,
        f"/dev/shm is {size / MIB:.0f} MiB; NCCL between {ranks} ranks on this node wants "
        f"{want / GIB:.0f} GiB or more",
        flags=("tp_size",),
        fixes=(
            Fix(label=f"docker run --shm-size {max(16, ranks * 2)}g … (or --ipc=host)"),
            Fix(label="mount -o remount,size=16G /dev/shm"),
        ),
        detail=(
            f"Thresholds: under {SHM_MIN_BYTES // MIB} MiB NCCL's shared-memory transport fails "
            f"to create its segments; sglaunch asks {SHM_PER_RANK_BYTES // GIB} GiB per local rank."
        ),
    )


@check
def host_memory(inp: HostInput) -> Iterator[Finding]:
    facts = inp.facts
    total, avail = facts.mem_total, facts.mem_available
    if total is None:
        return
    room = avail if avail is not None else total
    hicache = _num(inp.flags, "hicache_size") or 0.0
    ranks = inp.ranks
    if hicache > 0 and inp.flags.get("enable_hierarchical_cache"):
        need = hicache * GIB * ranks
        if need > room:
            each = int(room * 0.8 / ranks / GIB)
            yield _finding(
                "host-memory-hicache",
                Severity.ERROR if need > total else Severity.WARNING,
                f"--hicache-size {hicache:g} is per rank: {ranks} ranks on this node pin "
                f"{_gib(need)} of host memory; {_gib(room)} is available",
                flags=("hicache_size",),
                fixes=(
                    (Fix(label=f"Use --hicache-size {each}", set={"hicache_size": each}),)
                    if each > 0
                    else ()
                ),
            )
    ckpt = facts.checkpoint
    weights = ckpt.weight_bytes if ckpt is not None else None
    if weights and weights / nodes_of(inp.flags, inp.nodes) > room:
        per_node = weights / nodes_of(inp.flags, inp.nodes)
        yield _finding(
            "host-memory-weights",
            Severity.WARNING,
            f"loading reads {_gib(per_node)} of weights through host memory; "
            f"{_gib(room)} is available: the load will page and crawl, or be killed",
            fixes=(Fix(label="Free host memory, or add swap, before the launch"),),
        )


@check
def checkpoint(inp: HostInput) -> Iterator[Finding]:
    ck = inp.facts.checkpoint
    if ck is None:
        return
    if ck.problem:
        yield _finding(
            "host-checkpoint-unreadable",
            Severity.ERROR,
            f"the checkpoint in {ck.path or ck.source} cannot be checked: {ck.problem}",
            flags=("model_path",),
        )
    if not ck.local:
        yield from _download(inp)
        return
    missing = [s for s in ck.shards if s.actual is None]
    if missing:
        names = ", ".join(s.name for s in missing[:3]) + (" …" if len(missing) > 3 else "")
        yield _finding(
            "host-shard-missing",
            Severity.ERROR,
            f"{len(missing)} of {len(ck.shards)} shards named in {ck.index} are not in "
            f"{ck.path}: {names}",
            flags=("model_path",),
            fixes=(Fix(label=f"Download the checkpoint again: hf download {ck.source}"),),
        )
    for s in ck.shards:
        if s.actual is None:
            continue
        if s.problem:
            yield _finding(
                "host-shard-corrupt",
                Severity.ERROR,
                f"{s.name} {s.problem}",
                flags=("model_path",),
                fixes=(Fix(label=f"Download {s.name} again"),),
            )
        elif s.expected is not None and s.actual < s.expected:
            yield _finding(
                "host-shard-truncated",
                Severity.ERROR,
                f"{s.name} has {s.actual:,} bytes; its header says {s.expected:,} "
                "(an interrupted download)",
                flags=("model_path",),
                fixes=(Fix(label=f"Download {s.name} again"),),
            )
    if not ck.shards and not ck.index and ck.weight_bytes is None and not ck.problem:
        if inp.flags.get("load_format") == "dummy":
            return
        bundled = ck.source.startswith("example:")
        yield _finding(
            "host-no-weights",
            Severity.INFO if bundled else Severity.WARNING,
            f"no weight files in {ck.path}"
            + (" (a bundled example: config only)" if bundled else ": sglang will fail to load"),
            flags=("model_path",),
            fixes=(Fix(label="Use --load-format dummy to start without weights"),),
        )


def _download(inp: HostInput) -> Iterator[Finding]:
    ck = inp.facts.checkpoint
    assert ck is not None
    where = ck.download_dir or "the Hugging Face cache"
    if ck.download_bytes is None or ck.disk_free is None:
        free = f"; {_gib(ck.disk_free)} free in {where}" if ck.disk_free is not None else ""
        yield _finding(
            "host-download-size-unknown",
            Severity.INFO,
            f"{ck.source} is not here: sglang downloads it, size not known{free}",
            flags=("model_path",),
        )
        return
    if ck.download_bytes > ck.disk_free:
        yield _finding(
            "host-download-no-space",
            Severity.ERROR,
            f"{ck.source} needs {_gib(ck.download_bytes)} to download; {where} has "
            f"{_gib(ck.disk_free)} free",
            flags=("model_path",),
            fixes=(Fix(label="Point HF_HOME at a disk with room, or free space"),),
        )


def _visible(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


@check
def devices(inp: HostInput) -> Iterator[Finding]:
    facts = inp.facts
    count = facts.gpu_count
    if not count:
        return
    visible = facts.env.get("CUDA_VISIBLE_DEVICES")
    n_visible = count
    if visible is not None:
        entries = _visible(visible)
        bad = [
            e
            for e in entries
            if not (e.isdigit() and int(e) < count)
            and not any(u.startswith(e) for u in facts.gpu_uuids if e.startswith(("GPU-", "MIG-")))
        ]
        if not entries or bad:
            what = f"names {', '.join(bad)}" if bad else "is empty"
            yield _finding(
                "host-visible-devices-absent",
                Severity.ERROR,
                f"CUDA_VISIBLE_DEVICES={visible} {what}; this host has {count} GPU"
                f"{'s' if count != 1 else ''} (0-{count - 1})",
                fixes=(Fix(label=f"CUDA_VISIBLE_DEVICES={','.join(map(str, range(count)))}"),),
            )
            return
        n_visible = len(entries)
    base = _int(inp.flags, "base_gpu_id", 0)
    step = max(1, _int(inp.flags, "gpu_id_step", 1))
    last = base + (inp.ranks - 1) * step
    if last >= n_visible:
        fixes: tuple[Fix, ...] = ()
        if base and (inp.ranks - 1) * step < n_visible:
            fixes = (Fix(label="Use --base-gpu-id 0", set={"base_gpu_id": 0}),)
        yield _finding(
            "host-gpus-out-of-range",
            Severity.ERROR,
            f"{inp.ranks} rank{'s' if inp.ranks != 1 else ''} from --base-gpu-id {base} need "
            f"GPU {last}; {n_visible} GPU{'s are' if n_visible != 1 else ' is'} visible",
            flags=("base_gpu_id", "tp_size"),
            fixes=fixes,
        )
    for held in facts.gpu_held:
        if held.used >= GPU_HELD_BYTES:
            who = f" by {', '.join(held.processes)}" if held.processes else ""
            yield _finding(
                "host-gpu-memory-held",
                Severity.WARNING,
                f"GPU {held.index} already has {_gib(held.used)} of {_gib(held.total)} in use{who}",
                flags=("mem_fraction_static",),
                fixes=(Fix(label="Stop those processes, or lower --mem-fraction-static"),),
            )


@check
def multinode(inp: HostInput) -> Iterator[Finding]:
    facts = inp.facts
    if nodes_of(inp.flags, inp.nodes) <= 1:
        return
    rv = facts.rendezvous
    if rv is not None:
        if rv.error:
            yield _finding(
                "host-rendezvous-unresolvable",
                Severity.ERROR,
                f"--dist-init-addr {rv.host}: {rv.error}",
                flags=("dist_init_addr",),
                fixes=(Fix(label="Give the head node's IP address: --dist-init-addr IP:PORT"),),
            )
        elif is_head(inp.flags) and rv.local_addresses and not _is_local(rv):
            yield _finding(
                "host-rendezvous-not-local",
                Severity.ERROR,
                f"this is the head (--node-rank 0) but --dist-init-addr {rv.host} is "
                f"{', '.join(rv.addresses)}, not an address of this host "
                f"({', '.join(rv.local_addresses[:4])})",
                flags=("dist_init_addr", "node_rank"),
                fixes=(Fix(label="Use one of this host's addresses in --dist-init-addr"),),
            )
    if facts.infiniband and facts.memlock is not None and facts.memlock != UNLIMITED:
        yield _finding(
            "host-memlock-limited",
            Severity.ERROR,
            f"InfiniBand is here ({', '.join(facts.infiniband[:3])}) but the locked-memory "
            f"limit is {facts.memlock // 1024} KiB: NCCL cannot register its buffers",
            fixes=(
                Fix(label="ulimit -l unlimited (docker: --ulimit memlock=-1)"),
                Fix(label="add '* - memlock unlimited' to /etc/security/limits.conf"),
            ),
        )


def _is_local(rv: Any) -> bool:
    local = set(rv.local_addresses)
    return any(a in local or a.startswith("127.") or a == "::1" for a in rv.addresses)


@check
def unknown(inp: HostInput) -> Iterator[Finding]:
    for note in inp.facts.notes:
        yield _finding("host-fact-unknown", Severity.INFO, note)
