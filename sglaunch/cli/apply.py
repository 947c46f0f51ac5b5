"""`sglaunch --profile NAME --apply [--fix] [--save] [--detach] [--json]`: validate, then launch and monitor.

load → the launch spec (a secret whose variable is unset stops here, before any check) →
probe GPUs → warn when sglang or the GPUs differ from what the profile was validated with →
both tiers of validation → stop with exit 1 on errors (or, with --fix, apply each error's
first fix and say what changed; --save writes it back) → launch → monitor as progress lines
(JSON lines with --json; the first line is the check's result) → exit code.

It drives the same `LaunchSession` and `TwoTier` verdict as the TUI.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TextIO

from sglaunch.checking import findings_json
from sglaunch.cli.render import Painter, print_findings, summary_line
from sglaunch.errors import UserError
from sglaunch.exitcodes import ExitCode
from sglaunch.facts import gpu as gpu_facts
from sglaunch.facts.model import ModelNotCached, load_model_facts
from sglaunch.facts.presets import DEFAULT_PLANNING
from sglaunch.fixing import fix_rounds
from sglaunch.flags.schema import FlagSchema
from sglaunch.host import host_findings
from sglaunch.memory.assumptions import memory_facts
from sglaunch.oracle.interpreter import find_sglang_python, probe_sglang_version
from sglaunch.oracle.service_client import connect
from sglaunch.profiles import ProfileStore
from sglaunch.profiles.nodes import engine_node_flags
from sglaunch.program import launch_python_facts
from sglaunch.release import load_flag_facts, parse_named
from sglaunch.revalidate import describe, profile_named_version, version_changes
from sglaunch.runtime import run_headless
from sglaunch.session import LaunchSession, inherited_env
from sglaunch.validators.facts import GpuFacts, GpuMode
from sglaunch.validators.findings import Severity
from sglaunch.verdict import TwoTier, Verdict

if TYPE_CHECKING:
    from sglaunch.profiles.profile import Profile
    from sglaunch.program import LaunchPython


class _Out:
    """Progress and findings on stderr; with --json, one JSON object per line on stdout."""

    def __init__(self, err: TextIO, json_out: TextIO | None) -> None:
        self.err = err
        self.paint = Painter(err)
        self.json_out = json_out

    def say(self, text: str, style: str = "") -> None:
        print(self.paint(text, style) if style else text, file=self.err)

    def record(self, data: dict[str, Any]) -> None:
        if self.json_out is not None:
            self.json_out.write(json.dumps(data, default=str) + "\n")
            self.json_out.flush()


def run(args: argparse.Namespace, *, err: TextIO | None = None) -> int:
    if args.save and not args.fix:
        raise UserError("--save goes with --fix (it saves the fixed profile)")
    out = _Out(err or sys.stderr, sys.stdout if args.json else None)
    store = ProfileStore()
    profile = store.load(args.profile)
    python = args.sglang_python or profile.sglang_python
    facts = _versioned_schema(not args.no_oracle, python, profile, args)
    schema, active = facts.schema, facts.active
    session = _session(profile, schema, python, active.version)
    # a secret whose variable is unset stops the launch: say so before any findings
    session.launch_spec(os.environ)
    gpu = _choose_gpus(session, profile, args.gpu, out)
    if getattr(args, "nodes", None) is not None:
        session.set_nodes(args.nodes)  # --nodes over the profile's own
        gpu = session.gpu
    target = getattr(args, "target", None) or "local"
    if target == "local":
        _refuse_nodes_here(session, profile.name)
    elif session.nodes > 1:
        _engine_line(session)
    out.say(
        f"sglaunch --apply {profile.name} · {profile.model} · {gpu.status or gpu.describe()}"
        f" · for {active.label()}",
        "2",
    )
    for line in facts.lines():
        out.say(f"! {line}", "33")
    if session.model_note:
        out.say(f"! {session.model_note}", "33")
    _warn_drift(profile, gpu, out)
    _say_version_changes(profile, session, out)

    tiers = TwoTier(
        _oracle(python, not getattr(args, "no_oracle_service", False))
        if not args.no_oracle
        else None
    )
    if args.no_oracle:
        tiers.switch_off("skipped (--no-oracle)")
    try:
        verdict = tiers.check(session)
        if verdict.errors and args.fix:
            verdict = _fix(session, verdict, tiers, schema, out)
            if args.save and not verdict.errors:
                saved = session.to_profile(profile.name, sglang_version=verdict.sglang_version)
                if target != "local":
                    # the engine's node flags were for the check; the profile keeps its own
                    saved = replace(saved, flags=_own_node_flags(saved.flags, profile.flags))
                # the check ran on this machine's GPUs; the profile keeps its own selection
                saved = store.save(replace(saved, gpus=profile.gpus))
                session.mark_saved(saved)
                out.say(f"saved the fixed profile {saved.name}", "32")
        elif args.save:
            out.say("nothing to fix; the profile is unchanged and was not saved", "2")
    finally:
        tiers.close()
    shown = [f for f in verdict.findings if f.severity is not Severity.OVERRIDE]
    print_findings(shown, schema, out.err)
    out.say(f"{summary_line(list(verdict.findings))} · sglang check: {verdict.oracle_status}", "2")
    out.record(_checked_json(profile.name, verdict, schema, session.gpu))
    if verdict.errors:
        n = len(verdict.errors)
        out.say(
            f"not launching: {n} error{'s' if n != 1 else ''} "
            f"(sglaunch --profile {profile.name} --apply --fix applies the first fix of each)",
            "31",
        )
        return int(ExitCode.VALIDATION)
    if target != "local":
        # the nodes are the engine's: this host's checks and GPUs do not apply
        # only for --target: its writers (lws, skypilot) load yaml
        from sglaunch.cli.engine_apply import apply_on_target

        return apply_on_target(profile, target, args, out.err)
    if not _host_ready(session, profile.name, schema, out):
        return int(ExitCode.VALIDATION)
    if gpu.mode is GpuMode.PLANNING:
        out.say(
            f"! planning mode: checked for {gpu.describe()}, not for GPUs found here; "
            "sglang will use whatever GPUs this machine has",
            "33",
        )
    interpreter = _launch_python(python)
    out.say(interpreter.line, "2")
    for warning in interpreter.warnings:
        out.say(f"! {warning}", "33")
    return _launch(session, verdict, args, out.err, python=interpreter.path)


def _refuse_nodes_here(session: LaunchSession, name: str) -> None:
    """A launch here is one node: a server over several whose line states no --nnodes (it
    would run as one node) goes to an engine, or each node runs its own line."""
    n = session.nodes
    if n > 1 and "nnodes" not in session.flags:
        own = session.profile is not None and session.profile.nodes == n
        lines = "" if own else f"set `nodes = {n}` in the profile and "
        raise UserError(
            f"--apply launches one node here, and this launch of profile '{name}' spans {n} "
            f"nodes: launch it with --target slurm, lws or skypilot, or {lines}run each node's "
            f"line from `sglaunch profiles export {name} --format command`"
        )


def _engine_line(session: LaunchSession) -> None:
    """Check the head's line as the engine's export writes it (profiles/nodes.py): the node
    count, rank, rendezvous and host the engine fills in, not the profile's own."""
    for dest, value in engine_node_flags(session.flags, session.nodes).items():
        if session.schema.get(dest) is not None:
            session.set_flag(dest, value)


