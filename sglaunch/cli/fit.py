"""`sglaunch fit`: will it fit? sglang's GPU memory plan before anything loads, and the layouts that fit.

Findings and the human report go to stderr; `--json` prints one object on
stdout: the `memory` object of the plan for the given flags plus `layouts`, the line's
`findings` (the rules `check` runs) and `ok`/`line_ok`.
Exit codes: 0 when the plan fits (or is tight) and no rule rejects the line, 1 when it does
not fit or the line is rejected (as `check`), 2 for bad input.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TextIO

from sglaunch.cli.args import (
    Parser,
    interpreter_path,
    node_count,
    parse_env_pairs,
    split_double_dash,
)
from sglaunch.cli.render import Painter, print_findings
from sglaunch.errors import UserError
from sglaunch.exitcodes import ExitCode
from sglaunch.validators.facts import CheckInput

if TYPE_CHECKING:
    from sglaunch.oracle.answer import OracleAnswer
    from sglaunch.release import ActiveVersion
    from sglaunch.session import LaunchSession
    from sglaunch.verdict import Verdict
from sglaunch.checking import findings_json
from sglaunch.cli.check import checked_session, model_from_argv, split_launch, with_model_path
from sglaunch.facts.model import load_model_facts, model_path_for_sglang
from sglaunch.flags.argv import parse_argv
from sglaunch.flags.schema import bundled_schema
from sglaunch.memory.api import (
    REJECTED,
    count_text,
    is_memory_code,
    line_verdict,
    plan_json,
    verdict_text,
)
from sglaunch.memory.oracle_request import oracle_memory_request
from sglaunch.oracle.answer_findings import oracle_findings
from sglaunch.oracle.service_client import connect, known_sglang_version
from sglaunch.release import load_flag_facts, parse_named
from sglaunch.validators.findings import Finding
from sglaunch.validators.memory.baseline import GIB
from sglaunch.validators.memory.layouts import Layout, plan_layouts
from sglaunch.validators.memory.plan import MemoryPlan, plan_memory
from sglaunch.validators.rules.general.multinode import ADDRESSING_CODES
from sglaunch.verdict import OracleReply, TwoTier


def parser() -> Parser:
    p = Parser(
        prog="sglaunch fit",
        description=(
            "sglang's GPU memory plan for a model and flags before anything loads: weights, KV cache, "
            "tokens, slack, and the parallel layouts that fit the GPUs. Put sglang's flags after --."
        ),
        epilog="example: sglaunch fit --model example:minicpm-sala --gpu H100x8 -- --tp 2",
    )
    p.add_argument(
        "--model", help="model folder, Hugging Face repo id in the local cache, or example:NAME"
    )
    p.add_argument(
        "--gpu", help="plan for these GPUs instead of the local ones, e.g. H100x8, RTX5090x1"
    )
    p.add_argument(
        "--nodes",
        type=node_count,
        metavar="N",
        help="one server over N machines, each with the --gpu preset or the local GPUs: "
        "the plan per GPU of the whole world and the layouts across nodes",
    )
    p.add_argument(
        "--assume-free-gib",
        type=float,
        metavar="GIB",
        help="the free memory on every GPU once CUDA/NCCL are up (overrides NVML/preset and calibration)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument(
        "--env", action="append", metavar="K=V", help="an environment variable the server will see"
    )
    p.add_argument(
        "--oracle",
        action="store_true",
        help="also ask the installed sglang: its resolved knobs and its own pool sizing for the plan",
    )
    p.add_argument(
        "--sglang-python", metavar="PATH", type=interpreter_path, help="the Python that has sglang"
    )
    p.add_argument(
        "--sglang-version",
        metavar="VERSION",
        help="plan for this sglang release when none is installed (default: the installed one, "
        "else the newest supported)",
    )
    return p


def run(argv: Sequence[str]) -> int:
    own, tokens = split_double_dash(argv)
    args = parser().parse_args(own)
    return fit_command(
        model=args.model,
        sglang_tokens=tokens,
        gpu_spec=args.gpu,
        assume_free_gib=args.assume_free_gib,
        as_json=args.json,
        env_pairs=args.env,
        use_oracle=args.oracle,
        sglang_python=args.sglang_python,
        sglang_version=args.sglang_version,
        nodes=args.nodes,
    )


def build_fit_input(
    *,
    model: str | None,
    sglang_tokens: list[str],
    gpu_spec: str | None,
    env_pairs: Sequence[str] | None,
    assume_free_gib: float | None = None,
    active: ActiveVersion | None = None,
) -> tuple[CheckInput, list[str], str]:
    """The check input `fit` plans for, the sglang argv, and the model's source: the same
    session `check` builds, for the same sglang release."""
    session, argv, source = fit_session(
        model=model,
        sglang_tokens=sglang_tokens,
        gpu_spec=gpu_spec,
        env_pairs=env_pairs,
        assume_free_gib=assume_free_gib,
        active=active,
    )
    return session.check_input(), argv, source


def fit_session(
    *,
    model: str | None,
    sglang_tokens: list[str],
    gpu_spec: str | None,
    env_pairs: Sequence[str] | None,
    assume_free_gib: float | None = None,
    active: ActiveVersion | None = None,
    nodes: int | None = None,
) -> tuple[LaunchSession, list[str], str]:
    """`build_fit_input`'s session itself, validated for the release: `check`'s verdict on it."""
    version = active.version if active is not None else None
    schema = bundled_schema(version)
    argv, line_env = split_launch(sglang_tokens)
    env = {**line_env, **parse_env_pairs(env_pairs)}
    source = model or model_from_argv(argv, schema)
    if not source:
        raise UserError("no model: give --model PATH (a folder, a cached repo id, or example:NAME)")
    facts = load_model_facts(source, sglang_version=version)
    argv = with_model_path(argv, model_path_for_sglang(source), schema)
    session = checked_session(
        schema, argv, env, source, facts, gpu_spec, assume_free_gib=assume_free_gib, nodes=nodes
    )
    if nodes is not None and nodes > 1 and "nnodes" not in session.flags:
        # the line planned is the one server over the nodes asked for; with no parallel
        # size of its own, over all their GPUs (tp inside a node and across)
        session.set_flag("nnodes", nodes)
        if not any(d in session.flags for d in ("tp_size", "pp_size")):
            session.set_flag("tp_size", nodes * session.gpu.count)
    if version:
        session.set_sglang_version(version)  # and the rules re-run for that release
    if session.issues:
        raise UserError(f"sglang's parser would stop first: {session.issues[0].message}")
    return session, argv, source


def fit_command(
    *,
    model: str | None,
    sglang_tokens: list[str],
    gpu_spec: str | None,
    assume_free_gib: float | None,
    as_json: bool,
    env_pairs: Sequence[str] | None = None,
    use_oracle: bool = False,
    sglang_python: str | None = None,
    sglang_version: str | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
    nodes: int | None = None,
) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    # the release the plan is for, chosen as `check` chooses it: the installed sglang's
    # (its version only: no flags are read, a warm service saves even that), else the named
    versions = load_flag_facts(
        sglang_python,
        parse_named(sglang_version),
        read_installed=False,
        known=known_sglang_version(sglang_python),
    )
    active = versions.active
    session, argv, source = fit_session(
        model=model,
        sglang_tokens=sglang_tokens,
        gpu_spec=gpu_spec,
        env_pairs=env_pairs,
        assume_free_gib=assume_free_gib,
        active=active,
        nodes=nodes,
    )
    inp = session.check_input()
    # fit made the line span the nodes asked for: how they would find each other is not
    # the plan's business (`check` says it of a line that spans them itself)
    completed = nodes is not None and nodes > 1 and "nnodes" not in _line_flags(session, argv)
    resolved = None
    probe: dict[str, Any] | None = None
    answer: OracleAnswer | None = None
    # the defaults that differ between releases are mirrored per release (validators/release_spans.py)
    status = f"built-in mirror of sglang {active.rules_version}'s start-up arithmetic"
    status += " (--oracle asks sglang itself)"
    if use_oracle:
        resolved, probe, status, answer = _ask_oracle(inp, argv, sglang_python)
    plan = plan_memory(inp, resolved)
    verdict = _line_verdict(session, answer, drop=ADDRESSING_CODES if completed else frozenset())
    # every error `check` would print (the line cannot run), and the plan's own findings
    findings = [f for f in verdict.findings if f.is_error or is_memory_code(f.code)]
    table = plan_layouts(inp)
    paint = Painter(err)
    model_facts = inp.model
    arch = model_facts.architecture if model_facts is not None else "?"
    print(
        paint.dim(
            f"sglaunch fit · {arch} ({source}) · {inp.gpu.status or inp.gpu.describe()}"
            f" · for {active.label()}"
        ),
        file=err,
    )
    for line in versions.lines():
        print(paint(f"! {line}", "33"), file=err)
    if completed:
        print(
            paint.dim(
                f"  planned as one server over the {inp.gpu.nodes} nodes: "
                + " ".join(
                    f"{session.schema.cli_name(d)} {session.flags[d]}"
                    for d in ("tp_size", "nnodes")
                    if d in session.flags
                )
            ),
            file=err,
        )
    print_plan(plan, err, paint, verdict.findings, nodes=_int_or_1(session.flags.get("nnodes")))
    if probe is not None:
        print(paint.dim(f"  sglang's own pool code: {_probe_text(probe)}"), file=err)
    print(paint.dim(f"  knobs from: {status}"), file=err)
    if findings:
        print_findings(findings, session.schema, err)
    if line_verdict(plan, verdict.findings) == REJECTED:
        print(
            paint(
                "The line is rejected: the plan above is only what its memory would be; "
                "apply a fix above or pick a layout below.",
                "31",
            ),
            file=err,
        )
    print_layouts(table, inp.gpu.count, err, paint, nodes=inp.gpu.nodes)
    fails = bool(verdict.errors) or plan.verdict == "does-not-fit"
    if as_json:
        data = plan_json(plan, verdict.findings)
        data["ok"] = not fails
        data["line_ok"] = verdict.ok
        data["findings"] = findings_json(verdict.findings, session.schema)
        data["layouts"] = [layout.to_json() for layout in table]
        # the machine planned for: `count` GPUs on each of `nodes` nodes
        data["gpu"] = {
            "describe": inp.gpu.describe(),
            "preset": inp.gpu.preset or None,
            "count": inp.gpu.count,
            "nodes": inp.gpu.nodes,
        }
        data["versions"] = active.to_json()
        if probe is not None:
            data["sglang_pool"] = probe
        out.write(json.dumps(data, indent=2) + "\n")
        out.flush()
    return int(ExitCode.VALIDATION if fails else ExitCode.OK)


def _line_flags(session: LaunchSession, argv: list[str]) -> dict[str, Any]:
    return dict(parse_argv(argv, session.schema).values)


def _line_verdict(
    session: LaunchSession, answer: OracleAnswer | None, drop: frozenset[str] = frozenset()
) -> Verdict:
    """`check`'s verdict on the line (sglaunch/verdict.py): the built-in rules, and sglang's
    own answer when --oracle got one; `drop`: codes that are not the line's own."""
    tiers = TwoTier(None)
    tiers.switch_off("fit asks sglang only with --oracle")
    if answer is not None and not answer.fault:
        reply = OracleReply(session.revision, answer, tuple(oracle_findings(answer)))
        tiers.answered(reply, session)
    verdict = tiers.verdict(session)
    if drop:
        verdict = replace(
            verdict, findings=tuple(f for f in verdict.findings if f.code not in drop)
        )
    return verdict


