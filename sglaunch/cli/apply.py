"""`sglaunch --profile NAME --apply [--fix] [--save] [--detach] [--json]`: validate, then launch and monitor.

load → probe GPUs → warn when sglang or the GPUs differ from what the profile was
validated with → both tiers of validation → stop with exit 1 on errors (or, with
--fix, apply each error's first fix and say what changed; --save writes it back)
→ launch → monitor as progress lines (JSON lines with --json) → exit code.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from typing import Any, TextIO

from sglaunch import SGLANG_VERSION
from sglaunch.cli.render import Painter, print_findings, summary_line
from sglaunch.errors import UserError
from sglaunch.exitcodes import ExitCode
from sglaunch.flags.schema import FlagSchema, bundled_schema
from sglaunch.validators.facts import GpuMode
from sglaunch.validators.findings import Finding, Severity

MAX_FIX_ROUNDS = 5


def _say(text: str, err: TextIO, paint: Painter | None = None, style: str = "") -> None:
    print(paint(text, style) if paint and style else text, file=err)


def run(args: argparse.Namespace, *, err: TextIO | None = None) -> int:
    from sglaunch.profiles import ProfileStore

    if args.save and not args.fix:
        raise UserError("--save goes with --fix (it saves the fixed profile)")
    err = err or sys.stderr
    paint = Painter(err)
    store = ProfileStore()
    profile = store.load(args.profile)
    python = args.sglang_python or profile.sglang_python
    schema = _schema(not args.no_oracle, python)

    gpu = _gpu_facts(profile, args.gpu)
    _say(
        f"sglaunch --apply {profile.name} · {profile.model} · {gpu.status or gpu.describe()}",
        err,
        paint,
        "2",
    )
    _warn_drift(profile, gpu, err, paint)

    with _Checker(
        profile,
        gpu,
        schema,
        python,
        use_oracle=not args.no_oracle,
        use_service=not getattr(args, "no_oracle_service", False),
    ) as checker:
        findings, answer, oracle_status = checker.check(profile)
        errors = [f for f in findings if f.severity is Severity.ERROR]
        if errors and args.fix:
            profile, findings, answer, oracle_status = _fix(
                profile, findings, checker, schema, err, paint
            )
            errors = [f for f in findings if f.severity is Severity.ERROR]
            if args.save and not errors:
                profile = store.save(profile)
                _say(f"saved the fixed profile {profile.name}", err, paint, "green")
        elif args.save:
            _say("nothing to fix; the profile is unchanged and was not saved", err, paint, "2")
    print_findings([f for f in findings if f.severity is not Severity.OVERRIDE], schema, err)
    _say(f"{summary_line(findings)} · sglang check: {oracle_status}", err, paint, "2")
    if errors:
        _say(
            f"not launching: {len(errors)} error{'s' if len(errors) != 1 else ''} "
            f"(sglaunch --profile {profile.name} --apply --fix applies the first fix of each)",
            err,
            paint,
            "31",
        )
        return int(ExitCode.VALIDATION)
    if gpu.mode is GpuMode.PLANNING:
        _say(
            f"! planning mode: checked for {gpu.describe()}, not for GPUs found here; "
            "sglang will use whatever GPUs this machine has",
            err,
            paint,
            "33",
        )
    return _launch(profile, python, answer, args, err)


def _schema(use_oracle: bool, python: str | None) -> FlagSchema:
    if not use_oracle:
        return bundled_schema()
    from sglaunch.oracle.schema_cache import load_flag_schema

    return load_flag_schema(python).schema


def _gpu_facts(profile: Any, spec: str | None) -> Any:
    from sglaunch.facts.gpu import probe_gpus
    from sglaunch.facts.presets import DEFAULT_PLANNING, parse_gpu_spec

    if spec:
        return parse_gpu_spec(spec)
    env = dict(os.environ)
    if profile.gpus.cuda_visible_devices is not None:
        env["CUDA_VISIBLE_DEVICES"] = profile.gpus.cuda_visible_devices
    # no GPU here: plan for the machine the profile was saved for
    return probe_gpus(env=env, fallback_preset=profile.gpus.preset or DEFAULT_PLANNING)


def _warn_drift(profile: Any, gpu: Any, err: TextIO, paint: Painter) -> None:
    v = profile.validated
    if v is None:
        _say("! this profile was never validated; checking it now", err, paint, "33")
        return
    if v.sglang_version and v.sglang_version != SGLANG_VERSION:
        _say(
            f"! validated with sglang {v.sglang_version}; sglaunch mirrors sglang {SGLANG_VERSION}",
            err,
            paint,
            "33",
        )
    names = sorted({d.name for d in gpu.devices})
    if (v.gpu_count and v.gpu_count != gpu.count) or (
        v.gpu_names and sorted(set(v.gpu_names)) != names
    ):
        was = (
            f"{v.gpu_count}× {', '.join(sorted(set(v.gpu_names)))}"
            if v.gpu_names
            else f"{v.gpu_count} GPUs"
        )
        _say(f"! validated on {was}; now {gpu.describe()}", err, paint, "33")


class _Checker:
    """Both tiers for one profile's model and GPUs; the model is read and sglang started once."""

    def __init__(
        self,
        profile: Any,
        gpu: Any,
        schema: FlagSchema,
        python: str | None,
        *,
        use_oracle: bool,
        use_service: bool = True,
    ) -> None:
        from sglaunch.cli.check import inherited_env
        from sglaunch.facts.model import load_model_facts, model_path_for_sglang
        from sglaunch.profiles.argvform import env_items

        if not profile.model:
            raise UserError(f"profile '{profile.name}' has no model: set one and save it again")
        try:
            self.model = load_model_facts(profile.model)
        except UserError as exc:
            raise UserError(f"profile '{profile.name}': {exc.message}", exc.code) from None
        self.model_path = model_path_for_sglang(profile.model)
        # what the server will see: the shell's SGLANG_* variables, then the profile's
        self.env = {**inherited_env(os.environ), **dict(env_items(profile))}
        self.gpu = gpu
        self.schema = schema
        self.oracle: Any = None
        self.unavailable = "skipped (--no-oracle)"
        if use_oracle:
            from sglaunch.oracle.service_client import connect

            self.oracle = connect(python, use_service=use_service)
            status = self.oracle.start()
            if not status.available:
                self.unavailable = f"unavailable: {status.reason}"
                self.close()

    def __enter__(self) -> _Checker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.oracle is not None:
            self.oracle.close()
            self.oracle = None

    def check(self, profile: Any) -> tuple[list[Finding], Any, str]:
        from sglaunch.checking import check_flags, with_oracle
        from sglaunch.oracle.findings import oracle_findings
        from sglaunch.profiles import sglang_argv

        argv = sglang_argv(profile, schema=self.schema, model_path=self.model_path)
        result = check_flags(argv, schema=self.schema, gpu=self.gpu, model=self.model, env=self.env)
        if self.oracle is None:
            return list(result.findings), None, self.unavailable
        answer = self.oracle.resolve(argv, self.env, self.gpu)
        checked = with_oracle(result, answer, oracle_findings(answer))
        return list(checked.findings), checked.oracle, checked.oracle_status