def _own_node_flags(saved: dict[str, Any], own: Mapping[str, Any]) -> dict[str, Any]:
    """`saved` with the node flags an engine apply checked with put back as the profile had them."""
    out = dict(saved)
    for dest in engine_node_flags({}, 2):
        out.pop(dest, None)
        if dest in own:
            out[dest] = own[dest]
    return out


def _host_ready(session: LaunchSession, name: str, schema: FlagSchema, out: _Out) -> bool:
    """The host checks (`sglaunch doctor`) before every launch: False on an error."""
    host = host_findings(session)
    print_findings(host, schema, out.err)
    errors = [f for f in host if f.is_error]
    out.record(
        {
            "event": "host",
            "profile": name,
            "ok": not errors,
            "findings": findings_json(host, schema),
        }
    )
    if errors:
        n = len(errors)
        out.say(
            f"not launching: this host is not ready ({n} error{'s' if n != 1 else ''}; "
            f"sglaunch doctor --profile {name} explains each)",
            "31",
        )
    return not errors


def _launch_python(python: str | None) -> LaunchPython:
    """Which Python runs the server: `python` (the profile's or --sglang-python), else the one
    the oracle checks with (service_client.connect finds it the same way), with its sglang."""
    checked = find_sglang_python(python).path
    return launch_python_facts(python, checked, probe=lambda p: probe_sglang_version(p)[0])


