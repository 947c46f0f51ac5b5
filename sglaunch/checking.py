"""The built-in tier's input from a launch's flags, and a check's JSON form.

`sglaunch.verdict` merges both tiers; this module builds what the rules read and what
`check --json` prints.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sglaunch.flags.argv import ParsedFlags, parse_argv, to_argv
from sglaunch.flags.schema import FlagSchema
from sglaunch.validators.engine import Report, validate
from sglaunch.validators.facts import CheckInput, FlagIssue, GpuFacts, GpuMode, ModelFacts
from sglaunch.validators.findings import Finding

if TYPE_CHECKING:
    from sglaunch.release import FlagFacts
    from sglaunch.session import LaunchSession
    from sglaunch.validators.memory.baseline import MemoryFacts
    from sglaunch.verdict import Verdict


def build_input(
    flags: Mapping[str, Any],
    *,
    gpu: GpuFacts,
    model: ModelFacts | None,
    env: Mapping[str, str],
    schema: FlagSchema,
    issues: Sequence[FlagIssue] = (),
    sglang_version: str | None = None,
    memory: MemoryFacts | None = None,
) -> CheckInput:
    """`sglang_version`: the release the verdict is for (default: the schema's); `memory`:
    what is known of the GPUs' start-up cost (sglaunch.memory.assumptions)."""
    return CheckInput(
        flags=dict(flags),
        gpu=gpu,
        model=model,
        env=env,
        defaults=schema.defaults(),
        flag_issues=tuple(issues),
        cli_names=schema.cli_names(),
        sglang_version=sglang_version or schema.sglang_version,
        memory=memory,
    )


@dataclass(frozen=True)
class BuiltinCheck:
    """The built-in tier on one launch's flags (argv as sglang would get them)."""

    flags: dict[str, Any]
    parsed: ParsedFlags
    builtin: Report

    @property
    def findings(self) -> tuple[Finding, ...]:
        return self.builtin.findings


def check_flags(
    argv: Sequence[str],
    *,
    schema: FlagSchema,
    gpu: GpuFacts,
    model: ModelFacts | None,
    env: Mapping[str, str],
    sglang_version: str | None = None,
) -> BuiltinCheck:
    parsed = parse_argv(list(argv), schema)
    inp = build_input(
        parsed.values,
        gpu=gpu,
        model=model,
        env=env,
        schema=schema,
        issues=parsed.issues,
        sglang_version=sglang_version,
    )
    from sglaunch.memory.assumptions import with_memory_facts

    inp = with_memory_facts(inp)  # the calibrated start-up cost, for the memory rules
    return BuiltinCheck(flags=dict(parsed.values), parsed=parsed, builtin=validate(inp))


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
    verdict: Verdict,
    session: LaunchSession,
    *,
    argv: Sequence[str],
    sglang_version: str | None,
    versions: FlagFacts | None = None,
) -> dict[str, Any]:
    """`check --json`'s one object (DESIGN.md, "Headless interface").

    `versions`: which release the verdict is for and where that came from
    (`sglang_version` is then the installed one, `rules_version` the rules')."""
    schema = session.schema
    gpu = session.gpu
    model = session.model
    from sglaunch.memory.api import memory_json

    changed = None
    resolved = None
    oracle_error = None
    answer = verdict.answer
    if answer is not None:
        if answer.resolved is not None:
            resolved = answer.resolved
            changed = {k: [v[0], v[1]] for k, v in answer.changed.items()}
        if answer.error is not None:
            oracle_error = answer.error.to_json()
    data = {
        "ok": verdict.ok and not session.issues,
        "sglang_version": sglang_version,
        "rules_version": schema.sglang_version,
        **(versions.to_json() if versions is not None else {}),
        "oracle": verdict.oracle_status,
        "gpu": {
            "mode": str(gpu.mode),
            "preset": gpu.preset or None,
            "status": gpu.status,
            "count": gpu.count,
            # machines the server spans; `count` is one node's GPUs
            "nodes": gpu.nodes,
            # a planning preset's versions are assumptions, not this machine's: null here
            "driver_version": None if gpu.versions_assumed else gpu.driver_version,
            "cuda_version": None if gpu.versions_assumed else gpu.cuda_version,
            "planning": gpu.mode is GpuMode.PLANNING,
            "assumed": {"driver_version": gpu.driver_version, "cuda_version": gpu.cuda_version}
            if gpu.versions_assumed
            else None,
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
        "model": None if model is None else model_json(model),
        "findings": findings_json(verdict.findings, schema),
        "resolved": resolved,
        "changed": changed,
        "sglang_error": oracle_error,
        "memory": memory_json(session.check_input(), resolved, verdict.findings),
        "argv": list(argv),
        "flags": dict(session.flags),
        "normalized_argv": to_argv(dict(session.flags), schema),
    }
    from sglaunch.secrets import mask_json, secret_values  # issue 11: no secret in the JSON

    return mask_json(data, secret_values(argv, schema), schema)  # type: ignore[no-any-return]


def model_json(model: ModelFacts) -> dict[str, Any]:
    return {
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
    }
