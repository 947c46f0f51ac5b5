"""One validation, UI-free: parse the flags, gather the facts, run both tiers, merge.

The CLI (`sglaunch check`, `--apply`) and the TUI both go through here, so a
verdict reads the same everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from sglaunch.flags.argv import ParsedFlags, parse_argv, to_argv
from sglaunch.flags.schema import FlagSchema
from sglaunch.validators.engine import Report, get_rule, validate
from sglaunch.validators.facts import CheckInput, FlagIssue, GpuFacts, ModelFacts
from sglaunch.validators.findings import Finding, Severity, sort_findings

if TYPE_CHECKING:  # the oracle client is optional at import time
    from sglaunch.oracle.client import OracleAnswer


def build_input(
    flags: Mapping[str, Any],
    *,
    gpu: GpuFacts,
    model: ModelFacts | None,
    env: Mapping[str, str],
    schema: FlagSchema,
    issues: Sequence[FlagIssue] = (),
) -> CheckInput:
    return CheckInput(
        flags=dict(flags),
        gpu=gpu,
        model=model,
        env=env,
        defaults=schema.defaults(),
        flag_issues=tuple(issues),
        cli_names=schema.cli_names(),
    )


@dataclass
class CheckResult:
    flags: dict[str, Any]
    gpu: GpuFacts
    model: ModelFacts | None
    env: dict[str, str]
    builtin: Report
    parsed: ParsedFlags
    oracle: OracleAnswer | None = None
    oracle_status: str = "not run"
    findings: list[Finding] = field(default_factory=list)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def has_parse_errors(self) -> bool:
        return bool(self.parsed.issues)


def check_flags(
    argv: Sequence[str],
    *,
    schema: FlagSchema,
    gpu: GpuFacts,
    model: ModelFacts | None,
    env: Mapping[str, str],
) -> CheckResult:
    """The built-in tier on a launch's flags (argv as sglang would get them)."""
    parsed = parse_argv(argv, schema)
    inp = build_input(
        parsed.values, gpu=gpu, model=model, env=env, schema=schema, issues=parsed.issues
    )
    from sglaunch.memory.facts import with_memory_facts

    inp = with_memory_facts(inp)  # issue 9: calibrated start-up cost for the memory rules
    report = validate(inp)
    return CheckResult(
        flags=dict(parsed.values),
        gpu=gpu,
        model=model,
        env=dict(env),
        builtin=report,
        parsed=parsed,
        findings=list(report.findings),
    )


def merge_findings(
    builtin: Sequence[Finding], answer_ok: bool, oracle_found: Sequence[Finding]
) -> list[Finding]:
    """Both tiers in one list. sglang's verdict is authoritative where the two disagree."""
    oracle_errors = [f for f in oracle_found if f.severity is Severity.ERROR]
    merged: list[Finding] = []
    if answer_ok and not oracle_errors:
        for f in builtin:
            r = get_rule(f.code)
            mirrors = r.mirrors if r else ""
            if f.severity is Severity.ERROR and mirrors in ("resolution", "config"):
                # DESIGN: when the tiers disagree, the built-in tier is wrong
                merged.append(
                    replace(
                        f,
                        severity=Severity.WARNING,
                        detail=(f.detail + " " if f.detail else "")
                        + "sglang's own resolution accepted this launch; the built-in rule disagrees "
                        "(please report it).",
                    )
                )
            else:
                merged.append(f)
    else:
        merged.extend(builtin)
    seen_errors = {(f.code, f.message) for f in merged if f.severity is Severity.ERROR}
    builtin_overrides = {f.override.field: f for f in merged if f.override is not None}
    for f in oracle_found:
        if f.severity is Severity.ERROR:
            if (f.code, f.message) in seen_errors:
                # the same error from both tiers: keep the built-in one (it has
                # fixes) and say sglang confirmed where it raised it
                merged = [
                    replace(m, source=f.source) if (m.code, m.message) == (f.code, f.message) else m
                    for m in merged
                ]
                continue
            merged.append(f)
        elif f.override is not None and f.override.field in builtin_overrides:
            # sglang confirms a silent change the built-in tier predicted
            old = builtin_overrides[f.override.field]
            if old.override is not None and old.override.value == f.override.value:
                merged = [replace(m, source=f.source) if m is old else m for m in merged]
                continue
            merged.append(f)
        else:
            merged.append(f)
    return sort_findings(merged)


