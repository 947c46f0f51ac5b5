#!/usr/bin/env python3
"""A stand-in for the sglang 0.5.23 HTTP server, for tests and benchmarks, with no GPU.

Launched exactly like the real server (`python tests/fake_sglang_server.py <sglang args>`),
it follows `reference/sglang-0.5.23-runtime.md` §7 with the §7.0 corrections: the same
argument parser (built from the bundled flag schema, so unknown flags exit 2), the same
log lines on the same streams with the same timing shape, the same endpoints per phase,
the same Prometheus metrics, the same process tree (scheduler and detokenizer children
with PR_SET_PDEATHSIG, readiness over a pipe) and the same signal behaviour.

Behaviour is chosen only through environment variables, so the argv stays the real one:
FAKE_SGLANG_SCENARIO (ok, fatal_scheduler, oom_no_mem, oom_kv_weights, oom_cuda_graph,
scheduler_sigkill, warmup_fail, port_in_use, runtime_crash, health_timeout, hang_loading,
argparse_error), FAKE_SGLANG_TIME_SCALE (multiplies every sleep; default 0.05),
FAKE_SGLANG_MAX_TOTAL_TOKENS, FAKE_SGLANG_SHARDS, FAKE_SGLANG_CAPTURE_BS,
FAKE_SGLANG_LOAD_SCRIPT (JSON list of {t, running, queue, new_tokens, gen_tps, token_usage}),
FAKE_SGLANG_CRASH_AFTER, FAKE_SGLANG_ENTRY (launch_server | serve) and
FAKE_SGLANG_LOG_RATE (decode log lines per second once ready, for benchmarks).
With `--nnodes N --node-rank R --dist-init-addr HOST:PORT` it runs one node of a multi-node
server (`fake_sglang/multinode.py`, reference `sglang-0.5.23-multinode.md` §4). It honours
SGLANG_LOG_MS, SGLANG_HEALTH_CHECK_TIMEOUT and SGLANG_LOG_FORWARD_ITERS like sglang.

Standard library only: tests need no fastapi, uvicorn or prometheus_client.
"""

from __future__ import annotations

import os
import sys

# run as a script from tests/: its sibling package is on the path
from fake_sglang.cli import parse_server_args
from fake_sglang.common import ROLE_FLAG, SCENARIO, SCENARIOS, SITE, _write
from fake_sglang.multinode import MultiNodeServer
from fake_sglang.scheduler import _child_main
from fake_sglang.server import FakeServer


def main(argv: list[str]) -> int:
    if argv and argv[0].startswith(ROLE_FLAG):
        return _child_main(argv)
    if os.environ.get("FAKE_SGLANG_ENTRY", "launch_server") == "launch_server":
        _write(
            2,
            f"{SITE}/launch_server.py:71: UserWarning: 'python -m sglang.launch_server' is still supported, "
            "but 'sglang serve' is the recommended entrypoint.\n"
            "  Example: sglang serve --model-path <model> [options]\n"
            "  warnings.warn(\n",
        )
    if SCENARIO not in SCENARIOS:
        _write(2, f"FAKE_SGLANG_SCENARIO={SCENARIO!r} is not one of {', '.join(SCENARIOS)}\n")
        return 2
    args = parse_server_args(argv)
    if (args.nnodes or 1) > 1:
        return MultiNodeServer(args, argv).run()
    return FakeServer(args, argv).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
