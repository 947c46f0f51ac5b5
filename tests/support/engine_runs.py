"""Run an engine export the way its engine would, and collect each node's sglang argv.

Each engine gets stand-ins for what it provides and nothing more: Slurm's `srun` starts one
task per node with its own `SLURM_PROCID` (and the batch shell has Slurm's own
`SLURM_PROCID=0`, so a rank expanded there shows up as two rank-0 nodes); SkyPilot runs
`run` on every node with `SKYPILOT_NODE_RANK`/`SKYPILOT_NODE_IPS`; Kubernetes expands
`$(VAR)` in container args from the pod's environment (and nothing else). The interpreter
is a fake `python3` that writes its argv to a file and lingers `FAKE_SERVE_S` seconds.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

HOSTS = ("node-a", "node-b", "node-c", "node-d")
IPS = ("10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4")

_FAKE_PYTHON = f"""#!{sys.executable}
import json, os, sys, time
record = os.environ["ENGINE_RECORD"]
path = os.path.join(record, f"argv-{{os.getpid()}}.json")
with open(path + ".tmp", "w") as f:
    argv = sys.argv[1:]
    # what sglang's parser sees: the flags after `-m sglang.launch_server`
    json.dump(argv[2:] if argv[:2] == ["-m", "sglang.launch_server"] else argv, f)
os.replace(path + ".tmp", path)
time.sleep(float(os.environ.get("FAKE_SERVE_S", "0")))
sys.exit(int(os.environ.get("FAKE_EXIT", "0")))
"""

_FAKE_SRUN = """#!/bin/bash
# srun stand-in: one task per node, each with its own SLURM_PROCID/SLURM_NODEID
# and --output=PATH with %n (node index), %j (job id), %x (job name) as Slurm fills them
n=1
out=""
for a in "$@"; do
  case "$a" in --ntasks=*) n="${a#--ntasks=}";; --output=*) out="${a#--output=}";; esac
