"""A multi-node profile as a SkyPilot task YAML (`sky launch`).

SkyPilot runs `run` on every node with `SKYPILOT_NODE_RANK` (0 on the head) and
`SKYPILOT_NODE_IPS` (newline-separated, in rank order, so its first line is the head);
reference §6.3. Secrets are SkyPilot `secrets` (values given at `sky launch --secret`),
read as environment variables; never written here.
"""

from __future__ import annotations

import re
import shlex

import yaml

from sglaunch.flags.argv import node_argv
from sglaunch.flags.schema import FlagSchema
from sglaunch.profiles.argvform import Raw, quote
from sglaunch.profiles.lws import PlainDumper
from sglaunch.profiles.nodes import dns_name, node_launch, require_nodes
from sglaunch.profiles.profile import Profile

# SkyPilot's accelerator names are GPU models (H100, A100-80GB, ...); a profile without a
# planning preset gets the GPU sglang's multi-node specs were checked for.
DEFAULT_ACCELERATOR = "H100"
_PRESET = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*?)\s*(?:[x×*]\s*\d+)?\s*$")
# the sglang the task installs when the profile was never validated with one
DEFAULT_SGLANG = "0.5.23"


def accelerator(profile: Profile) -> str:
    m = _PRESET.match(profile.gpus.preset or "")
    return m.group(1) if m else DEFAULT_ACCELERATOR


def secret_args(profile: Profile) -> list[str]:
    """`--secret VAR` for each variable the profile's secrets are read from: `sky launch`
    passes each from the caller's environment (the task names them, never their values)."""
    return [t for v in sorted(set(profile.secrets.values())) for t in ("--secret", v)]


def to_skypilot(
    profile: Profile,
    *,
    schema: FlagSchema | None = None,
    python: str | None = None,
) -> str:
    """The task YAML: `num_nodes`, the GPUs each node needs, and one `run` for every node."""
    require_nodes(profile, "--format skypilot")
    launch = node_launch(profile, schema=schema, python=python)
    argv = node_argv(
        [*launch.argv, "--host", launch.host, "--port", Raw('"$HTTP_PORT"')],
        Raw('"$SKYPILOT_NODE_RANK"'),
        str(launch.nodes),
        Raw('"$HEAD_IP:$DIST_PORT"'),
    )
    run = "\n".join(
        [
            'HEAD_IP=$(echo "$SKYPILOT_NODE_IPS" | head -n1)',
            "exec " + " ".join(quote(t) for t in [*launch.program, *argv]),
        ]
    )
    envs: dict[str, str] = dict(launch.env)
    envs["DIST_PORT"] = str(launch.dist_port)
    envs["HTTP_PORT"] = str(launch.port)
    version = profile.validated.sglang_version if profile.validated else DEFAULT_SGLANG
    task: dict[str, object] = {
        "name": dns_name(launch.name),
        "num_nodes": launch.nodes,
        "resources": {
            "accelerators": f"{accelerator(profile)}:{launch.gpus_per_node}",
            "ports": launch.port,
        },
        "envs": envs,
    }
    if launch.secrets:
        task["secrets"] = {v: None for v in sorted(set(launch.secrets.values()))}
    task["setup"] = (
        f"{shlex.quote(launch.program[0])} -m pip install {shlex.quote(f'sglang=={version}')}\n"
    )
    task["run"] = run + "\n"
    header = f"# sglang across {launch.nodes} nodes for sglaunch profile '{launch.name}': sky launch FILE\n"
    if launch.secrets:
        names = " ".join(secret_args(profile))
        header += f"# Secrets are read from your environment: sky launch {names} FILE\n"
    return header + yaml.dump(task, Dumper=_Literal, sort_keys=False, width=1000)


class _Literal(PlainDumper):
    """Multi-line strings (setup, run) as YAML block literals: the script reads as written."""


def _str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Literal.add_representer(str, _str)
_Literal.add_representer(Raw, _str)
