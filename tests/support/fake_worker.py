"""A stand-in for sglaunch/in_sglang/oracle_worker.py that needs no sglang: the same JSON-lines protocol.

Run as `python fake_worker.py WORKER_PATH [--pdeathsig]` (the oracle client passes the real
worker's path first). Each answer echoes what the worker saw (argv, cwd, the environment
variables the request names in FAKE_WORKER_SHOW, and any the service leaked), so the
tests can check what reached the worker. FAKE_WORKER_SLEEP in a request's env delays it.
"""

from __future__ import annotations

import json
import os
import sys
import time


def send(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main() -> int:
    send({"event": "hello", "protocol": 1, "sglang_version": "0.5.23", "pid": os.getpid()})
    send({"event": "ready", "import_s": 0.0, "canary": {"canary_ok": True}})
    for line in sys.stdin:
        request = json.loads(line)
        env = request.get("env") or {}
        time.sleep(float(env.get("FAKE_WORKER_SLEEP") or 0))
        show = [n for n in (env.get("FAKE_WORKER_SHOW") or "").split(",") if n]
        send(
            {
                "id": request.get("id"),
                "ok": True,
                "resolved": {
                    "argv": request.get("argv"),
                    "cwd": request.get("cwd"),
                    "env": {k: env.get(k) for k in show},
                    "inherited": {k: os.environ.get(k) for k in show},
                    "worker_pid": os.getpid(),
                },
                "changed": {},
                "warnings": [],
            }
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
