"""`sglaunch check`: will sglang accept these flags for this model on these GPUs?"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from sglaunch.checking import findings_json
from sglaunch.cli.args import (
    Parser,
    interpreter_path,
    node_count,
    parse_env_pairs,
    split_double_dash,
)
from sglaunch.errors import UserError
from sglaunch.exitcodes import ExitCode
from sglaunch.facts import gpu as gpu_facts
from sglaunch.facts.model import ModelNotCached, load_model_facts, model_path_for_sglang
from sglaunch.facts.presets import parse_gpu_spec
from sglaunch.flags.argv import _Lookup, parse_argv, to_argv
from sglaunch.flags.launchline import parse_launch_line
from sglaunch.flags.schema import FlagSchema
from sglaunch.memory.assumptions import memory_facts
from sglaunch.oracle.service_client import connect, known_sglang_version
from sglaunch.release import load_flag_facts, parse_named
from sglaunch.secrets import mask_argv
from sglaunch.session import CUDA_VISIBLE_DEVICES, inherited_env
from sglaunch.validators.facts import GpuFacts, GpuMode, ModelFacts
from sglaunch.verdict import OracleClient, TwoTier

# What only comes after sglang's question is sent (the session and its rules, the
# verdict's cards, the output) is imported where it is used, so that it loads while
# sglang works the answer out: see `check_command`.
if TYPE_CHECKING:
    from sglaunch.fixing import AppliedFix
    from sglaunch.release import FlagFacts
    from sglaunch.session import LaunchSession
    from sglaunch.validators.findings import Finding
    from sglaunch.verdict import Verdict

PARSE_CODES = ("unknown-flag", "ambiguous-flag", "invalid-flag-value")


def parser() -> Parser:
    p = Parser(
        prog="sglaunch check",
        description=(
            "Check sglang server flags for a model on your GPUs (or a planned machine) "
            "before anything loads. Put sglang's flags, or a whole pasted launch line, after --."
        ),
        epilog="example: sglaunch check --model example:minicpm-sala --gpu H100x8 -- --tp 2 --enable-dp-attention --dp-size 2",
    )
    p.add_argument(
        "--model", help="model folder, Hugging Face repo id in the local cache, or example:NAME"
    )
    p.add_argument(
        "--gpu",
        help="plan for these GPUs instead of the local ones, e.g. H100x8, B200x8, RTX5090x1",
    )
    p.add_argument(
        "--nodes",
        type=node_count,
        metavar="N",
        help="one server over N machines, each with the --gpu preset or the local GPUs "
        "(default: the line's --nnodes, else 1)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument(
        "--no-oracle", action="store_true", help="built-in rules only; skip sglang's own resolution"
    )
    p.add_argument(
        "--env",
        action="append",
        metavar="K=V",
        help="an environment variable the server will see (repeatable); SGLANG_* from your shell count too",
    )
    p.add_argument(
        "--sglang-python",
        metavar="PATH",
        type=interpreter_path,
        help="the Python interpreter that has sglang installed",
    )
    p.add_argument(
        "--oracle-timeout", type=float, default=60.0, help="seconds to wait for sglang's verdict"
    )
    p.add_argument(
        "--sglang-version",
        metavar="V",
        help="check for this sglang release (0.5.19 to 0.5.23) when none is installed; "
        "an installed sglang's own version always wins",
    )
    p.add_argument(
        "--no-oracle-service",
        action="store_true",
        help="start sglang's check in this process instead of asking the shared, warm service",
    )
    p.add_argument(
        "--fix",
        action="store_true",
        help="apply each error's first fix (in rounds) and print the fixed launch line on stdout; "
        "nothing is launched",
    )
    return p


def split_launch(tokens: list[str]) -> tuple[list[str], dict[str, str]]:
    """sglang flags from after `--`: plain flags, or a pasted launch line (python -m … / sglang serve …)."""
    if tokens and not tokens[0].startswith("-"):
        line = parse_launch_line(shlex.join(tokens))
        return line.argv, line.env
    return tokens, {}


def model_from_argv(argv: list[str], schema: FlagSchema) -> str | None:
    """The --model-path value in sglang flags (any spelling argparse accepts)."""
    return parse_argv(argv, schema).values.get("model_path")


def with_model_path(argv: list[str], model_path: str, schema: FlagSchema) -> list[str]:
    """argv with --model-path set to `model_path` (replacing any the user wrote)."""
    out: list[str] = []
    lookup = _Lookup(schema)
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok.startswith("--"):
            spec, _, explicit, _ = lookup.find(tok)
            if spec is not None and spec.dest == "model_path":
                i += 1 if explicit is not None else 2
                continue
        out.append(tok)
        i += 1
    return ["--model-path", model_path, *out]


def run(argv: Sequence[str]) -> int:
    own, sglang_tokens = split_double_dash(argv)
    args = parser().parse_args(own)
    return check_command(
        model=args.model,
        sglang_tokens=sglang_tokens,
        gpu_spec=args.gpu,
        as_json=args.json,
        use_oracle=not args.no_oracle,
        env_pairs=args.env,
        sglang_python=args.sglang_python,
        oracle_timeout=args.oracle_timeout,
        sglang_version=args.sglang_version,
        use_service=not args.no_oracle_service,
        fix=args.fix,
        nodes=args.nodes,
    )


def check_command(
    *,
    model: str | None,
    sglang_tokens: list[str],
    gpu_spec: str | None,
    as_json: bool,
    use_oracle: bool,
    env_pairs: Sequence[str] | None,
    sglang_python: str | None,
    oracle_timeout: float,
    sglang_version: str | None = None,
    use_service: bool = True,
    fix: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
    nodes: int | None = None,
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    # which sglang release the verdict is for, and its flags (sglaunch/release.py); a warm
    # oracle service already knows the installed version, which saves starting sglang to ask
    known = _known_version(sglang_python) if use_oracle and use_service else None
    facts = load_flag_facts(
        sglang_python, parse_named(sglang_version), read_installed=use_oracle, known=known
    )
    schema, active = facts.schema, facts.active
    sglang_argv, line_env = split_launch(sglang_tokens)
    if any(t == "--config" or t.startswith("--config=") for t in sglang_argv):
        # sglang merges the file into its argv before parsing: check what it will see
        # (imported only then: the YAML stack costs a check ~40 ms at start-up)
        from sglaunch.profiles.sglang_yaml import expand_config

        sglang_argv = expand_config(sglang_argv, schema=schema)
    env = {**line_env, **parse_env_pairs(env_pairs)}

    source = model or model_from_argv(sglang_argv, schema)
    if not source:
        raise UserError(
            "no model: give --model PATH (a folder, a cached repo id, or example:NAME), or --model-path after --"
        )
    model_facts: ModelFacts | None
    try:
        model_facts = load_model_facts(source, sglang_version=active.version)
    except ModelNotCached:
        # a repo sglang will download is a valid launch: checked without its config
        model_facts = None
    sglang_argv = with_model_path(sglang_argv, model_path_for_sglang(source), schema)

    tiers = TwoTier(_oracle(sglang_python, oracle_timeout, use_service) if use_oracle else None)
    if not use_oracle:
        tiers.switch_off("skipped (--no-oracle)")
    elif model_facts is not None:
        # sglang's question needs only the launch, not the built-in verdict: sent now, its
        # answer is worked out while this process loads the rules, runs them and prepares
        # to read it (the session checks below that it asks this very question)
        ahead = question_ahead(schema, sglang_argv, env, source, gpu_spec, nodes)
        if ahead is not None:
            tiers.send_ahead(*ahead)
    # the output's modules: loaded while sglang works the answer out
    from sglaunch.cli.render import Painter, print_findings, summary_line
    from sglaunch.fixing import fix_rounds

    try:
        session = checked_session(
            schema, sglang_argv, env, source, model_facts, gpu_spec, nodes=nodes
        )
    except BaseException:
        tiers.close()  # a launch the session refuses: the question sent ahead is dropped
        raise
    session.sglang_version = active.version
    if use_oracle:
        # the question sent ahead when it is the session's; else (a launch it could not be
        # worked out for) the session's own, before the built-in rules run
        tiers.send_early(session)
    t0 = time.perf_counter()
    session.validate()  # timed on its own: what one re-check costs
    builtin_ms = (time.perf_counter() - t0) * 1000
    gpu = session.gpu
    paint = Painter(err)

    def say_fixed(done: AppliedFix) -> None:
        print(paint(f"fixed {done.code}: {done.label} ({done.changes})", "32"), file=err)

    applied: list[AppliedFix] = []
    try:
        if fix and session.issues:
            # a value sglang's parser refuses, with a fix (a choice it has): fixed first, on
            # the built-in tier alone, as sglang would stop there before resolving anything
            _, applied = fix_rounds(
                session, tiers.verdict(session), tiers.verdict, on_fix=say_fixed
            )
        if session.issues:
            tiers.switch_off("skipped: sglang's parser would stop at the flag errors first")
            # sglang's parser stops here (exit 2): say just that, one line per flag
            for f in session.report.findings:
                if f.code in PARSE_CODES:
                    print(f"sglaunch: {f.message}", file=err)
            if as_json:
                _print_json(
                    out, tiers.verdict(session), session, sglang_argv, active.installed, facts
                )
            return int(ExitCode.USAGE)
        arch = model_facts.architecture if model_facts is not None else "config not read"
        print(
            paint.dim(
                f"sglaunch check · {arch} ({source}) · {gpu.status or gpu.describe()}"
                f" · for {active.label()}"
            ),
            file=err,
        )
        if session.model_note:
            print(paint(f"! {session.model_note}", "33"), file=err)
        for line in facts.lines():
            print(paint(f"! {line}", "33"), file=err)
        verdict = tiers.check(session)
        if fix:
            verdict, more = fix_rounds(session, verdict, tiers.check, on_fix=say_fixed)
            applied += more
    finally:
        tiers.close()
    # the GPUs are this machine's: so is the host the launch will run on (`sglaunch doctor`)
    host = local_host_findings(session)
    print_findings([*verdict.findings, *host], schema, err)
    status = f"sglang check: {verdict.oracle_status}"
    print(
        paint.dim(
            f"{summary_line([*verdict.findings, *host])} · built-in rules {builtin_ms:.1f} ms · {status}"
        ),
        file=err,
    )
    if fix:
        _print_fixed(out, err, verdict, session, applied, as_json, active.installed, facts)
    elif as_json:
        _print_json(out, verdict, session, sglang_argv, active.installed, facts, host=host)
    host_errors = any(f.is_error for f in host)
    return int(ExitCode.VALIDATION if verdict.errors or host_errors else ExitCode.OK)


def question_ahead(
    schema: FlagSchema,
    argv: list[str],
    env: Mapping[str, str],
    source: str,
    gpu_spec: str | None,
    nodes: int | None,
) -> tuple[list[str], dict[str, str], GpuFacts] | None:
    """sglang's question (argv, environment, GPUs) as `checked_session`'s session will ask
    it, from the launch alone: what `LaunchSession.argv`, `check_env` and `gpu` give for a
    planning preset on one node. None where the session's own answer could differ (a
    parse error, the local GPUs, CUDA_VISIBLE_DEVICES, --nnodes): `TwoTier` compares the
    two anyway and asks again when they differ."""
    if not gpu_spec or CUDA_VISIBLE_DEVICES in env or nodes not in (None, 1):
        return None
    parsed = parse_argv(argv, schema)
    if parsed.issues or "nnodes" in parsed.values:
        return None
    try:
        gpu = parse_gpu_spec(gpu_spec)
    except UserError:
        return None  # the session says so, in its words
    flags = {k: v for k, v in parsed.values.items() if k != "model_path"}
    question = ["--model-path", model_path_for_sglang(source), *to_argv(flags, schema)]
    return question, {**inherited_env(os.environ), **env}, gpu


def local_host_findings(session: LaunchSession) -> list[Finding]:
    """The host checks, when the check is for this machine's GPUs (not a planning preset)."""
    if session.gpu.mode is not GpuMode.NVML:
        return []
    # the host's collectors (sockets, processes): only for this machine's own GPUs
    from sglaunch.host import host_findings

    return host_findings(session)