def _fix(
    profile: Any,
    findings: list[Finding],
    checker: _Checker,
    schema: FlagSchema,
    err: TextIO,
    paint: Painter,
) -> tuple[Any, list[Finding], Any, str]:
    """Apply each error's first fix, re-checking after each round, until none is left."""
    answer: Any = None
    status = ""
    for _ in range(MAX_FIX_ROUNDS):
        errors = [f for f in findings if f.severity is Severity.ERROR and f.fixes]
        if not errors:
            break
        flags = dict(profile.flags)
        for finding in errors:
            fix = finding.fixes[0]
            before = dict(flags)
            flags = fix.apply(flags)
            changes = _describe(before, flags, schema)
            _say(f"fixed {finding.code}: {fix.label} ({changes})", err, paint, "32")
        profile = replace(profile, flags=flags)
        findings, answer, status = checker.check(profile)
    return profile, findings, answer, status


def _describe(before: dict[str, Any], after: dict[str, Any], schema: FlagSchema) -> str:
    parts = []
    for dest in sorted(set(before) | set(after)):
        if dest not in after:
            parts.append(f"removed {schema.cli_name(dest)}")
        elif before.get(dest) != after[dest]:
            parts.append(f"{schema.cli_name(dest)} {after[dest]}")
    return ", ".join(parts) or "no change"


def _launch(
    profile: Any, python: str | None, answer: Any, args: argparse.Namespace, err: TextIO
) -> int:
    from sglaunch.oracle.interpreter import find_sglang_python
    from sglaunch.profiles import resolve_launch
    from sglaunch.profiles.argvform import program
    from sglaunch.runtime import LaunchSpec, run_headless

    if python is None:
        found = find_sglang_python(None)
        # the managed CPU environment checks flags; it cannot serve
        python = found.path if found.source != "managed" else None
    launch = resolve_launch(profile, python=python)
    exe = program(profile, python)
    spec = LaunchSpec(
        argv=tuple(launch.argv[len(exe) :]),
        python=python or "python",
        entry=profile.entry,
        env=launch.env,
        profile=profile.name,
        resolved=answer.resolved if answer is not None else None,
    )
    code = run_headless(
        spec,
        json_lines=args.json,
        detach=args.detach,
        startup_timeout=args.startup_timeout,
        out=err,
    )
    return int(code)