def _session(
    profile: Profile, schema: FlagSchema, python: str | None, version: str | None = None
) -> LaunchSession:
    if not profile.model:
        raise UserError(f"profile '{profile.name}' has no model: set one and save it again")
    # the interpreter whose sglang gives the verdict launches too (program.py's rule); a
    # CPU-only one from `oracle setup` is named as such before launching (_launch_python)
    launch_python = python or find_sglang_python(None).path
    session = LaunchSession.from_profile(
        profile, schema, default_python=launch_python, inherited=inherited_env(os.environ)
    )
    session.sglang_version = version
    try:
        facts = load_model_facts(profile.model, sglang_version=version)
    except ModelNotCached:
        # a repo sglang will download is a valid launch: checked without its config
        session.model_not_cached(profile.model)
        return session
    except UserError as exc:
        raise UserError(f"profile '{profile.name}': {exc.message}", exc.code) from None
    session.model_loaded(profile.model, facts)
    return session


def _choose_gpus(session: LaunchSession, profile: Profile, spec: str | None, out: _Out) -> GpuFacts:
    """`--gpu` when given; else the GPUs found here; else the profile's preset (planning)."""
    if spec:
        session.choose_preset(spec)  # a preset has no calibration: the documented estimate
        return session.gpu
    preset = profile.gpus.preset
    probed = gpu_facts.probe_gpus(
        env={**os.environ, **session.environment()}, fallback_preset=preset or DEFAULT_PLANNING
    )
    session.set_probed(probed)
    if probed.mode is GpuMode.NVML and preset:
        # a launch runs on the GPUs it finds: check for those, not for the planned machine
        out.say(f"! the profile plans for {preset}; checking the GPUs found here", "33")
        session.choose_devices(profile.gpus.cuda_visible_devices)

    session.set_memory_facts(memory_facts(session.gpu))  # the calibrated start-up cost
    return session.gpu


def _versioned_schema(use_oracle: bool, python: str | None, profile: Profile, args: Any) -> Any:
    """The schema and the release to check for: installed, else --sglang-version, else the
    release the profile was validated with, else the newest (sglaunch.release)."""
    named = parse_named(getattr(args, "sglang_version", None)) or profile_named_version(
        profile.validated
    )
    return load_flag_facts(python, named, read_installed=use_oracle)


def _say_version_changes(profile: Profile, session: LaunchSession, out: _Out) -> None:
    """What differs for this launch between the release it was validated with and this one."""
    v = profile.validated
    change = version_changes(
        v.sglang_version if v else None,
        session.sglang_version or session.schema.sglang_version,
        session.argv(),
        gpu=session.gpu,
        model=session.model,
        env=session.check_env(),
    )
    for line in describe(change):
        out.say(line if line.startswith("  ") else f"! {line}", "33")


def _oracle(python: str | None, use_service: bool = True) -> Any:
    return connect(python, use_service=use_service)


def _warn_drift(profile: Profile, gpu: GpuFacts, out: _Out) -> None:
    v = profile.validated
    if v is None:
        out.say("! this profile was never validated; checking it now", "33")
        return
    names = sorted({d.name for d in gpu.devices})
    if (v.gpu_count and v.gpu_count != gpu.count) or (
        v.gpu_names and sorted(set(v.gpu_names)) != names
    ):
        was = (
            f"{v.gpu_count}× {', '.join(sorted(set(v.gpu_names)))}"
            if v.gpu_names
            else f"{v.gpu_count} GPUs"
        )
        out.say(f"! validated on {was}; now {gpu.describe()}", "33")


def _fix(
    session: LaunchSession, verdict: Verdict, tiers: TwoTier, schema: FlagSchema, out: _Out
) -> Verdict:
    """Apply each error's first fix, re-checking after each round, until none is left."""
    verdict, _ = fix_rounds(
        session,
        verdict,
        tiers.check,
        on_fix=lambda done: out.say(f"fixed {done.code}: {done.label} ({done.changes})", "32"),
    )
    return verdict


def _checked_json(name: str, verdict: Verdict, schema: FlagSchema, gpu: GpuFacts) -> dict[str, Any]:
    return {
        "event": "checked",
        "profile": name,
        "ok": verdict.ok,
        "sglang_version": verdict.sglang_version,
        "oracle": verdict.oracle_status,
        "findings": findings_json(verdict.findings, schema),
        # what it was checked for: `count` GPUs on each of `nodes` machines
        "gpu": {"describe": gpu.describe(), "count": gpu.count, "nodes": gpu.nodes},
    }


def _launch(
    session: LaunchSession,
    verdict: Verdict,
    args: argparse.Namespace,
    err: TextIO,
    *,
    python: str | None = None,
) -> int:
    answer = verdict.answer
    spec = session.launch_spec(
        os.environ, resolved=answer.resolved if answer else None, python=python
    )
    code = run_headless(
        spec,
        json_lines=args.json,
        detach=args.detach,
        startup_timeout=args.startup_timeout,
        out=err,
    )
    return int(code)