def _print_fixed(
    out: TextIO,
    err: TextIO,
    verdict: Verdict,
    session: LaunchSession,
    applied: list[AppliedFix],
    as_json: bool,
    sglang_version: str | None,
    versions: FlagFacts,
) -> None:
    """`check --fix`: the fixed line on stdout (JSON: with its argv and its findings)."""
    line = session.command_line(display=True)
    if verdict.errors:
        n = len(verdict.errors)
        print(f"{n} error{'s' if n != 1 else ''} left that no fix resolves", file=err)
    elif not applied:
        print("nothing to fix; the line is unchanged", file=err)
    if not as_json:
        print(line, file=out)
        out.flush()
        return
    from sglaunch.check_json import result_json  # the memory plan's JSON: only for --json

    # the argv of the line above: the model as sglang will be given it, secrets masked
    model = session.launch_model_path()
    argv = session.argv()
    argv = mask_argv(
        with_model_path(argv, model, session.schema) if model else argv, session.schema
    )
    data = result_json(
        verdict, session, argv=argv, sglang_version=sglang_version, versions=versions
    )
    data["fixed_argv"] = argv
    data["fixed_line"] = line
    data["fixes"] = [a.to_json() for a in applied]
    out.write(json.dumps(data, indent=2, default=_json_default) + "\n")
    out.flush()


