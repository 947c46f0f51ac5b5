"""`sglaunch doctor`: is this host ready for the launch? Packages, ports, proxies, /dev/shm,
host memory, the checkpoint, the GPUs and, across nodes, the rendezvous."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import TextIO

from sglaunch.checking import findings_json
from sglaunch.cli.args import Parser, interpreter_path, parse_env_pairs, split_double_dash
from sglaunch.cli.check import model_from_argv, split_launch
from sglaunch.cli.render import Painter, print_findings, summary_line
from sglaunch.errors import UserError
from sglaunch.exitcodes import ExitCode
from sglaunch.facts.presets import parse_gpu_spec
from sglaunch.host import collect_host_facts, session_nodes
from sglaunch.oracle.interpreter import find_sglang_python
from sglaunch.profiles import ProfileStore
from sglaunch.release import load_flag_facts
from sglaunch.session import LaunchSession, inherited_env
from sglaunch.validators.findings import Finding, sort_findings
from sglaunch.validators.rules.host import host_checks

# the rule engine's findings about the line that are the host's business too
LINE_CODES = frozenset({"port-range"})


def parser() -> Parser:
    p = Parser(
        prog="sglaunch doctor",
        description=(
            "Check this host before a launch: the launch interpreter's packages, the ports it "
            "binds, proxy variables, /dev/shm, host memory, the checkpoint's shards, the GPUs "
            "and, across nodes, the rendezvous. Put sglang's flags after --."
        ),
        epilog="example: sglaunch doctor --model ~/models/Llama-3.1-8B -- --tp 2 --port 30010",
    )
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--model", help="model folder, Hugging Face repo id in the local cache, or example:NAME"
    )
    which.add_argument("--profile", help="a saved launch profile: its flags, model and interpreter")
    p.add_argument(
        "--gpu",
        help="the GPUs the launch is planned for (e.g. H100x8): stands in for the GPU count "
        "where this host has no NVIDIA driver",
    )
    p.add_argument(
        "--nodes",
        type=int,
        metavar="N",
        help="the machines the launch spans, where the flags have no --nnodes (default 1)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument(
        "--env",
        action="append",
        metavar="K=V",
        help="an environment variable the server will see (repeatable)",
    )
    p.add_argument(
        "--sglang-python",
        metavar="PATH",
        type=interpreter_path,
        help="the Python interpreter that will run sglang",
    )
    return p


def run(argv: Sequence[str], *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    own, sglang_tokens = split_double_dash(argv)
    args = parser().parse_args(own)
    if args.nodes is not None and args.nodes < 1:
        raise UserError(f"--nodes {args.nodes}: give 1 or more machines")
    return doctor_command(
        model=args.model,
        profile=args.profile,
        gpu_spec=args.gpu,
        nodes=args.nodes,
        sglang_tokens=sglang_tokens,
        env_pairs=args.env,
        sglang_python=args.sglang_python,
        as_json=args.json,
        out=out or sys.stdout,
        err=err or sys.stderr,
    )


def doctor_session(
    *,
    model: str | None,
    profile: str | None,
    sglang_tokens: list[str],
    env_pairs: Sequence[str] | None,
    sglang_python: str | None,
) -> LaunchSession:
    """The launch to check the host for: a profile's, or a model with the flags after --."""
    # the newest schema is enough to read the flags: no sglang is started to ask its release
    schema = load_flag_facts(sglang_python, None, read_installed=False).schema
    inherited = inherited_env(os.environ)
    if profile:
        saved = ProfileStore().load(profile)
        python = sglang_python or saved.sglang_python or find_sglang_python(None).path
        session = LaunchSession.from_profile(
            saved, schema, default_python=python, inherited=inherited
        )
        if sglang_python:
            session.python = sglang_python
        if sglang_tokens:
            raise UserError("give flags after -- or --profile, not both")
        return session
    argv, line_env = split_launch(sglang_tokens)
    session = LaunchSession(
        schema,
        default_python=sglang_python or find_sglang_python(None).path,
        inherited=inherited,
    )
    session.load_argv(argv, {**line_env, **parse_env_pairs(env_pairs)})
    if sglang_python:
        session.python = sglang_python
    source = model or model_from_argv(argv, schema)
    if source:
        session.request_model(source)
    return session


def doctor_command(
    *,
    model: str | None,
    profile: str | None,
    gpu_spec: str | None,
    nodes: int | None,
    sglang_tokens: list[str],
    env_pairs: Sequence[str] | None,
    sglang_python: str | None,
    as_json: bool,
    out: TextIO,
    err: TextIO,
) -> int:
    session = doctor_session(
        model=model,
        profile=profile,
        sglang_tokens=sglang_tokens,
        env_pairs=env_pairs,
        sglang_python=sglang_python,
    )
    if session.issues:
        for issue in session.issues:
            print(f"sglaunch: {issue.message}", file=err)
        return int(ExitCode.USAGE)
    planned = _planned_count(gpu_spec)
    n_nodes = nodes or session_nodes(session)
    python = session.launch_python or "python"
    facts = collect_host_facts(
        session.flags,
        environ={**os.environ, **session.environment()},
        python=python,
        model=session.launch_model_path(),
        nodes=n_nodes,
    )
    if facts.gpu_count is None and planned:
        # no driver here: the planned machine's count checks CUDA_VISIBLE_DEVICES and
        # --base-gpu-id; the GPU-held and driver checks still need the real one
        facts = replace(facts, gpu_count=planned)
    findings = host_checks(session.flags, facts, nodes=n_nodes, source=session.model_source or "")
    # the line's ports no host can bind: the rule engine's (`check` says the same)
    findings = sort_findings(
        [*findings, *(f for f in session.report.findings if f.code in LINE_CODES)]
    )
    _report(findings, session, facts.nvml_error, python, n_nodes, gpu_spec, as_json, out, err)
    if as_json:
        data = {
            "ok": not any(f.is_error for f in findings),
            "findings": findings_json(findings, session.schema),
        }
        out.write(json.dumps(data, indent=2, default=str) + "\n")
        out.flush()
    return int(ExitCode.VALIDATION if any(f.is_error for f in findings) else ExitCode.OK)


def _planned_count(spec: str | None) -> int | None:
    if not spec:
        return None

    return parse_gpu_spec(spec).count  # UserError (one line, exit 2) for a bad spec


def _report(
    findings: list[Finding],
    session: LaunchSession,
    nvml_error: str,
    python: str,
    nodes: int,
    gpu_spec: str | None,
    as_json: bool,
    out: TextIO,
    err: TextIO,
) -> None:
    paint = Painter(err)
    gpus = nvml_error or "NVML found the GPUs"
    if gpu_spec:
        gpus += f"; planned for {gpu_spec}"
    model = session.model_source or "no model"
    where = f" · {nodes} nodes" if nodes > 1 else ""
    print(paint.dim(f"sglaunch doctor · {model} · {python} · {gpus}{where}"), file=err)
    print_findings(findings, session.schema, err)
    verdict = "not ready" if any(f.is_error for f in findings) else "ready"
    print(paint.dim(f"{summary_line(findings)} · the host is {verdict} for this launch"), file=err)