done
cmd="${@: -1}"
pids=()
for ((i = 0; i < n; i++)); do
  if [ -n "$out" ]; then
    log="${out//%n/$i}"; log="${log//%j/${SLURM_JOB_ID:-0}}"; log="${log//%x/job}"
    SLURM_PROCID=$i SLURM_NODEID=$i bash -c "$cmd" >"$log" 2>&1 &
  else
    SLURM_PROCID=$i SLURM_NODEID=$i bash -c "$cmd" &
  fi
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
exit $rc
"""

_FAKE_SCONTROL = """#!/bin/bash
# scontrol show hostnames "$SLURM_JOB_NODELIST" stand-in
printf '%s\\n' node-a node-b node-c node-d | head -n "${ENGINE_NODES:-2}"
"""

_FAKE_CURL = """#!/bin/bash
# the head answers /health once every node's process started (FAKE_HEALTHY=0: never)
[ "${FAKE_HEALTHY:-1}" = 1 ] || exit 7
count=$(ls "$ENGINE_RECORD" | grep -c '^argv-.*json$' || true)
[ "$count" -ge "${ENGINE_NODES:-2}" ]
"""


def fake_bin(tmp: Path) -> Path:
    """A folder of stand-ins (python3, srun, scontrol, curl) to put first on PATH."""
    bin_dir = tmp / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name, text in (
        ("python3", _FAKE_PYTHON),
        ("srun", _FAKE_SRUN),
        ("scontrol", _FAKE_SCONTROL),
        ("curl", _FAKE_CURL),
    ):
        path = bin_dir / name
        path.write_text(text)
        path.chmod(0o755)
    return bin_dir


def recorded(record: Path) -> list[list[str]]:
    return [json.loads(p.read_text()) for p in sorted(record.glob("argv-*.json"))]


def engine_env(
    tmp: Path, nodes: int, extra: dict[str, str] | None = None
) -> tuple[dict[str, str], Path]:
    record = tmp / "record"
    record.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "PATH": f"{fake_bin(tmp)}:{os.environ['PATH']}",
        "ENGINE_RECORD": str(record),
        "ENGINE_NODES": str(nodes),
        **(extra or {}),
    }
    return env, record


def run_sbatch(
    script: str, tmp: Path, nodes: int, extra: dict[str, str] | None = None, timeout: float = 60
) -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
    """The batch script as Slurm runs it on the first node: (the process, each task's argv)."""
    path = tmp / "job.sbatch"
    path.write_text(script)
    env, record = engine_env(
        tmp,
        nodes,
        {
            # the batch shell's own values: a rank expanded here is this one, on every node
            "SLURM_PROCID": "0",
            "SLURM_NODEID": "0",
            "SLURM_JOB_NODELIST": f"node-[a-{chr(96 + nodes)}]",
            "SLURM_JOB_ID": "4242",
            **(extra or {}),
        },
    )
    proc = subprocess.run(
        ["bash", str(path)], env=env, cwd=tmp, capture_output=True, text=True, timeout=timeout
    )
    return proc, recorded(record)


def run_skypilot(task_yaml: str, tmp: Path, extra: dict[str, str] | None = None) -> list[list[str]]:
    """`run` on every node as SkyPilot starts it: each node's argv, in rank order."""
    task = yaml.safe_load(task_yaml)
    nodes = int(task["num_nodes"])
    out: list[list[str]] = []
    for rank in range(nodes):
        node_tmp = tmp / f"node{rank}"
        node_tmp.mkdir()
        env, record = engine_env(
            node_tmp,
            nodes,
            {
                **{k: str(v) for k, v in (task.get("envs") or {}).items()},
                "SKYPILOT_NODE_RANK": str(rank),
                "SKYPILOT_NODE_IPS": "\n".join(IPS[:nodes]),
                "SKYPILOT_NUM_NODES": str(nodes),
                **(extra or {}),
            },
        )
        proc = subprocess.run(
            ["bash", "-c", task["run"]], env=env, capture_output=True, text=True, timeout=30
        )
        assert proc.returncode == 0, proc.stderr
        [argv] = recorded(record)
        out.append(argv)
    return out


_K8S_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def k8s_expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' expansion of command/args: `$(VAR)` from the container env, `$$` is `$`,
    an unknown reference stays as written; nothing else (no `$VAR`)."""

    def one(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        return env[name] if name in env else m.group(0)

    return _K8S_REF.sub(one, text)


def lws_pods(manifest: str, secrets: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Each pod of the one group: {"argv": sglang's argv, "container": the container}."""
    docs = list(yaml.safe_load_all(manifest))
    lws = next(d for d in docs if d["kind"] == "LeaderWorkerSet")
    name = lws["metadata"]["name"]
    tmpl = lws["spec"]["leaderWorkerTemplate"]
    size = int(tmpl["size"])
    pods = []
    for index in range(size):
        pod = tmpl["leaderTemplate"] if index == 0 else tmpl["workerTemplate"]
        [container] = pod["spec"]["containers"]
        # the LWS webhook's variables come first; then the container's own
        env = {
            "LWS_LEADER_ADDRESS": f"{name}-0.{name}.default",
            "LWS_GROUP_SIZE": str(size),
            "LWS_WORKER_INDEX": str(index),
        }
        for item in container.get("env", []):
            if "value" in item:
                env[item["name"]] = k8s_expand(item["value"], env)
            else:
                env[item["name"]] = (secrets or {})[item["valueFrom"]["secretKeyRef"]["key"]]
        argv = [k8s_expand(a, env) for a in container["args"]]
        pods.append({"argv": argv, "container": container, "env": env})
    return pods


def run_command_lines(
    lines: list[str], tmp: Path, extra: dict[str, str] | None = None
) -> list[list[str]]:
    """Each per-node line through bash, as a user pastes it on its node."""
    out = []
    for i, line in enumerate(lines):
        node_tmp = tmp / f"line{i}"
        node_tmp.mkdir()
        env, record = engine_env(node_tmp, len(lines), extra)
        proc = subprocess.run(
            ["bash", "-c", line], env=env, capture_output=True, text=True, timeout=30
        )
        assert proc.returncode == 0, proc.stderr
        [argv] = recorded(record)
        out.append(argv)
    return out