def with_oracle(
    result: CheckResult, answer: OracleAnswer, oracle_found: list[Finding]
) -> CheckResult:
    """The result with sglang's verdict merged in, and the status line that says which."""
    if answer.fault:
        # no verdict from sglang: say why, keep the built-in one (plus a warning)
        return replace(
            result,
            findings=sort_findings([*result.findings, *oracle_found]),
            oracle_status=f"unavailable: {answer.fault}",
        )
    from sglaunch import SGLANG_VERSION

    verdict = "accepted" if answer.ok else "rejected"
    return replace(
        result,
        oracle=answer,
        findings=merge_findings(result.builtin.findings, answer.ok, oracle_found),
        oracle_status=f"{verdict} by sglang {answer.sglang_version or SGLANG_VERSION} "
        f"({answer.elapsed_s * 1000:.0f} ms)",
    )


def findings_json(
    findings: Sequence[Finding], schema: FlagSchema | None = None
) -> list[dict[str, Any]]:
    out = []
    for f in findings:
        d = f.to_json()
        if schema is not None:
            d["flags"] = [schema.cli_name(x) for x in f.flags]
        out.append(d)
    return out


def result_json(
    result: CheckResult,
    *,
    schema: FlagSchema,
    argv: Sequence[str],
    sglang_version: str | None,
) -> dict[str, Any]:
    from sglaunch.memory.api import memory_json

    gpu = result.gpu
    model = result.model
    changed = None
    resolved = None
    oracle_error = None
    if result.oracle is not None:
        if result.oracle.resolved is not None:
            resolved = result.oracle.resolved
            changed = {k: [v[0], v[1]] for k, v in result.oracle.changed.items()}
        err = result.oracle.error
        if err is not None:
            oracle_error = err.to_json()
    return {
        "ok": result.ok and not result.has_parse_errors,
        "sglang_version": sglang_version,
        "rules_version": schema.sglang_version,
        "oracle": result.oracle_status,
        "gpu": {
            "mode": str(gpu.mode),
            "preset": gpu.preset or None,
            "status": gpu.status,
            "count": gpu.count,
            "driver_version": gpu.driver_version,
            "cuda_version": gpu.cuda_version,
            "devices": [
                {
                    "index": d.index,
                    "name": d.name,
                    "capability": f"{d.capability[0]}.{d.capability[1]}",
                    "arch": d.arch,
                    "memory_total": d.memory_total,
                    "memory_used": d.memory_used,
                }
                for d in gpu.devices
            ],
        },
        "model": None
        if model is None
        else {
            "source": model.source,
            "architecture": model.architecture,
            "model_type": model.model_type,
            "num_hidden_layers": model.num_hidden_layers,
            "num_attention_heads": model.num_attention_heads,
            "num_key_value_heads": model.num_key_value_heads,
            "context_length": model.context_length,
            "dtype": model.dtype,
            "needs_remote_code": model.needs_remote_code,
            "has_minicpm_sparse_attention": model.has_minicpm_sparse_attention,
            "has_lightning_layers": model.has_lightning_layers,
            "weight_bytes": model.weight_bytes,
            "loaded_with": model.loaded_with,
        },
        "findings": findings_json(result.findings, schema),
        "resolved": resolved,
        "changed": changed,
        "sglang_error": oracle_error,
        "memory": memory_json(result, schema),
        "argv": list(argv),
        "flags": result.flags,
        "normalized_argv": to_argv(result.flags, schema),
    }
