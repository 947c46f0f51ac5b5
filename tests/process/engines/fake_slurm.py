"""A stand-in Slurm controller on PATH: sbatch, squeue, sacct, scancel (plus srun, scontrol
and curl from tests/support/engine_runs.py).

`sbatch --parsable SCRIPT` starts the batch script in its own session, in the background,
and prints a job id; `squeue -j ID` lists it while that session has a live process;
`scancel ID` signals the whole session; `sacct` says COMPLETED, FAILED or CANCELLED.
The head (scontrol's first host) is 127.0.0.1; the fake interpreter answers /health
there on --port when it is node rank 0 (FAKE_HTTP=1).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.support.engine_runs import fake_bin

_SBATCH = """#!/bin/bash
# sbatch --parsable SCRIPT
script="${@: -1}"
state="$FAKE_SLURM_STATE"
id=$(( $(ls "$state" | grep -c '^job-' || true) + 4100 ))
mkdir -p "$state/job-$id"
# the batch output goes where the script's #SBATCH --output says
out=$(sed -n 's/^#SBATCH --output=//p' "$script" | head -n1)
out="${out//%j/$id}"; out="${out//%x/job}"
SLURM_JOB_ID=$id SLURM_PROCID=0 SLURM_NODEID=0 SLURM_JOB_NODELIST=fake[1-2] \\
  setsid bash -c 'bash "$1"; echo $? > "$2/rc"' _ "$script" "$state/job-$id" \\
  </dev/null >"${out:-/dev/null}" 2>&1 &
echo $! > "$state/job-$id/pid"
echo "$id"
"""

_SQUEUE = f"""#!{sys.executable}
# squeue -h -j ID -o FORMAT
import os, sys
args = sys.argv[1:]
job = args[args.index("-j") + 1]
fmt = args[args.index("-o") + 1]
d = os.path.join(os.environ["FAKE_SLURM_STATE"], "job-" + job)
try:
    pid = int(open(os.path.join(d, "pid")).read())
    os.killpg(pid, 0)
except (OSError, ValueError):
    sys.exit(0)  # gone: squeue lists nothing
print(fmt.replace("%T", "RUNNING").replace("%N", "fake[1-2]"))
"""

_SACCT = """#!/bin/bash
# sacct -n -X -P -j ID -o State
for a in "$@"; do last_j="$prev"; prev="$a"; [ "$last_j" = -j ] && job="$a"; done
d="$FAKE_SLURM_STATE/job-$job"
[ -d "$d" ] || exit 0
if [ -f "$d/cancelled" ]; then echo "CANCELLED by 0"
elif [ -f "$d/rc" ] && [ "$(cat "$d/rc")" = 0 ]; then echo COMPLETED
elif [ -f "$d/rc" ]; then echo FAILED
else echo RUNNING; fi
"""

_SCANCEL = """#!/bin/bash
# scancel ID: TERM to the job's whole session (every node's task)
d="$FAKE_SLURM_STATE/job-$1"
[ -d "$d" ] || { echo "scancel: error: Invalid job id specified" >&2; exit 1; }
touch "$d/cancelled"
kill -TERM -- -"$(cat "$d/pid")" 2>/dev/null || true
"""

_SCONTROL = """#!/bin/bash
printf '%s\\n' 127.0.0.1 127.0.0.2 127.0.0.3 | head -n "${ENGINE_NODES:-2}"
"""

_PYTHON = f"""#!{sys.executable}
# the fake interpreter: records its argv; node rank 0 serves /health on --port
import http.server, json, os, signal, sys, time
argv = sys.argv[1:]
record = os.environ["ENGINE_RECORD"]
with open(os.path.join(record, f"argv-{{os.getpid()}}.json"), "w") as f:
    json.dump(argv[2:] if argv[:2] == ["-m", "sglang.launch_server"] else argv, f)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
rank = argv[argv.index("--node-rank") + 1]
if os.environ.get("FAKE_EXIT_AT_ONCE") == "1":
    sys.exit(1)
if rank == "0" and os.environ.get("FAKE_HTTP") == "1":
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok")
        def log_message(self, *a):
            pass
    print("The server is fired up and ready to roll!", flush=True)
    http.server.HTTPServer(("127.0.0.1", int(argv[argv.index("--port") + 1])), H).serve_forever()
print("Dummy health check server started in background thread", flush=True)
while True:
    time.sleep(1)
"""


def install(tmp: Path, nodes: int = 2) -> dict[str, str]:
    """PATH and variables for a fake Slurm; returns the environment to run sglaunch in."""
    bin_dir = fake_bin(tmp)
    for name, text in (
        ("sbatch", _SBATCH),
        ("squeue", _SQUEUE),
        ("sacct", _SACCT),
        ("scancel", _SCANCEL),
        ("scontrol", _SCONTROL),
        ("python3", _PYTHON),
    ):
        path = bin_dir / name
        path.write_text(text)
        path.chmod(0o755)
    state = tmp / "slurm"
    state.mkdir()
    record = tmp / "record"
    record.mkdir(exist_ok=True)
    return {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "FAKE_SLURM_STATE": str(state),
        "ENGINE_RECORD": str(record),
        "ENGINE_NODES": str(nodes),
    }


def job_processes(state: Path) -> list[int]:
    """Every live process of every fake job's session."""
    pids = []
    for job in state.glob("job-*"):
        try:
            sid = int((job / "pid").read_text())
        except (OSError, ValueError):
            continue
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[3]) == sid and fields[0] != "Z":  # session id, not a zombie
                pids.append(int(entry.name))
    return pids