def checked_session(
    schema: FlagSchema,
    argv: Sequence[str],
    env: Mapping[str, str],
    source: str,
    facts: ModelFacts | None,
    gpu_spec: str | None,
    *,
    assume_free_gib: float | None = None,
    nodes: int | None = None,
) -> LaunchSession:
    """The launch as a session: the flags, the model's facts, the GPUs to check for, and
    what is known of their start-up cost (the calibration store, `--assume-free-gib`)."""
    # after sglang's question is sent (`check_command`): the session runs the rules, which
    # load every rule module
    from sglaunch.session import LaunchSession

    session = LaunchSession(schema, inherited=inherited_env(os.environ))
    session.load_argv(argv, env)
    session.request_model(source)
    if facts is not None:
        session.model_loaded(source, facts)
    else:
        session.model_not_cached(source)
    if gpu_spec:
        session.choose_preset(gpu_spec)
    else:
        session.set_probed(gpu_facts.probe_gpus(env={**os.environ, **session.environment()}))
    if nodes is not None:
        session.set_nodes(nodes)
    session.set_memory_facts(memory_facts(session.gpu, assume_free_gib=assume_free_gib))
    return session


def _print_json(
    out: TextIO,
    verdict: Verdict,
    session: LaunchSession,
    argv: Sequence[str],
    sglang_version: str | None,
    versions: FlagFacts | None = None,
    *,
    host: Sequence[Finding] = (),
) -> None:
    from sglaunch.check_json import result_json  # the memory plan's JSON: only for --json

    data = result_json(
        verdict, session, argv=argv, sglang_version=sglang_version, versions=versions
    )
    if host:
        data["findings"] = [*data["findings"], *findings_json(host, session.schema)]
        data["ok"] = data["ok"] and not any(f.is_error for f in host)
    out.write(json.dumps(data, indent=2, default=_json_default) + "\n")
    out.flush()


def _known_version(sglang_python: str | None) -> str | None:
    return known_sglang_version(sglang_python)


def _oracle(sglang_python: str | None, timeout: float, use_service: bool = True) -> OracleClient:
    return connect(sglang_python, use_service=use_service, timeout=timeout)


def _json_default(value: Any) -> Any:
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)
