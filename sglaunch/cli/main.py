"""The `sglaunch` command: the TUI by default, headless subcommands for scripts and CI.

    sglaunch                                   the TUI (planning mode without a GPU)
    sglaunch --model PATH [--profile NAME]     the TUI, preloaded
    sglaunch check --model PATH [--gpu H100x8] [--nodes N] [--json] [--fix] [--no-oracle] [--env K=V] -- SGLANG_FLAGS...
    sglaunch fit --model PATH [--gpu H100x8] [--nodes N] [--assume-free-gib X] [--json] -- SGLANG_FLAGS...
    sglaunch explain TEXT-OR-CODE
    sglaunch doctor [--model PATH | --profile NAME] [--gpu H100x8] [--nodes N] [--json] -- SGLANG_FLAGS...
    sglaunch --profile NAME --apply [--fix] [--detach] [--json]
    sglaunch profiles list | show | export | import | delete | diff
    sglaunch oracle setup | status | stop
    sglaunch runs list | show RUN | logs RUN [--follow] | stop RUN | prune
    sglaunch attach RUN | --url URL [--json] [--api-key-env VAR]

Nothing heavy is imported here: each command imports what it needs.
"""

from __future__ import annotations

import contextlib
import difflib
import gc
import sys
from collections.abc import Callable, Sequence

from sglaunch import __version__
from sglaunch.cli.args import Parser, interpreter_path, node_count
from sglaunch.cli.tui_entry import open_tui
from sglaunch.errors import UserError
from sglaunch.exitcodes import ExitCode
from sglaunch.release_range import SUPPORTED_RANGE
from sglaunch.safeio import escape_controls, shown
from sglaunch.secrets import masked_stdio


def _check(argv: Sequence[str]) -> int:
    from sglaunch.cli import check  # loaded when this subcommand runs

    return check.run(argv)


def _doctor(argv: Sequence[str]) -> int:
    from sglaunch.cli import doctor  # loaded when this subcommand runs

    return doctor.run(argv)


def _fit(argv: Sequence[str]) -> int:
    from sglaunch.cli import fit  # loaded when this subcommand runs

    return fit.run(argv)


def _explain(argv: Sequence[str]) -> int:
    from sglaunch.cli import explain  # loaded when this subcommand runs

    return explain.run(argv)


def _profiles(argv: Sequence[str]) -> int:
    from sglaunch.cli import profiles  # loaded when this subcommand runs

    return profiles.run(argv)


def _oracle(argv: Sequence[str]) -> int:
    from sglaunch.cli import oracle  # loaded when this subcommand runs

    return oracle.run(argv)


def _attach(argv: Sequence[str]) -> int:
    from sglaunch.cli import attach  # loaded when this subcommand runs

    return attach.run(argv)


def _runs(argv: Sequence[str]) -> int:
    from sglaunch.cli import runs  # loaded when this subcommand runs

    return runs.run(argv)


SUBCOMMANDS: dict[str, Callable[[Sequence[str]], int]] = {
    "check": _check,
    "fit": _fit,
    "doctor": _doctor,
    "explain": _explain,
    "profiles": _profiles,
    "oracle": _oracle,
    "attach": _attach,
    "runs": _runs,
}


def top_parser() -> Parser:
    p = Parser(
        prog="sglaunch",
        description=(
            "A launch assistant for SGLang: check server flags against sglang's own rules before "
            "anything loads, launch, and watch the server. Subcommands: check, fit, doctor, explain, profiles, oracle, runs, attach."
        ),
    )
    p.add_argument(
        "--version",
        action="version",
        version=f"sglaunch {__version__} (mirrors sglang {SUPPORTED_RANGE})",
    )
    p.add_argument("--model", help="open this model: a folder, a cached repo id, or example:NAME")
    p.add_argument("--profile", help="a saved launch profile")
    p.add_argument("--gpu", help="plan for these GPUs, e.g. H100x8 (default: the local GPUs)")
    p.add_argument(
        "--nodes",
        type=node_count,
        metavar="N",
        help="with --apply: the server spans N machines, each with these GPUs "
        "(default: the profile's nodes)",
    )
    p.add_argument(
        "--apply",
        action="store_true",
        help="headless: validate the profile, then launch and monitor it",
    )
    p.add_argument(
        "--target",
        choices=("local", "slurm", "lws", "skypilot"),
        default=None,
        help="with --apply: launch here (local, the default) or hand a multi-node profile to "
        "Slurm (sbatch), Kubernetes (a LeaderWorkerSet) or SkyPilot",
    )
    p.add_argument(
        "--fix", action="store_true", help="with --apply: apply each finding's first fix"
    )
    p.add_argument("--save", action="store_true", help="with --apply --fix: save the fixed profile")
    p.add_argument(
        "--detach", action="store_true", help="with --apply: return once the server is ready"
    )
    p.add_argument("--json", action="store_true", help="with --apply: JSON lines on stdout")
    p.add_argument("--no-oracle", action="store_true", help="built-in rules only")
    p.add_argument(
        "--no-oracle-service",
        action="store_true",
        help="with --apply: run sglang's check in this process, not in the shared service",
    )
    p.add_argument(
        "--startup-timeout",
        type=float,
        default=1800.0,
        metavar="SECONDS",
        help="with --apply: give up (and stop the server) if it is not ready by then",
    )
    p.add_argument(
        "--sglang-python",
        metavar="PATH",
        type=interpreter_path,
        help="the interpreter that has sglang installed",
    )
    p.add_argument(
        "--sglang-version",
        metavar="V",
        help="check for this sglang release (0.5.19 to 0.5.23) when none is "
        "installed; an installed sglang's own version always wins",
    )
    return p


