"""A multi-node profile as per-node launches: the parts every engine export shares.

One sglang server across N machines is the same line on every node but three flags:
`--nnodes N --node-rank R --dist-init-addr HEAD:PORT` (reference §1). The profile's
`nodes` is the truth for N; whatever `--nnodes`/`--node-rank`/`--dist-init-addr` its flags
hold are replaced. Every line here comes from the one launch-line writer
(`sglaunch.flags.argv.flag_tokens` through `flags_argv`), with secrets as environment
references, never values.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sglaunch.errors import UserError
from sglaunch.flags.argv import NODE_FLAGS, node_argv, without_flags
from sglaunch.flags.schema import FlagSchema, bundled_schema
from sglaunch.profiles.argvform import Raw, env_items, exported_model, flags_argv, quote
from sglaunch.profiles.profile import Profile, check_profile
from sglaunch.program import program_argv
from sglaunch.safeio import has_control, shown

# sglang's own default HTTP port, and the rendezvous port the reference's specs use
DEFAULT_PORT = 30000
DEFAULT_DIST_PORT = 20000
# The interpreter on a cluster node or in a container: the profile's local path means
# nothing there, so engine exports name `python3` unless told otherwise.
ENGINE_PYTHON = "python3"
# A per-node command line's head address when the profile names none: the shell stops
# with this text if the variable is unset, instead of starting a node that hangs.
HEAD_VAR = "SGLANG_HEAD_ADDR"
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
# The head's address as the check before an engine apply writes it: the engine fills in the
# real one (LWS_LEADER_ADDRESS, the job's first Slurm host, SkyPilot's first node IP).
ENGINE_HEAD = "engine-head"
_PYTHON = re.compile(r"[A-Za-z0-9_./+@-]+")


@dataclass(frozen=True)
class NodeLaunch:
    """What an engine needs to write one server across `nodes` machines."""

    name: str
    nodes: int
    program: list[str]  # python3 -m sglang.launch_server
    argv: list[str]  # sglang's flags less the node flags, --host and --port; secrets as references
    env: list[tuple[str, str]]
    secrets: dict[str, str]  # flag (--api-key) -> environment variable
    port: int
    dist_port: int
    dist_host: str | None  # the profile's own rendezvous host, if it names one
    gpus_per_node: int
    host: str  # what every node listens on: reachable from the other nodes and probes


def require_nodes(profile: Profile, what: str) -> None:
    """Refuse a multi-node export of a single-node profile, naming the way out."""
    if profile.nodes < 2:
        raise UserError(
            f"{what} runs one server across several nodes, and profile '{profile.name}' has "
            f"nodes = 1: set `nodes = 2` (or more) in the profile, or export it with "
            "--format command or script for one machine"
        )


def check_rank(profile: Profile, rank: int) -> None:
    if not 0 <= rank < profile.nodes:
        last = profile.nodes - 1
        raise UserError(
            f"--node-rank {rank} is outside the {profile.nodes} nodes of profile "
            f"'{profile.name}': use a rank from 0 to {last}"
        )


def check_python(python: str) -> str:
    if not python or has_control(python) or not _PYTHON.fullmatch(python):
        raise UserError(
            f"--python {shown(repr(python))} is not an interpreter name or path: "
            "use e.g. python3 or /opt/sglang/bin/python (no spaces or quotes)"
        )
    return python


def _split_port(addr: str) -> tuple[str | None, int | None]:
    if addr.startswith("["):
        host, _, rest = addr[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    else:
        host, _, port = addr.rpartition(":")
        if not host:
            host, port = addr, ""
    return (host or None), (int(port) if port.isdigit() and 0 < int(port) < 65536 else None)


def _dist(flags: Mapping[str, Any]) -> tuple[str | None, int | None]:
    dist = flags.get("dist_init_addr")
    return _split_port(str(dist)) if dist else (None, None)


def _node_host(flags: Mapping[str, Any]) -> str:
    host = str(flags.get("host") or "")
    # the head's probe and the other nodes must reach it (reference §6)
    return "0.0.0.0" if not host or host in _LOOPBACK else host


def engine_node_flags(flags: Mapping[str, Any], nodes: int) -> dict[str, Any]:
    """The flags an engine's export writes over the profile's own on the head's line
    (`--apply --target` checks that line): the node count, rank 0, the rendezvous at the head
    the engine names (ENGINE_HEAD here) on the profile's port, and the host every node
    listens on. `--nccl-init-addr` is dropped (None), as the export drops it."""
    _, dist_port = _dist(flags)
    return {
        "nnodes": nodes,
        "node_rank": 0,
        "dist_init_addr": f"{ENGINE_HEAD}:{dist_port or DEFAULT_DIST_PORT}",
        "nccl_init_addr": None,
        "host": _node_host(flags),
    }


def node_launch(
    profile: Profile,
    *,
    schema: FlagSchema | None = None,
    python: str | None = None,
    engine_python: bool = True,
    k8s_secrets: bool = False,
) -> NodeLaunch:
    """The profile split into what every node shares; UserError when it cannot be."""
    schema = schema or bundled_schema()
    check_profile(profile, schema)

    # a secret is a shell reference, or Kubernetes' $(VAR) where no shell runs the line
    refs = {d: Raw(f"$({v})") for d, v in profile.secrets.items()} if k8s_secrets else None
    full = flags_argv(profile, schema, model=exported_model(profile.model), secrets=refs)
    argv = without_flags(full, (*NODE_FLAGS, "--host", "--port"))
    flags = profile.flags
    tp = int(flags.get("tp_size") or 1)
    pp = int(flags.get("pp_size") or 1)
    world = tp * pp
    if world % profile.nodes:
        raise UserError(
            f"profile '{profile.name}': tp × pp = {tp} × {pp} = {world} GPUs do not split over "
            f"{profile.nodes} nodes: make tp × pp a multiple of {profile.nodes} "
            "(e.g. --tp 16 on 2 nodes of 8) or change the profile's nodes"
        )
    port = int(flags.get("port") or DEFAULT_PORT)
    dist_host, dist_port = _dist(flags)
    host = _node_host(flags)
    if python is not None:
        exe = check_python(python)
    elif engine_python:
        exe = ENGINE_PYTHON
    else:
        exe = profile.sglang_python or ENGINE_PYTHON
    secrets = {schema.cli_name(dest): var for dest, var in profile.secrets.items()}
    return NodeLaunch(
        name=profile.name,
        nodes=profile.nodes,
        program=program_argv(profile.entry, exe),
        argv=argv,
        env=env_items(profile),
        secrets=secrets,
        port=port,
        dist_port=dist_port or DEFAULT_DIST_PORT,
        dist_host=dist_host,
        gpus_per_node=max(world // profile.nodes, 1),
        host=host,
    )


def node_lines(
    profile: Profile,
    *,
    rank: int | None = None,
    schema: FlagSchema | None = None,
    python: str | None = None,
) -> list[str]:
    """One shell line per node (or only `rank`'s) for a multi-node profile.

    The head's address is the profile's `--dist-init-addr` host, else `$SGLANG_HEAD_ADDR`,
    which the shell insists on.
    """
    require_nodes(profile, "--format command with more than one line")
    if rank is not None:
        check_rank(profile, rank)
    launch = node_launch(profile, schema=schema, python=python, engine_python=False)
    if launch.dist_host:
        host = launch.dist_host
        addr: str = f"[{host}]:{launch.dist_port}" if ":" in host else f"{host}:{launch.dist_port}"
    else:
        addr = Raw(f'"${{{HEAD_VAR}:?set {HEAD_VAR} to the head node address}}":{launch.dist_port}')
    ranks = range(launch.nodes) if rank is None else [rank]
    lines = []
    for r in ranks:
        argv = [*launch.argv, "--host", launch.host, "--port", str(launch.port)]
        argv = node_argv(argv, r, launch.nodes, addr)
        env = [Raw(f"{k}={shlex.quote(v)}") for k, v in launch.env]
        lines.append(" ".join(quote(t) for t in [*env, *launch.program, *argv]))
    return lines


def dns_name(name: str, limit: int = 40) -> str:
    """A Kubernetes/SkyPilot name from a profile name: lower-case letters, digits, '-'."""
    text = re.sub(r"[^a-z0-9-]+", "-", name.lower()).strip("-")[:limit].strip("-")
    return text or "sglang"
