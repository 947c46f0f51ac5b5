"""A fake oracle for the TUI tests: answers like sglang would, from the built-in rules plus step 45.

It is deliberately simple and synchronous; it records every request so tests
can check debouncing and stale-answer handling.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sglaunch.checking import build_input
from sglaunch.facts.model import load_model_facts
from sglaunch.flags.argv import parse_argv
from sglaunch.flags.schema import bundled_schema
from sglaunch.oracle.answer import OracleAnswer, OracleError, OracleStatus
from sglaunch.validators.engine import get_rule, validate
from sglaunch.validators.facts import GpuFacts
from sglaunch.validators.findings import Finding, Severity

# where the snapshot scenes show the bundled examples (tests/support/scenes.py, pin_paths)
EXAMPLES_SHOWN_AT = "/opt/sglaunch/examples"


def model_source(model_path: str) -> str:
    """The model a launch names, with a pinned example folder read as the example."""
    prefix = EXAMPLES_SHOWN_AT + "/"
    return "example:" + model_path[len(prefix) :] if model_path.startswith(prefix) else model_path


@dataclass
class FakeOracle:
    available: bool = True
    reason: str = ""
    delay: float = 0.0
    requests: list[tuple[list[str], dict[str, str], GpuFacts]] = field(default_factory=list)
    closed: bool = False
    # code -> the text sglang raises for it, where it differs from the built-in message
    error_words: dict[str, str] = field(default_factory=dict)

    version: str = "0.5.23"

    def start(self) -> OracleStatus:
        return OracleStatus(
            available=self.available,
            reason=self.reason,
            sglang_version=self.version if self.available else None,
        )

    def resolve(
        self, argv: Sequence[str], env: Mapping[str, str] | None, gpu: GpuFacts
    ) -> OracleAnswer:
        env = dict(env or {})
        self.requests.append((list(argv), dict(env), gpu))
        if self.delay:
            threading.Event().wait(self.delay)
        schema = bundled_schema()
        parsed = parse_argv(argv, schema)
        model = load_model_facts(model_source(parsed.values["model_path"]))
        report = validate(build_input(parsed.values, gpu=gpu, model=model, env=env, schema=schema))
        # sglang's resolution raises only what its parser, config load and post-init check;
        # launch-stage failures come later, from a real start
        errors = [
            f
            for f in report.findings
            if f.severity is Severity.ERROR
            and getattr(get_rule(f.code), "mirrors", "resolution") != "launch"
        ]
        changed: dict[str, tuple[Any, Any]] = dict(report.changes)
        # step 45: sglang fills a backend still unset after the model rules
        if "attention_backend" not in changed and parsed.values.get("attention_backend") is None:
            changed["attention_backend"] = (None, "trtllm_mha" if gpu.is_blackwell else "fa3")
        resolved = {**schema.defaults(), **parsed.values, **{k: v[1] for k, v in changed.items()}}
        error = None
        if errors:
            error = OracleError("ValueError", self.error_text(errors[0]), where=errors[0].ref)
        return OracleAnswer(
            ok=not errors,
            sglang_version=self.version,
            changed={} if errors else changed,
            resolved=None if errors else resolved,
            explicit=tuple(parsed.values),
            error=error,
            elapsed_s=0.01,
        )

    def error_text(self, finding: Finding) -> str:
        """sglang's own words for the error: a test may make them differ from the rule's."""
        return self.error_words.get(finding.code, finding.message)

    def close(self) -> None:
        self.closed = True
