"""A fake oracle for the TUI tests: answers like sglang would, from the built-in rules plus step 45.

It is deliberately simple and synchronous; it records every request so tests
can check debouncing and stale-answer handling.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from sglaunch.checking import build_input
from sglaunch.facts.model import load_model_facts
from sglaunch.flags.argv import parse_argv
from sglaunch.flags.schema import bundled_schema
from sglaunch.validators.engine import get_rule, validate
from sglaunch.validators.facts import GpuFacts
from sglaunch.validators.findings import Finding, Override, Severity


@dataclass
class FakeStatus:
    available: bool = True
    reason: str = ""
    sglang_version: str | None = "0.5.23"


@dataclass
class FakeError:
    type: str
    message: str
    where: str = "srt/arg_groups/model_overrides/minicpm.py:18"


@dataclass
class FakeAnswer:
    """The shape of sglaunch.oracle.answer.OracleAnswer that the app reads."""

    ok: bool
    sglang_version: str | None
    changed: dict[str, Any]
    resolved: dict[str, Any] | None
    error: FakeError | None = None
    fault: str = ""


@dataclass
class FakeOracle:
    available: bool = True
    reason: str = ""
    delay: float = 0.0
    requests: list[tuple[list[str], dict[str, str], GpuFacts]] = field(default_factory=list)
    closed: bool = False

    def start(self) -> FakeStatus:
        return FakeStatus(available=self.available, reason=self.reason)

    def resolve(self, argv: list[str], env: dict[str, str], gpu: GpuFacts) -> FakeAnswer:
        self.requests.append((list(argv), dict(env), gpu))
        if self.delay:
            threading.Event().wait(self.delay)
        schema = bundled_schema()
        parsed = parse_argv(argv, schema)
        model = load_model_facts(parsed.values["model_path"])
        report = validate(build_input(parsed.values, gpu=gpu, model=model, env=env, schema=schema))
        # sglang's resolution raises only what its parser, config load and post-init check;
        # launch-stage failures come later, from a real start
        errors = [
            f
            for f in report.findings
            if f.severity is Severity.ERROR
            and getattr(get_rule(f.code), "mirrors", "resolution") != "launch"
        ]
        changed: dict[str, Any] = {k: [a, v] for k, (a, v) in report.changes.items()}
        # step 45: sglang fills a backend still unset after the model rules
        if "attention_backend" not in changed and parsed.values.get("attention_backend") is None:
            changed["attention_backend"] = [None, "trtllm_mha" if gpu.is_blackwell else "fa3"]
        resolved = {**schema.defaults(), **parsed.values, **{k: v[1] for k, v in changed.items()}}
        return FakeAnswer(
            ok=not errors,
            sglang_version="0.5.23",
            changed={} if errors else changed,
            resolved=None if errors else resolved,
            error=FakeError("ValueError", errors[0].message) if errors else None,
        )

    def close(self) -> None:
        self.closed = True


def fake_findings(answer: FakeAnswer) -> list[Finding]:
    """Like sglaunch.oracle.findings.oracle_findings, for the fake answer."""
    out = []
    if answer.error is not None:
        out.append(
            Finding(
                code="minicpm-dp-attention"
                if "DP attention" in answer.error.message
                else "sglang-error",
                severity=Severity.ERROR,
                message=answer.error.message,
                source=f"sglang:{answer.error.where}",
            )
        )
    for field_name, (asked, value) in answer.changed.items():
        out.append(
            Finding(
                code="sglang-override",
                severity=Severity.OVERRIDE,
                message=f"sglang will set {field_name}={value}",
                flags=(field_name,),
                source="sglang",
                override=Override(field_name, asked, value),
            )
        )
    return out
