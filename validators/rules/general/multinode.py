"""One server over several nodes: --nnodes, --node-rank, --dist-init-addr and what they touch.

sglang checks little of a multi-node line before it starts (0.5.19-0.5.23 alike): tp × pp
must divide by the nodes and data-parallel replicas stay on one node (`parallel.py`,
validation_hook.py:179/199), and --nnodes 0 divides by zero on the same line. Everything
else here is sglaunch's own: sglang lets it through, then each node hangs at the
rendezvous until its timeout, or fails at scheduler start with a line in one node's log.
The topology chosen for the check (`--nodes`, the GPU dialog: `GpuFacts.nodes`) is
compared with the line's --nnodes; the GPUs of the facts are ONE node's.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from typing import Any

from sglaunch.validators.cards import card
from sglaunch.validators.facts import CheckInput
from sglaunch.validators.findings import Finding, Fix, Severity
from sglaunch.validators.resolving import _int, attn_dp_size, pp_size, tp_size
from sglaunch.validators.rule import rule

VALIDATION = "srt/arg_groups/validation_hook.py"
NETWORK = "srt/utils/network.py"
BOOTSTRAP = "srt/distributed/bootstrap.py"
RANGES = "srt/entrypoints/engine.py:2045"
# sglang's own example port for the rendezvous (docs, LWS and Slurm examples)
EXAMPLE_DIST_PORT = 20000
# PortArgs: node 0 binds D+1..D+6 and the handshake D+13 with attention DP (server_args.py:728-729)
DP_HANDSHAKE_DELTA = 13
# an address longer than any host:port is not one; parsing it stays bounded
MAX_ADDR = 512
# hosts only the machine itself reaches
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})

# the codes about how the nodes find each other, not about the layout: a planned
# layout (fit) carries none of these flags, so they never block one
ADDRESSING_CODES = frozenset(
    {
        "nodes-mismatch",
        "dist-init-addr-missing",
        "dist-init-addr-bare-ipv6",
        "dist-init-addr-port",
        "dist-init-addr-host",
        "node-rank-range",
        "dist-init-port-equals-port",
        "attn-dp-port-block",
        "multinode-host-loopback",
        "dist-timeout-positive",
    }
)

OWN = "sglaunch's own check (sglang accepts this line)"


def nnodes(inp: CheckInput) -> int:
    return _int(inp.value("nnodes"))


def _is_ipv6(host: str) -> bool:
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        return False
    return True


def parse_address(addr: str) -> tuple[str, int | None, str | None, str]:
    """sglang's NetworkAddress.parse (network.py:610-644): (host, port, error, kind).

    kind names the problem for the code: "bare-ipv6", "port" or "host"; "" when it parses.
    """
    if addr.startswith("["):
        close = addr.find("]")
        if close == -1:
            return "", None, f"Missing closing bracket in IPv6 address: {addr!r}", "host"
        host = addr[1:close]
        if not _is_ipv6(host):
            return host, None, f"Invalid IPv6 address inside brackets: {host!r}", "host"
        rest = addr[close + 1 :]
        if not rest.startswith(":") or len(rest) < 2:
            return host, None, f"Expected ':port' after closing bracket, got: {rest!r}", "port"
        return _port(host, rest[1:])
    if ":" not in addr:
        return addr, None, f"Missing port in address (expected host:port): {addr!r}", "port"
    host, port_text = addr.rsplit(":", 1)
    if not host:
        return host, None, f"Empty host in address: {addr!r}", "host"
    if ":" in host and _is_ipv6(host):
        return (
            host,
            None,
            f"Bare IPv6 address without brackets is ambiguous: {addr!r}. "
            f"Use [{host}]:{port_text} instead.",
            "bare-ipv6",
        )
    return _port(host, port_text)


def _port(host: str, text: str) -> tuple[str, int | None, str | None, str]:
    try:
        port = int(text)
    except ValueError:
        return host, None, f"Invalid port number: {text!r}", "port"
    if not 0 <= port <= 65535:
        return host, None, f"Port out of range (0-65535): {port}", "port"
    return host, port, None, ""


def dist_addr(inp: CheckInput) -> str | None:
    """The rendezvous address as sglang reads it: "" is unset (bootstrap.py:241)."""
    value: Any = inp.value("dist_init_addr")
    if value is None:
        return None
    text = str(value)[:MAX_ADDR]
    return text or None


def dist_port(inp: CheckInput) -> int | None:
    addr = dist_addr(inp)
    if addr is None:
        return None
    _, port, error, _ = parse_address(addr)
    return None if error else port


@rule(
    "nodes-mismatch",
    summary="the line's --nnodes differs from the nodes planned for",
    mirrors="launch",
    ref=RANGES,
)
def nodes_mismatch(inp: CheckInput) -> Iterator[Finding]:
    planned, line = inp.gpu.nodes, nnodes(inp)
    if planned == line or line < 1:
        return
    said = f"--nnodes {line}" if inp.is_set("nnodes") else "no --nnodes (one node)"
    yield Finding(
        code="nodes-mismatch",
        # a line without --nnodes runs as one node: the plan's other nodes idle
        severity=Severity.ERROR if inp.is_set("nnodes") else Severity.WARNING,
        message=f"the launch line says {said} but the check is for {inp.gpu.describe()}",
        flags=("nnodes",),
        fixes=(Fix(label=f"Set --nnodes {planned}", set={"nnodes": planned}),)
        if planned > 1
        else (Fix(label="Remove --nnodes (one node)", unset=("nnodes", "node_rank")),),
        ref=RANGES,
        detail=f"{OWN}. Every node runs the same line but its --node-rank; a line that counts "
        "other nodes than there are waits at the rendezvous for nodes that never come (or "
        "leaves machines idle).",
    )


@rule(
    "nnodes-positive",
    summary="--nnodes must be at least 1",
    mirrors="resolution",
    ref=f"{VALIDATION}:179",
)
def nnodes_positive(inp: CheckInput) -> Iterator[Finding]:
    if not inp.is_set("nnodes"):
        return
    n = nnodes(inp)
    if n >= 1:
        return
    yield Finding(
        code="nnodes-positive",
        severity=Severity.ERROR,
        # sglang's own words for 0: tp*pp % nnodes (check_server_args)
        message="integer modulo by zero"
        if n == 0
        else f"--nnodes {n}: a negative node count passes sglang's checks and starts no "
        "scheduler that can rendezvous",
        flags=("nnodes",),
        fixes=(Fix(label="Remove --nnodes (one node)", unset=("nnodes", "node_rank")),),
        ref=f"{VALIDATION}:179 (check_server_args)",
        detail="--nnodes 0 stops sglang with a ZeroDivisionError before any process starts."
        if n == 0
        else f"{OWN}. The rank ranges (engine.py:2045) are empty or negative.",
    )


@rule(
    "dist-init-addr-missing",
    summary="several nodes need --dist-init-addr (node 0's host:port)",
    mirrors="launch",
    ref=f"{BOOTSTRAP}:241",
)
def dist_init_missing(inp: CheckInput) -> Iterator[Finding]:
    if nnodes(inp) <= 1 or dist_addr(inp) is not None:
        return
    host = inp.value("host")
    fixes: tuple[Fix, ...] = ()
    if isinstance(host, str) and host and host not in LOOPBACK and host not in ("0.0.0.0", "::"):
        # --host is an address of node 0 the others may reach: rendezvous there
        fixes = (
            Fix(
                label=f"Rendezvous at {host}:{EXAMPLE_DIST_PORT}",
                set={"dist_init_addr": f"{_bracket(host)}:{EXAMPLE_DIST_PORT}"},
            ),
        )
    yield Finding(
        code="dist-init-addr-missing",
        severity=Severity.ERROR,
        message=f"--nnodes {nnodes(inp)} without --dist-init-addr: each node would wait at a "
        "rendezvous of its own (127.0.0.1) and the server never forms; sglang accepts the line "
        "and hangs until the timeout",
        flags=("nnodes", "dist_init_addr"),
        fixes=fixes,
        ref=f"{BOOTSTRAP}:241; srt/entrypoints/engine.py:748",
        detail=f"{OWN}. Pass node 0's address on every node, e.g. --dist-init-addr "
        f"10.0.0.5:{EXAMPLE_DIST_PORT} (an IP or name the other nodes resolve).",
    )


def _bracket(host: str) -> str:
    return f"[{host}]" if _is_ipv6(host) else host


@rule(
    "dist-init-addr-bare-ipv6",
    summary="an IPv6 rendezvous address needs brackets: [addr]:port",
    mirrors="launch",
    ref=f"{NETWORK}:640",
)
def dist_init_bare_ipv6(inp: CheckInput) -> Iterator[Finding]:
    yield from _address_findings(inp, "bare-ipv6")


@rule(
    "dist-init-addr-port",
    summary="the rendezvous address needs a port from 0 to 65535",
    mirrors="launch",
    ref=f"{NETWORK}:634",
)
def dist_init_port(inp: CheckInput) -> Iterator[Finding]:
    yield from _address_findings(inp, "port")


@rule(
    "dist-init-addr-host",
    summary="the rendezvous address needs a host",
    mirrors="launch",
    ref=f"{NETWORK}:637",
)
def dist_init_host(inp: CheckInput) -> Iterator[Finding]:
    yield from _address_findings(inp, "host")


_ADDRESS_REFS = {
    "bare-ipv6": f"{NETWORK}:640",
    "port": "srt/utils/network.py:634; srt/utils/network.py:536",
    "host": f"{NETWORK}:637",
}


def _address_findings(inp: CheckInput, kind: str) -> Iterator[Finding]:
    addr = dist_addr(inp)
    if addr is None:
        return
    host, _, error, found = parse_address(addr)
    if error is None or found != kind:
        return
    fixes: list[Fix] = []
    if kind == "bare-ipv6":
        _, port_text = addr.rsplit(":", 1)
        fixes.append(
            Fix(
                label=f"Write it as [{host}]:{port_text}",
                set={"dist_init_addr": f"[{host}]:{port_text}"},
            )
        )
    elif kind == "port" and host and not (":" in host and not addr.startswith("[")):
        fixes.append(
            Fix(
                label=f"Use port {EXAMPLE_DIST_PORT}",
                set={"dist_init_addr": f"{_bracket(host)}:{EXAMPLE_DIST_PORT}"},
            )
        )
    yield Finding(
        code=f"dist-init-addr-{kind}",
        severity=Severity.ERROR,
        message=f"{error} (--dist-init-addr): sglang accepts the flag and every scheduler fails "
        "with this ValueError at start-up",
        flags=("dist_init_addr",),
        fixes=tuple(fixes),
        ref=f"{_ADDRESS_REFS[kind]} (at scheduler start)",
        detail=f"{OWN} until the schedulers start: --dist-init-addr is a plain string at argument "
        "time. An empty shell variable ($HEAD_NODE) gives ':20000'.",
    )


@rule(
    "node-rank-range",
    summary="--node-rank must be from 0 to --nnodes - 1",
    mirrors="launch",
    ref=RANGES,
)
def node_rank_range(inp: CheckInput) -> Iterator[Finding]:
    n = nnodes(inp)
    if n < 1 or not inp.is_set("node_rank") or inp.value("ep_join_mode") == "scale":
        return
    rank = _int(inp.value("node_rank"), 0)
    if 0 <= rank < n:
        return
    fixes = [Fix(label="Use --node-rank 0 (the head node)", set={"node_rank": 0})]
    if n > 1:
        fixes.append(
            Fix(label=f"Use --node-rank {n - 1} (the last node)", set={"node_rank": n - 1})
        )
    yield Finding(
        code="node-rank-range",
        severity=Severity.ERROR,
        message=f"--node-rank {rank} is outside 0..{n - 1} for --nnodes {n}: sglang accepts it, "
        "then this node launches ranks past the world size and the rendezvous hangs or fails",
        flags=("node_rank", "nnodes"),
        fixes=tuple(fixes),
        ref=f"{RANGES} (rank ranges at launch)",
        detail=f"{OWN}. sglang has no range check. Node 0 is the head (API server); nodes "
        f"1..{n - 1} run the rest of the ranks. Each node needs its own rank, once.",
    )


@rule(
    "dist-init-port-equals-port",
    summary="the rendezvous port and --port are the same port on node 0",
    mirrors="launch",
    ref=f"{BOOTSTRAP}:241",
)
def port_equals(inp: CheckInput) -> Iterator[Finding]:
    d = dist_port(inp)
    port = _int(inp.value("port"), 30000)
    if d is None or d != port:
        return
    yield Finding(
        code="dist-init-port-equals-port",
        severity=Severity.ERROR,
        message=f"--port {port} is also the --dist-init-addr port: node 0's rendezvous store "
        "takes it first and the HTTP server then fails to bind",
        flags=("port", "dist_init_addr"),
        fixes=_free_port_fix(inp, d),
        ref=f"{BOOTSTRAP}:241 (the store at start-up); srt/entrypoints/http_server.py (bind)",
        detail=f"{OWN}. sglang does not compare the two.",
    )


def _port_block(d: int) -> tuple[int, int]:
    """Node 0's ports derived from the rendezvous port with attention DP (server_args.py:840-843)."""
    if d + 6 > 65535:
        return d - 7, d + DP_HANDSHAKE_DELTA
    return d, d + DP_HANDSHAKE_DELTA


