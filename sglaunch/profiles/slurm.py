"""A multi-node profile as a Slurm batch script (`sbatch`).

One task per node; each task's own shell expands `$SLURM_PROCID` into `--node-rank`
(the batch shell never does: expanded there every node would be rank 0, the bug of
sglang's own example, sgl-project/sglang PR 36116). The head is the first host of
`scontrol show hostnames "$SLURM_JOB_NODELIST"`; every node listens on `--host 0.0.0.0`
so the head's `/health` answers the wait below; the wait is bounded and notices a task
that exits early; `--kill-on-bad-exit=1` ends every node when one fails.
"""

from __future__ import annotations

import shlex

from sglaunch.errors import UserError
from sglaunch.flags.argv import node_argv
from sglaunch.flags.schema import FlagSchema
from sglaunch.profiles.argvform import Raw, quote
from sglaunch.profiles.nodes import node_launch, require_nodes
from sglaunch.profiles.profile import Profile
from sglaunch.safeio import has_control, shown
from sglaunch.secrets import shell_reference

# How long the batch script waits for the head's /health before it gives up (seconds):
# downloads, weight loading and CUDA graph capture of a 400B model take most of an hour.
READY_TIMEOUT = 3600
# The line the batch script prints once it knows the head; `--apply --target slurm` reads it.
HEAD_MARK = "sglaunch-head:"
READY_MARK = "sglaunch-ready:"


def to_sbatch(
    profile: Profile,
    *,
    schema: FlagSchema | None = None,
    python: str | None = None,
    log_dir: str | None = None,
    ready_timeout: int = READY_TIMEOUT,
    poll_s: int = 5,
) -> str:
    """The sbatch script. Per-node logs go to `log_dir`/node-N.log (default: the folder
    sbatch runs in, named after the job)."""
    require_nodes(profile, "--format slurm")
    launch = node_launch(profile, schema=schema, python=python, engine_python=False)
    n = launch.nodes
    argv = node_argv(
        [*launch.argv, "--host", launch.host, "--port", Raw('"$HTTP_PORT"')],
        Raw('"$SLURM_PROCID"'),
        str(n),
        Raw('"$HEAD_NODE:$DIST_PORT"'),
    )
    # the task's command, expanded by the task's own bash: single-quoted as a whole here
    task = "exec " + " ".join(quote(t) for t in [*launch.program, *argv])
    if log_dir is None:
        batch_log, node_log = "%x-%j.out", "%x-%j-node%n.log"
    else:
        batch_log, node_log = f"{log_dir}/batch.log", f"{log_dir}/node-%n.log"
    lines = [
        "#!/bin/bash",
        f"# sglang across {n} nodes for sglaunch profile '{launch.name}'.",
        f"#SBATCH --job-name={_job_name(launch.name)}",
        f"#SBATCH --nodes={n}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --gpus-per-node={launch.gpus_per_node}",
        f"#SBATCH --output={_sbatch_path(batch_log)}",
        "set -euo pipefail",
    ]
    if launch.secrets:
        names = sorted(set(launch.secrets.values()))
        lines.append(f"# Secrets come from the environment sbatch was run in: {', '.join(names)}.")
        lines += [f": {shell_reference(v)}" for v in names]
    for k, v in launch.env:
        lines.append(f"export {k}={shlex.quote(v)}")
    lines += [
        f"export DIST_PORT={launch.dist_port} HTTP_PORT={launch.port}",
        'HEAD_NODE=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        "export HEAD_NODE",
        f'echo "{HEAD_MARK} $HEAD_NODE:$HTTP_PORT"',
        "",
        "# Single quotes: each task's own shell expands $SLURM_PROCID into its --node-rank.",
        f"srun --nodes={n} --ntasks={n} --ntasks-per-node=1 --kill-on-bad-exit=1 \\",
        f"     --output={_sbatch_path(node_log)} \\",
        f"     bash -c {shlex.quote(task)} &",
        "SRUN_PID=$!",
        "",
        "healthy() {",
        "  if command -v curl >/dev/null 2>&1; then",
        '    curl -sf -o /dev/null --max-time 10 "http://$HEAD_NODE:$HTTP_PORT/health"',
        "  else",
        f"    {shlex.quote(launch.program[0] if launch.program[0] != 'sglang' else 'python3')} "
        "-c 'import sys, urllib.request; "
        'urllib.request.urlopen(sys.argv[1], timeout=10)\' "http://$HEAD_NODE:$HTTP_PORT/health"'
        " >/dev/null 2>&1",
        "  fi",
        "}",
        f"deadline=$((SECONDS + {int(ready_timeout)}))",
        "until healthy; do",
        '  if ! kill -0 "$SRUN_PID" 2>/dev/null; then',
        '    echo "sglang exited before the head answered /health; see the node logs" >&2',
        '    wait "$SRUN_PID" || true',
        "    exit 1",
        "  fi",
        '  if [ "$SECONDS" -ge "$deadline" ]; then',
        f'    echo "the head did not answer /health within {int(ready_timeout)} s; stopping" >&2',
        '    kill "$SRUN_PID" 2>/dev/null || true',
        '    wait "$SRUN_PID" || true',
        "    exit 1",
        "  fi",
        f"  sleep {int(poll_s)}",
        "done",
        f'echo "{READY_MARK} http://$HEAD_NODE:$HTTP_PORT"',
        'wait "$SRUN_PID"',
    ]
    return "\n".join(lines) + "\n"


def _job_name(name: str) -> str:
    return "sglang-" + "".join(c if c.isalnum() or c in "-_." else "-" for c in name)


def _sbatch_path(path: str) -> str:
    # #SBATCH lines are not shell: nothing quotes a space there
    if any(c.isspace() for c in path) or has_control(path):
        raise UserError(
            f"Slurm cannot write logs to {shown(repr(path))}: #SBATCH paths take no spaces; "
            "use a folder without spaces (e.g. set XDG_STATE_HOME)"
        )
    return path
