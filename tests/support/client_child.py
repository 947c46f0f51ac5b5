"""One client process for the concurrency test: start the oracle through the service, ask once.

    python client_child.py SGLANG_PYTHON FOLDER SGLANG_FLAGS...

Prints one JSON object: whether the oracle was available, which service and
worker answered, and sglang's error message.
"""

from __future__ import annotations

import json
import sys

from sglaunch.facts.presets import parse_gpu_spec
from sglaunch.oracle.service_client import ServiceOracle


def main() -> int:
    python, folder, *argv = sys.argv[1:]
    with ServiceOracle(python, folder=folder, timeout=120, start_timeout=240) as oracle:
        answer = oracle.resolve(argv, {}, parse_gpu_spec("H100x2"))
        print(
            json.dumps(
                {
                    "available": oracle.status.available,
                    "reason": oracle.status.reason,
                    "service_pid": oracle.service_pid,
                    "worker_pid": oracle.worker_pid,
                    "error": answer.error.message if answer.error else answer.fault,
                }
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