def _free_port_fix(inp: CheckInput, d: int) -> tuple[Fix, ...]:
    lo, hi = _port_block(d)
    for candidate in (30000, 31000, 40000):
        if not lo <= candidate <= hi and candidate != d:
            if candidate == 30000 and inp.defaults.get("port", 30000) == 30000:
                return (Fix(label="Use the default --port 30000", unset=("port",)),)
            return (Fix(label=f"Use --port {candidate}", set={"port": candidate}),)
    return ()


@rule(
    "attn-dp-port-block",
    summary="with attention DP, node 0 binds the 13 ports after the rendezvous port",
    mirrors="launch",
    ref="srt/server_args.py:843",
)
def attn_dp_ports(inp: CheckInput) -> Iterator[Finding]:
    d = dist_port(inp)
    if d is None or attn_dp_size(inp) <= 1:
        return
    port = _int(inp.value("port"), 30000)
    lo, hi = _port_block(d)
    if port == d or not lo <= port <= hi:
        return
    yield Finding(
        code="attn-dp-port-block",
        severity=Severity.ERROR,
        message=f"--port {port} lies in {lo}..{hi}, the ports node 0 binds from the rendezvous "
        f"port {d} with attention DP: the tokenizer or the DP handshake takes it first",
        flags=("port", "dist_init_addr", "attn_dp_size"),
        fixes=_free_port_fix(inp, d),
        ref="srt/server_args.py:843; srt/managers/data_parallel_controller.py:502",
        detail=f"{OWN}. sglang waits for the port (30 s), then stops with 'is not available in "
        "30 seconds'. Keep --port outside the rendezvous port .. +13.",
    )


