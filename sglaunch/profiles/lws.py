"""A multi-node profile as a Kubernetes LeaderWorkerSet and its leader's Service.

One group of `nodes` pods (`size`); the LWS webhook puts `LWS_LEADER_ADDRESS`,
`LWS_GROUP_SIZE` and `LWS_WORKER_INDEX` into every container's environment, and
Kubernetes expands `$(VAR)` in container args from it. No shell runs the args, so a
`$VAR` would reach sglang literally (reference §6.1): every reference here is `$(VAR)`,
and a literal `$(` in a flag value is escaped as `$$(`. Secrets come from a Kubernetes
Secret through `valueFrom`, never as values.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from sglaunch.errors import UserError
from sglaunch.flags.argv import node_argv
from sglaunch.flags.schema import FlagSchema
from sglaunch.profiles.argvform import Raw
from sglaunch.profiles.nodes import dns_name, node_launch, require_nodes
from sglaunch.profiles.profile import Profile
from sglaunch.safeio import has_control, shown

# sglang's release image for the version these specs were checked against (reference §6);
# `--image` names another.
DEFAULT_IMAGE = "lmsysorg/sglang:v0.5.23"
# registry/name[:tag][@sha256:digest], the reference grammar of container images, lower-case path
_IMAGE = re.compile(
    r"(?:[a-zA-Z0-9.-]+(?::[0-9]+)?/)?[a-z0-9]+(?:[._-]+[a-z0-9]+)*"
    r"(?:/[a-z0-9]+(?:[._-]+[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?"
)
# /dev/shm for NCCL and sglang's shared-memory broadcaster: Docker's 64 MiB default is too small
SHM_SIZE = "32Gi"
# the leader may download and load a model for an hour before /health answers
STARTUP_PERIOD_S = 10
STARTUP_FAILURES = 360


class PlainDumper(yaml.SafeDumper):
    """YAML without anchors: the leader's and workers' args read the same, written out."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def check_image(image: str) -> str:
    if not image or has_control(image) or len(image) > 255 or not _IMAGE.fullmatch(image):
        raise UserError(
            f"--image {shown(repr(image))} is not a container image name: "
            f"write REGISTRY/NAME:TAG, e.g. {DEFAULT_IMAGE}"
        )
    return image


def _k8s_literal(token: str) -> str:
    # Kubernetes expands $(VAR) in args; $$ writes a literal $
    return token.replace("$(", "$$(")


def to_lws(
    profile: Profile,
    *,
    schema: FlagSchema | None = None,
    image: str = DEFAULT_IMAGE,
    python: str | None = None,
) -> str:
    """Two YAML documents: the LeaderWorkerSet and the Service in front of its leader."""
    require_nodes(profile, "--format lws")
    check_image(image)
    launch = node_launch(profile, schema=schema, python=python, k8s_secrets=True)
    name = dns_name(launch.name)
    secret_name = f"{name}-secrets"
    # secrets are Raw $(VAR) references, filled from the Secret; all else is literal
    args = [str(t) if isinstance(t, Raw) else _k8s_literal(t) for t in launch.argv]
    args = node_argv(
        [*args, "--host", launch.host, "--port", str(launch.port)],
        "$(LWS_WORKER_INDEX)",
        "$(LWS_GROUP_SIZE)",
        f"$(LWS_LEADER_ADDRESS):{launch.dist_port}",
    )
    env: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in launch.env]
    env += [
        {"name": var, "valueFrom": {"secretKeyRef": {"name": secret_name, "key": var}}}
        for var in sorted(set(launch.secrets.values()))
    ]

    def container(leader: bool) -> dict[str, Any]:
        c: dict[str, Any] = {
            "name": "sglang",
            "image": image,
            "command": list(launch.program),
            "args": args,
        }
        if env:
            c["env"] = env
        c["ports"] = [{"containerPort": launch.port, "name": "http"}]
        if leader:
            probe = {"httpGet": {"path": "/health", "port": launch.port}, "timeoutSeconds": 30}
            c["startupProbe"] = {
                **probe,
                "periodSeconds": STARTUP_PERIOD_S,
                "failureThreshold": STARTUP_FAILURES,
            }
            c["readinessProbe"] = {**probe, "periodSeconds": 10, "failureThreshold": 3}
        c["resources"] = {"limits": {"nvidia.com/gpu": str(launch.gpus_per_node)}}
        c["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
        return c

    def pod(leader: bool) -> dict[str, Any]:
        spec = {
            "containers": [container(leader)],
            "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": SHM_SIZE}}],
        }
        meta = {"labels": {"role": "leader" if leader else "worker"}}
        return {"metadata": meta, "spec": spec}

    lws = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            # LeaderReady would deadlock: the leader's /health needs the workers (§6.1)
            "startupPolicy": "LeaderCreated",
            "leaderWorkerTemplate": {
                "size": launch.nodes,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": pod(True),
                "workerTemplate": pod(False),
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"{name}-leader"},
        "spec": {
            "type": "ClusterIP",
            "selector": {"leaderworkerset.sigs.k8s.io/name": name, "role": "leader"},
            "ports": [
                {"name": "http", "protocol": "TCP", "port": launch.port, "targetPort": launch.port}
            ],
        },
    }
    header = [
        f"# sglang across {launch.nodes} nodes for sglaunch profile '{launch.name}'.",
        f"# kubectl apply -f FILE; the API is the Service {name}-leader on port {launch.port}.",
    ]
    if launch.secrets:
        vars_ = sorted(set(launch.secrets.values()))
        literals = " ".join(f'--from-literal={v}="${v}"' for v in vars_)
        header.append(f"# Secrets: kubectl create secret generic {secret_name} {literals}")
    body = yaml.dump_all([lws, service], Dumper=PlainDumper, sort_keys=False, width=1000)
    return "\n".join(header) + "\n" + body