def _ask_oracle(
    inp: CheckInput, argv: list[str], python: str | None
) -> tuple[Any, Any, str, OracleAnswer | None]:
    request = oracle_memory_request(plan_memory(inp), inp.model)
    # the shared, warm service when there is one (SGLAUNCH_NO_ORACLE_SERVICE: a worker of
    # its own); either sizes the pool with sglang's own code
    oracle = connect(python, timeout=60.0)
    try:
        status = oracle.start()
        if not status.available:
            return None, None, f"built-in mirror (sglang unavailable: {status.reason})", None
        answer = oracle.resolve(argv, dict(inp.env), inp.gpu, memory=request)
    finally:
        oracle.close()
    if answer.fault or not answer.ok:
        why = answer.fault or (answer.error.message if answer.error else "rejected")
        # sglang's rejection still counts in the line's verdict; its knobs do not exist
        return None, None, f"built-in mirror (sglang did not resolve: {why[:160]})", answer
    return answer.resolved, answer.memory, f"sglang {answer.sglang_version} (resolved)", answer


def _probe_text(probe: dict[str, Any]) -> str:
    error = probe.get("error")
    if error and error.get("fault"):
        return (
            "could not be run on this release (a sglaunch limitation, not sglang's verdict): "
            f"{error.get('type')}: {error.get('message')}"
        )
    if error:
        return f"{error.get('type')}: {error.get('message')}"
    return (
        f"max_total_num_tokens={probe.get('max_total_num_tokens')}, "
        f"max_running_requests={probe.get('max_running_requests')}"
    )