@rule(
    "dist-timeout-positive",
    summary="--dist-timeout must be positive",
    mirrors="launch",
    ref="srt/distributed/parallel_state.py:2495",
)
def dist_timeout_positive(inp: CheckInput) -> Iterator[Finding]:
    if not inp.is_set("dist_timeout") or inp.value("dist_timeout") is None:
        return
    t = _int(inp.value("dist_timeout"), 1)
    if t > 0:
        return
    yield Finding(
        code="dist-timeout-positive",
        severity=Severity.ERROR,
        message=f"--dist-timeout {t}: timeout must be positive (sglang accepts the flag and every "
        "scheduler stops with this AssertionError at start-up)",
        flags=("dist_timeout",),
        fixes=(
            Fix(label="Wait up to an hour (--dist-timeout 3600)", set={"dist_timeout": 3600}),
            Fix(label="Remove --dist-timeout (torch's default)", unset=("dist_timeout",)),
        ),
        ref="srt/distributed/parallel_state.py:2495 (init_distributed_environment)",
        detail=f"{OWN} until the schedulers start. Across nodes a long timeout (3600) lets a "
        "slower node finish loading weights.",
    )


def layout_maps(tp: int, pp: int, n: int) -> bool:
    """Every (pp_rank, tp_rank) launched exactly once by sglang's rank ranges (engine.py:2045)."""
    return pp % n == 0 or (n % pp == 0 and tp % (n // pp) == 0)


def highest_local_gpu(tp: int, pp: int, n: int, base: int, step: int) -> int:
    """The highest GPU index a node binds (engine.py:935-939): the PP offset ignores the step."""
    pp_per_node = max(pp // n, 1)
    tp_per_node = tp // max(n // pp, 1)
    return base + (pp_per_node - 1) * tp_per_node + (tp_per_node - 1) * step


@rule(
    "pp-stages-nodes",
    summary="the pipeline stages must map onto the nodes",
    mirrors="launch",
    ref=RANGES,
)
def pp_stages_nodes(inp: CheckInput) -> Iterator[Finding]:
    n, tp, pp = nnodes(inp), tp_size(inp), pp_size(inp)
    if n <= 1 or tp < 1 or pp < 1 or (tp * pp) % n != 0 or layout_maps(tp, pp, n):
        return
    world = tp * pp
    fixes = []
    # the same GPUs, stages that do map: pp a multiple of the nodes, or tp across them
    for new_pp in (n, 1):
        if world % new_pp == 0 and layout_maps(world // new_pp, new_pp, n):
            fixes.append(
                Fix(
                    label=f"Use --tp-size {world // new_pp} --pp-size {new_pp}",
                    set={"tp_size": world // new_pp, "pp_size": new_pp},
                )
            )
    yield Finding(
        code="pp-stages-nodes",
        severity=Severity.ERROR,
        message=f"--tp-size {tp} × --pp-size {pp} over --nnodes {n}: the pipeline stages do not "
        "map onto the nodes (some stage is launched on no node, or twice); sglang accepts the "
        "line and the rendezvous never completes",
        flags=("tp_size", "pp_size", "nnodes"),
        fixes=tuple(fixes),
        ref=f"{RANGES} (rank ranges at launch)",
        detail=f"{OWN}. sglang only checks that tp × pp divides by the nodes. The stages map "
        "when pp is a multiple of the nodes, or the nodes a multiple of pp with tp split "
        "evenly over the nodes of each stage.",
    )


@rule(
    "gpus-per-node",
    summary="each node needs tp × pp / nodes GPUs",
    mirrors="launch",
    ref=f"{BOOTSTRAP}:133",
)
def gpus_per_node(inp: CheckInput) -> Iterator[Finding]:
    n, tp, pp = nnodes(inp), tp_size(inp), pp_size(inp)
    have = inp.gpu.count
    if n <= 1 or tp < 1 or pp < 1 or have == 0 or (tp * pp) % n != 0:
        return
    if not layout_maps(tp, pp, n):
        return  # pp-stages-nodes says it
    base = max(_int(inp.value("base_gpu_id"), 0), 0)
    step = max(_int(inp.value("gpu_id_step")), 1)
    need = highest_local_gpu(tp, pp, n, base, step) + 1
    if need <= have:
        return
    fixes = []
    world = tp * pp
    more = world // have
    if world % have == 0 and n < more <= 1024:
        # dropped by the vetting when the machines planned for are fewer
        fixes.append(
            Fix(label=f"Spread over --nnodes {more} ({have} GPUs each)", set={"nnodes": more})
        )
    if pp == 1 and have * n <= 1024 and base == 0 and step == 1:
        fixes.append(Fix(label=f"Use --tp-size {have * n}", set={"tp_size": have * n}))
    yield Finding(
        code="gpus-per-node",
        severity=Severity.ERROR,
        message=f"--tp-size {tp} × --pp-size {pp} over --nnodes {n} needs {need} GPUs on each "
        f"node but a node has {have}; sglang would fail at launch with 'CUDA error: invalid "
        "device ordinal'",
        flags=("tp_size", "pp_size", "nnodes"),
        fixes=tuple(fixes),
        ref=f"{BOOTSTRAP}:133 (set_device at launch); srt/entrypoints/engine.py:935",
        detail=f"{OWN}. There is no GPUs-per-node flag; each node binds tp × pp / nnodes GPUs "
        "from --base-gpu-id.",
    )


@rule(
    "multinode-host-loopback",
    summary="--host on 127.0.0.1 across nodes: only each machine itself reaches its server",
    mirrors="launch",
    ref="srt/arg_groups/fields/serving.py:65",
)
def host_loopback(inp: CheckInput) -> Iterator[Finding]:
    host = inp.value("host")
    if nnodes(inp) <= 1 or (host is not None and str(host) not in LOOPBACK):
        return
    shown = host if host is not None else "127.0.0.1"
    said = f"--host {shown}" if inp.is_set("host") else f"--host unset ({shown})"
    yield Finding(
        code="multinode-host-loopback",
        severity=Severity.WARNING,
        message=f"{said} across {nnodes(inp)} nodes: the head's API and every node's /health "
        "answer only on the machine itself, so a launcher's readiness probe from elsewhere "
        "never succeeds",
        flags=("host",),
        fixes=(Fix(label="Listen on every interface (--host 0.0.0.0)", set={"host": "0.0.0.0"}),),
        ref="srt/arg_groups/fields/serving.py:65 (default 127.0.0.1)",
        detail=f"{OWN}. sglang starts fine; Slurm's, Kubernetes' and SkyPilot's probes of the "
        "head's hostname are refused.",
    )


_SOLO = "This is sglaunch's own check: sglang does not check it before launch."

card(
    "nodes-mismatch",
    "The line's --nnodes differs from the nodes planned for",
    what=(
        "The check is for N machines (--nodes, the GPU dialog) but the launch line's --nnodes "
        f"says another count. {_SOLO} With more nodes in the line than run it, the rendezvous "
        "waits for nodes that never come; with fewer, machines idle."
    ),
    when="Changing the cluster size in one place and not the other.",
    solutions=("Set --nnodes to the number of machines, or --nodes to the line's count.",),
    before="sglaunch check --nodes 2 -- --model-path X --tp 16 --nnodes 4",
    after="sglaunch check --nodes 2 -- --model-path X --tp 16 --nnodes 2",
    related=("gpus-per-node", "dist-init-addr-missing"),
    ref=f"sglang/{RANGES}",
    stage="launch",
)

card(
    "nnodes-positive",
    "--nnodes must be at least 1",
    what=(
        "sglang divides tp × pp by --nnodes in check_server_args: --nnodes 0 stops it with a bare "
        "ZeroDivisionError ('integer modulo by zero') before any process starts. A negative "
        "count passes that check (sglaunch's own finding) and no rank can rendezvous."
    ),
    when="A script computing the node count from an empty variable.",
    solutions=("Remove --nnodes (one node) or give the number of machines.",),
    before="sglang serve --model-path X --tp 8 --nnodes 0",
    after="sglang serve --model-path X --tp 8",
    related=("nnodes-divides-tp",),
    # no pattern: sglang's bare "integer modulo by zero" comes from other sizes of 0 too
    ref=f"sglang/{VALIDATION}:179",
)

card(
    "dist-init-addr-missing",
    "Several nodes need --dist-init-addr",
    what=(
        "Every node of one server meets at node 0's rendezvous (a torch TCPStore at "
        "--dist-init-addr HOST:PORT). Without it each node opens a rendezvous of its own on "
        f"127.0.0.1 and waits there: the server never forms. {_SOLO} sglang would hang at the "
        "rendezvous until the timeout (10 minutes by default)."
    ),
    when="A multi-node line written from a single-node one; an empty $HEAD_NODE in a script.",
    solutions=(
        "Pass node 0's reachable IP or name and a free port on every node: --dist-init-addr 10.0.0.5:20000.",
        "On Kubernetes LeaderWorkerSet use $(LWS_LEADER_ADDRESS):20000; on Slurm the first host of scontrol show hostnames.",
    ),
    before="sglang serve --model-path X --tp 16 --nnodes 2 --node-rank 0",
    after="sglang serve --model-path X --tp 16 --nnodes 2 --node-rank 0 --dist-init-addr 10.0.0.5:20000",
    related=("node-rank-range", "multinode-host-loopback"),
    ref=f"sglang/{BOOTSTRAP}:241",
    stage="launch",
)

card(
    "dist-init-addr-bare-ipv6",
    "An IPv6 rendezvous address needs brackets",
    what=(
        "sglang parses --dist-init-addr only when the schedulers start: an IPv6 address written "
        "without brackets is ambiguous (which colon starts the port?) and every scheduler stops "
        "with 'Bare IPv6 address without brackets is ambiguous'. sglaunch checks it before launch."
    ),
    when="Pasting an IPv6 address next to a port.",
    solutions=("Write [addr]:port, e.g. --dist-init-addr [fd00::1]:20000.",),
    before="sglang serve --model-path X --tp 16 --nnodes 2 --dist-init-addr fd00::1:20000",
    after="sglang serve --model-path X --tp 16 --nnodes 2 --dist-init-addr [fd00::1]:20000",
    related=("dist-init-addr-port",),
    patterns=(r"Bare IPv6 address without brackets is ambiguous",),
    ref=f"sglang/{NETWORK}:640",
    stage="launch",
)

card(
    "dist-init-addr-port",
    "The rendezvous address needs a port from 0 to 65535",
    what=(
        "--dist-init-addr is host:port. A missing port, one past 65535 or a bracketed IPv6 "
        "address without ':port' stops every scheduler at start-up with sglang's ValueError "
        "('Missing port in address', 'Port out of range', \"Expected ':port' after closing "
        "bracket\"); sglang's argument checks let it through. sglaunch checks it before launch."
    ),
    when="Giving only the head's host name, or a port computed from an empty variable.",
    solutions=("Add a free port on node 0: --dist-init-addr HOST:20000.",),
    before="sglang serve --model-path X --tp 16 --nnodes 2 --dist-init-addr 10.0.0.5",
    after="sglang serve --model-path X --tp 16 --nnodes 2 --dist-init-addr 10.0.0.5:20000",
    related=("dist-init-addr-bare-ipv6", "dist-init-port-equals-port"),
    patterns=(
        r"Missing port in address \(expected host:port\)",
        r"Port out of range \(0-65535\)",
        r"Expected ':port' after closing bracket",
    ),
    ref=f"sglang/{NETWORK}:634",
    stage="launch",
)

card(
    "dist-init-addr-host",
    "The rendezvous address needs a host",
    what=(
        "':20000' (an empty host, typically an unset shell variable before the colon) or a "
        "malformed bracketed IPv6 address stops every scheduler at start-up with sglang's "
        "ValueError ('Empty host in address'). sglaunch checks it before launch."
    ),
    when='--dist-init-addr "$HEAD_NODE:20000" with HEAD_NODE unset.',
    solutions=("Set the variable before the line, or write node 0's address.",),
    before='sglang serve --model-path X --tp 16 --nnodes 2 --dist-init-addr ":20000"',
    after="sglang serve --model-path X --tp 16 --nnodes 2 --dist-init-addr 10.0.0.5:20000",
    related=("dist-init-addr-missing",),
    patterns=(r"Empty host in address", r"Missing closing bracket in IPv6 address"),
    ref=f"sglang/{NETWORK}:637",
    stage="launch",
)

card(
    "node-rank-range",
    "--node-rank must be from 0 to --nnodes - 1",
    what=(
        "Each node runs the same line with its own --node-rank: 0 on the head (the API server), "
        f"1..N-1 on the others, each once. {_SOLO} A rank past the last node launches ranks "
        "beyond the world size; sglang would hang at the rendezvous or fail there."
    ),
    when=(
        "Slurm scripts that expand $SLURM_NODEID in the batch shell (every task gets 0), or "
        "counting nodes from 1."
    ),
    solutions=(
        "Number the nodes 0..N-1; on Slurm expand $SLURM_PROCID inside each task (single quotes).",
    ),
    before="sglang serve --model-path X --tp 16 --nnodes 2 --node-rank 2 --dist-init-addr 10.0.0.5:20000",
    after="sglang serve --model-path X --tp 16 --nnodes 2 --node-rank 1 --dist-init-addr 10.0.0.5:20000",
    related=("dist-init-addr-missing", "nodes-mismatch"),
    ref=f"sglang/{RANGES}",
    stage="launch",
)

card(
    "dist-init-port-equals-port",
    "The rendezvous port and --port collide on node 0",
    what=(
        "Node 0 opens the rendezvous store on the --dist-init-addr port when its schedulers "
        f"start and the HTTP server on --port once they are ready. {_SOLO} With the same port "
        "the HTTP server would fail to bind after the whole model has loaded."
    ),
    when="Reusing 30000 for both.",
    solutions=("Keep the rendezvous port (e.g. 20000) apart from --port (30000).",),
    before="sglang serve --model-path X --tp 16 --nnodes 2 --dist-init-addr 10.0.0.5:30000",
    after="sglang serve --model-path X --tp 16 --nnodes 2 --dist-init-addr 10.0.0.5:20000",
    related=("attn-dp-port-block",),
    ref=f"sglang/{BOOTSTRAP}:241",
    stage="launch",
)

card(
    "attn-dp-port-block",
    "Attention DP takes the ports after the rendezvous port",
    what=(
        "With attention DP, node 0 binds the tokenizer, detokenizer, RPC, metrics and DP ports "
        "at the rendezvous port + 1..6 and a handshake at + 13 (server_args.py:843, "
        f"data_parallel_controller.py:502). {_SOLO} A --port in that block would be taken: "
        "sglang waits 30 s, then stops with 'is not available in 30 seconds'."
    ),
    when="--dist-init-addr HOST:29990 with --port 30000, and attention DP on.",
    solutions=("Keep --port outside [rendezvous port, rendezvous port + 13].",),
    before="sglang serve --model-path X --tp 16 --attn-dp-size 16 --nnodes 2 --dist-init-addr 10.0.0.5:29990",
    after="sglang serve --model-path X --tp 16 --attn-dp-size 16 --nnodes 2 --dist-init-addr 10.0.0.5:20000",
    related=("dist-init-port-equals-port",),
    ref="sglang/srt/server_args.py:843",
    stage="launch",
)

card(
    "dist-timeout-positive",
    "--dist-timeout must be positive",
    what=(
        "--dist-timeout is the rendezvous and collective timeout in seconds. sglang's argument "
        "checks accept 0 or a negative number; every scheduler then stops at start-up with "
        "'timeout must be positive'. sglaunch checks it before launch."
    ),
    when="A template that fills the timeout from an unset variable.",
    solutions=(
        "Across nodes give a long timeout (3600) so a slower node can finish loading weights.",
        "Or leave it out (torch's default, 10 minutes for NCCL).",
    ),
    before="sglang serve --model-path X --tp 16 --nnodes 2 --dist-timeout 0",
    after="sglang serve --model-path X --tp 16 --nnodes 2 --dist-timeout 3600",
    related=("dist-init-addr-missing",),
    patterns=(r"(?<!URL )timeout must be positive",),
    ref="sglang/srt/distributed/parallel_state.py:2495",
    stage="launch",
)

card(
    "pp-stages-nodes",
    "The pipeline stages must map onto the nodes",
    what=(
        "sglang gives each node pp / nnodes stages (or, with more nodes than stages, one stage "
        "split over nnodes / pp nodes by TP). It only checks that tp × pp divides by the nodes: "
        "--tp 4 --pp 3 --nnodes 2 passes, yet no node launches stage 2. "
        f"{_SOLO} The rendezvous would never complete (hang until the timeout)."
    ),
    when="Picking pp from the layer count and nodes from the cluster independently.",
    solutions=(
        "Make pp a multiple of the nodes (pipeline across nodes, TP inside each).",
        "Or pp 1 with tp over all GPUs of all nodes.",
    ),
    before="sglang serve --model-path X --tp 4 --pp-size 3 --nnodes 2",
    after="sglang serve --model-path X --tp 6 --pp-size 2 --nnodes 2",
    related=("nnodes-divides-tp", "gpus-per-node"),
    ref=f"sglang/{RANGES}",
    stage="launch",
)

card(
    "gpus-per-node",
    "Each node needs tp × pp / nodes GPUs",
    what=(
        "There is no GPUs-per-node flag: each node binds tp × pp / nnodes GPUs from "
        f"--base-gpu-id. {_SOLO} A node with fewer GPUs would fail at launch with 'CUDA error: "
        "invalid device ordinal', after the other nodes have started."
    ),
    when="--tp 32 on two 8-GPU nodes.",
    solutions=(
        "Spread over more nodes (--nnodes) or lower --tp-size × --pp-size to the GPUs of all nodes.",
        "Check CUDA_VISIBLE_DEVICES and --base-gpu-id on every node.",
    ),
    before="sglang serve --model-path X --tp 32 --nnodes 2   # 8 GPUs per node",
    after="sglang serve --model-path X --tp 16 --nnodes 2",
    related=("parallel-gpus", "pp-stages-nodes"),
    ref=f"sglang/{BOOTSTRAP}:133",
    stage="launch",
)

card(
    "multinode-host-loopback",
    "--host on 127.0.0.1 across nodes",
    what=(
        "The head serves the API and every other node a /health server on --host:--port, "
        "127.0.0.1 unless set. sglang starts fine, but nothing outside each machine reaches "
        "them: Slurm's, Kubernetes' and SkyPilot's readiness probes of the head never succeed. "
        "sglaunch's own warning."
    ),
    when="sglang's own Slurm example, which probes the head's hostname without passing --host.",
    solutions=("Pass --host 0.0.0.0 (or the node's address) on every node.",),
    before="sglang serve --model-path X --tp 16 --nnodes 2 --dist-init-addr 10.0.0.5:20000",
    after="sglang serve --model-path X --tp 16 --nnodes 2 --dist-init-addr 10.0.0.5:20000 --host 0.0.0.0",
    related=("dist-init-addr-missing",),
    ref="sglang/srt/arg_groups/fields/serving.py:65",
    stage="launch",
)
