"""`run_headless` against the stand-in server in a process of its own, so tests can signal
or kill sglaunch itself and check that the server tree goes with it."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sglaunch.runtime import LaunchSpec, run_headless

ROOT = Path(__file__).resolve().parents[2]
FAKE = ROOT / "tests" / "fake_sglang_server.py"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("port", type=int)
    p.add_argument("--scenario", default="ok")
    p.add_argument("--detach", action="store_true")
    p.add_argument("--json", action="store_true")
    p.add_argument("--startup-timeout", type=float, default=30.0)
    p.add_argument("--env", action="append", default=[])
    argv = sys.argv[1:]
    # sglang flags go after "--", so this parser never sees them
    split = argv.index("--") if "--" in argv else len(argv)
    args = p.parse_args(argv[:split])
    flags = argv[split + 1 :]
    env = {"FAKE_SGLANG_SCENARIO": args.scenario, "FAKE_SGLANG_TIME_SCALE": "0.02"}
    env.update(item.split("=", 1) for item in args.env)
    spec = LaunchSpec(
        argv=("--model-path", "meta-llama/Llama-3.1-8B-Instruct", "--port", str(args.port), *flags),
        command_prefix=(sys.executable, str(FAKE)),
        env=env,
        profile="child",
    )
    code = run_headless(
        spec,
        json_lines=args.json,
        detach=args.detach,
        startup_timeout=args.startup_timeout,
        stop_grace=5.0,
        probe_interval=0.1,
        gpu_interval=None,
    )
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
