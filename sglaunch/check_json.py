"""`check --json`'s one object: a checked session and its verdict, as JSON.

Above `checking` (whose findings JSON it reuses), `session` and `verdict`, which it reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sglaunch.checking import findings_json
from sglaunch.flags.argv import to_argv
from sglaunch.memory.api import memory_json
from sglaunch.secrets import mask_json, secret_values
from sglaunch.validators.facts import GpuMode, ModelFacts

if TYPE_CHECKING:
    from sglaunch.release import FlagFacts
    from sglaunch.session import LaunchSession
    from sglaunch.verdict import Verdict


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