def _g(value: int | None) -> str:
    return "?" if value is None else f"{value / GIB:.2f} GiB"


def _int_or_1(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def print_plan(
    plan: MemoryPlan,
    err: TextIO,
    paint: Painter,
    findings: Sequence[Finding] = (),
    *,
    nodes: int = 1,
) -> None:
    """`findings`: the line's; with an error standing, the verdict names it, not the memory."""
    k = plan.knobs
    verdict = line_verdict(plan, findings)
    color = {"fits": "32", "tight": "33", "does-not-fit": "31", REJECTED: "31"}[verdict]
    layout = (
        f"tp {k.tp} · dp {k.dp} · pp {k.pp}"
        + (f" · attention DP {k.attn_dp}" if k.attn_dp > 1 else "")
        + (f" · over {nodes} nodes" if nodes > 1 else "")
    )
    shown = verdict_text(plan, findings)
    print(f"Memory plan per GPU ({layout}): {paint(shown, color)}", file=err)
    rows: list[tuple[str, str, str]] = []
    for label, size in plan.waterfall():
        rows.append((label, _g(size), ""))
    b = plan.baseline
    if b is not None:
        rows[2] = (rows[2][0], rows[2][1], b.source)
    if plan.weights_bytes is not None:
        rows = [
            (a, v, plan.weights_source or "") if a == "weights" else (a, v, s) for a, v, s in rows
        ]
    rows.append(("mem_fraction_static", f"{k.mem_fraction_static:g}", k.mfs_source))
    parts = ", ".join(f"{n} {v:.0f}" for n, v in k.reserve.parts.items())
    rows.append(("  sglang's reserve", f"{k.reserve.total_mib:.0f} MiB", parts))
    if plan.cell_bytes is not None and plan.kv_dtype is not None:
        rows.append(
            ("KV cell", f"{plan.cell_bytes:g} B/token", f"{plan.kv_dtype.name}, page {k.page_size}")
        )
    if plan.max_total_num_tokens is not None:
        note = ""
        if plan.compressed_reserve:
            note = f"{plan.usable_tokens:,} usable after {plan.compressed_reserve:,} compressed-K slots"
        rows.append(("max_total_num_tokens", f"{plan.max_total_num_tokens:,}", note))
    if plan.swa_tokens is not None:
        rows.append(("sliding-window tokens", f"{plan.swa_tokens:,}", ""))
    if plan.max_running_requests is not None:
        note = f"{plan.state_slots} state slots" if plan.state_slots is not None else ""
        rows.append(("max_running_requests", str(plan.max_running_requests), note))
    if plan.tokens_per_gib is not None:
        rows.append(
            ("sensitivity", f"±{plan.tokens_per_gib:,.0f}", "tokens per GiB of baseline error")
        )
    rows.append(("context length", f"{k.context_len:,}", ""))
    for label, value, note in rows:
        print(f"  {label:<30} {value:>16}  {paint.dim(note)}", file=err)
    if plan.error is not None:
        print(f"  {paint('sglang would stop:', '31')} {plan.error.message}", file=err)
    for line in plan.assumptions:
        print(paint.dim(f"  · {line}"), file=err)


def layouts_title(gpus: int, nodes: int = 1) -> str:
    """'Layouts on 8 GPUs', 'Layouts on 2 nodes × 8 GPUs'."""
    on = f"{gpus} GPU{'s' if gpus != 1 else ''}"
    return f"Layouts on {nodes} nodes × {on}" if nodes > 1 else f"Layouts on {on}"


def print_layouts(
    table: list[Layout], gpus: int, err: TextIO, paint: Painter, *, nodes: int = 1
) -> None:
    fitting = [lay for lay in table if lay.verdict != "does-not-fit"]
    print(f"{layouts_title(gpus, nodes)} ({len(fitting)} of {len(table)} fit):", file=err)
    if nodes > 1:
        _print_node_layouts(table, err, paint)
        return
    # tokens per replica (one DP or attention-DP rank's pool, sglang's max_total_num_tokens)
    # beside the total over the replicas: tp 1 × dp 4 holds four pools
    print(
        f"  {'tp':>3} {'dp':>3} {'pp':>3} {'adp':>3} {'GPUs':>4} {'weights/GPU':>12} "
        f"{'KV tokens/replica':>17} {'KV tokens total':>15} {'full-ctx reqs total':>19}  verdict",
        file=err,
    )
    for lay in table:
        p = lay.plan
        verdict, color = _layout_verdict(lay)
        print(
            f"  {lay.tp:>3} {lay.dp:>3} {lay.pp:>3} {lay.attn_dp:>3} {lay.gpus:>4} "
            f"{_g(p.weights_bytes):>12} {count_text(lay.kv_tokens_per_replica):>17} "
            f"{count_text(lay.kv_tokens_total):>15} {count_text(lay.full_context_requests_total):>19}  "
            f"{paint(verdict, color)}",
            file=err,
        )


def _layout_verdict(lay: Layout) -> tuple[str, str]:
    """A layout's verdict as the table writes it (with what blocks it, or the plan's error
    kind) and its colour."""
    verdict = lay.verdict + (f" ({', '.join(lay.blocking)})" if lay.blocking else "")
    if lay.plan.error is not None and not lay.blocking:
        verdict += f" ({lay.plan.error.kind})"
    return verdict, {"fits": "32", "tight": "33", "does-not-fit": "31"}[lay.verdict]


def _print_node_layouts(table: list[Layout], err: TextIO, paint: Painter) -> None:
    """The layouts over several nodes: one server across them (tp inside a node, pp across)
    or one server per node behind sglang's router (--dp-size cannot span nodes)."""
    print(
        f"  {'tp':>3} {'dp':>3} {'pp':>3} {'adp':>3} {'nodes':>5} {'GPUs':>4} {'weights/GPU':>12} "
        f"{'KV tokens/replica':>17} {'KV tokens total':>15}  {'shape':<20} verdict",
        file=err,
    )
    for lay in table:
        p = lay.plan
        verdict, color = _layout_verdict(lay)
        print(
            f"  {lay.tp:>3} {lay.dp:>3} {lay.pp:>3} {lay.attn_dp:>3} {lay.machines:>5} {lay.gpus:>4} "
            f"{_g(p.weights_bytes):>12} {count_text(lay.kv_tokens_per_replica):>17} "
            f"{count_text(lay.kv_tokens_total):>15}  {lay.shape:<20} {paint(verdict, color)}",
            file=err,
        )
    if any(lay.servers > 1 for lay in table):
        print(
            paint.dim(
                "  servers + router: one sglang server per node, each with its own line, behind "
                "sglang's router (sglang refuses --dp-size replicas across nodes)"
            ),
            file=err,
        )
