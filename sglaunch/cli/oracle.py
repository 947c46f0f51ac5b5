"""`sglaunch oracle setup | status | stop | schema`: sglang's own resolution, on this machine."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from sglaunch.cli.args import Parser, interpreter_path
from sglaunch.cli.oracle_services import services_command
from sglaunch.errors import UserError
from sglaunch.oracle import setup_env
from sglaunch.oracle.schema_cache import load_flag_schema
from sglaunch.release import parse_named


def parser() -> Parser:
    p = Parser(
        prog="sglaunch oracle",
        description=(
            "sglang's own argument resolution, run as a GPU-free dry run. `setup` builds a CPU-only "
            "sglang environment for machines without one; `status` lists the shared oracle services "
            "(with --check it starts the oracle and reports); `stop` ends the services; "
            "`schema` reads every flag (with help) from the sglang interpreter."
        ),
    )
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    setup = sub.add_parser("setup", help="create the CPU-only sglang environment")
    setup.add_argument("--dir", help="where to create it (default: sglaunch's data folder)")
    setup.add_argument(
        "--torch-index-url", help="index for torch only, e.g. https://download.pytorch.org/whl/cpu"
    )
    setup.add_argument("--force", action="store_true", help="reinstall even when it looks ready")
    setup.add_argument("--version", help="the sglang release, 0.5.19 to 0.5.23 (default 0.5.23)")
    status = sub.add_parser(
        "status", help="the running oracle services; --check: start the oracle and say if it works"
    )
    status.add_argument("--sglang-python", metavar="PATH", type=interpreter_path)
    status.add_argument("--json", action="store_true")
    status.add_argument(
        "--check", action="store_true", help="also start the oracle and say whether it works"
    )
    status.add_argument(
        "--no-oracle-service",
        action="store_true",
        help="with --check: start a worker in this process, not through the shared service",
    )
    stop = sub.add_parser("stop", help="end the oracle services (each one's worker with it)")
    stop.add_argument(
        "--sglang-python", metavar="PATH", type=interpreter_path, help="only this one's service"
    )
    schema = sub.add_parser(
        "schema", help="read the flag schema from the sglang interpreter (cached)"
    )
    schema.add_argument("--sglang-python", metavar="PATH", type=interpreter_path)
    schema.add_argument("--refresh", action="store_true", help="read it again even when cached")
    return p


def run(argv: Sequence[str]) -> int:
    args = parser().parse_args(list(argv))
    if args.command == "setup":
        forwarded: list[str] = []
        if args.dir:
            forwarded += ["--dir", args.dir]
        if args.torch_index_url:
            forwarded += ["--torch-index-url", args.torch_index_url]
        if args.force:
            forwarded.append("--force")
        if args.version:
            forwarded += ["--version", str(parse_named(args.version, what="--version"))]
        return setup_env.main(forwarded)
    if args.command in ("status", "stop"):
        return services_command(args)
    if args.command == "schema":
        found = load_flag_schema(args.sglang_python, refresh=args.refresh)
        words = {
            "cache": "cached",
            "extracted": "read from sglang",
            "bundled": "bundled (facts only)",
        }
        print(
            f"{len(found.schema)} flags of sglang {found.schema.sglang_version}: {words.get(found.source, found.source)}"
            + (f" — {found.reason}" if found.reason else "")
            + (f" ({found.path})" if found.path else ""),
            file=sys.stderr,
        )
        return 0
    raise UserError(f"unknown oracle command {args.command!r}")