def _top(argv: Sequence[str]) -> int:
    args = top_parser().parse_args(list(argv))
    if args.apply:
        if not args.profile:
            raise UserError("--apply needs --profile NAME (see `sglaunch profiles list`)")
        from sglaunch.cli import apply  # loaded when this subcommand runs

        return apply.run(args)
    if args.fix:
        raise UserError(
            "--fix goes with --apply; `sglaunch check --fix … -- FLAGS` prints the fixed line "
            "without launching"
        )
    if args.target is not None:
        raise UserError(
            "--target goes with --apply: sglaunch --profile NAME --apply --target slurm"
        )
    for flag in ("save", "detach", "json", "no_oracle"):
        if getattr(args, flag):
            raise UserError(f"--{flag.replace('_', '-')} goes with --apply")
    if args.nodes is not None:
        raise UserError("--nodes goes with --apply (in the TUI, choose the nodes with ctrl+g)")
    return open_tui(
        model=args.model,
        profile=args.profile,
        gpu=args.gpu,
        sglang_python=args.sglang_python,
        sglang_version=args.sglang_version,
        no_oracle_service=args.no_oracle_service,
    )


def _unknown_command(word: str) -> str:
    """`sglaunch chek`: the command it most likely meant, in one line."""
    close = difflib.get_close_matches(word, list(SUBCOMMANDS), n=1, cutoff=0.6)
    if close:
        return f"unknown command {shown(word, 40)!r} — did you mean {close[0]!r}? (see sglaunch --help)"
    return f"unknown command {shown(word, 40)!r} (commands: {', '.join(SUBCOMMANDS)}; see sglaunch --help)"


# commands that print their answer and end, holding no file, server or terminal of their own
_REPORTS = ("check", "fit", "explain")


def main(argv: Sequence[str] | None = None) -> int:
    program = argv is None  # the process's own command line: it exits when this returns
    argv = list(sys.argv[1:] if argv is None else argv)

    headless = bool(argv) and (argv[0] in SUBCOMMANDS or "--apply" in argv)
    try:
        # the headless commands print through a mask: no secret they know of is printed back
        with masked_stdio(argv) if headless else contextlib.nullcontext():
            return _main(argv)
    finally:
        if program and argv and argv[0] in _REPORTS:
            # the interpreter's shutdown would walk every object once more to collect
            # cycles the OS frees anyway: ~20 ms of a `check` that takes ~0.2 s
            gc.freeze()


def _main(argv: list[str]) -> int:
    try:
        if argv and argv[0] in SUBCOMMANDS:
            return SUBCOMMANDS[argv[0]](argv[1:])
        if argv and not argv[0].startswith("-"):
            raise UserError(_unknown_command(argv[0]))
        return _top(argv)
    except UserError as exc:
        # one line whatever the message quotes: control characters are shown escaped
        print(f"sglaunch: {escape_controls(exc.message)}", file=sys.stderr)
        return int(exc.code)
    except KeyboardInterrupt:
        print("sglaunch: interrupted", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:
        # `sglaunch check --json | head`: the reader left; nothing to report
        return int(ExitCode.OK)
    except OSError as exc:
        # a file system failure no reader foresaw (disk full, a folder gone): one line
        where = f"{escape_controls(str(exc.filename))}: " if exc.filename else ""
        print(f"sglaunch: {where}{exc.strerror or exc}", file=sys.stderr)
        return int(ExitCode.USAGE)


if __name__ == "__main__":
    sys.exit(main())
