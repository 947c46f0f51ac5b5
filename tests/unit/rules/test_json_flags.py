"""A JSON-valued string flag that does not parse is named before sglang's bare JSONDecodeError."""

from __future__ import annotations

import json

from sglaunch.validators.findings import Severity
from sglaunch.validators.registry import match_card
from tests.conftest import run_rules


def _json_findings(argv: list[str]) -> list:  # type: ignore[type-arg]
    report = run_rules("minicpm-plain", argv, gpu="H100x1")
    return [f for f in report.findings if f.code == "invalid-json-flag"]


def test_unquoted_override_is_named_with_the_flag_and_a_quoted_fix() -> None:
    (finding,) = _json_findings(
        ["--json-model-override-args", "{rope_scaling:{type:yarn,factor:4}}"]
    )
    assert finding.severity is Severity.ERROR
    assert finding.flags == ("json_model_override_args",)
    assert "--json-model-override-args is not valid JSON" in finding.message
    assert "single quotes" in finding.detail
    fixed = finding.fixes[0].set["json_model_override_args"]
    assert json.loads(fixed) == {"rope_scaling": {"type": "yarn", "factor": 4}}
    assert f"'{fixed}'" in finding.detail


def test_every_string_flag_defaulting_to_json_is_checked() -> None:
    (finding,) = _json_findings(["--model-loader-extra-config", "{a:1"])
    assert finding.flags == ("model_loader_extra_config",)
    assert finding.fixes == ()  # nothing parses: no guess offered


def test_valid_json_passes() -> None:
    assert _json_findings(["--json-model-override-args", '{"rope_scaling": {"factor": 4}}']) == []


def test_sglangs_own_decode_error_gets_the_same_card() -> None:
    card = match_card("Expecting property name enclosed in double quotes: line 1 column 2 (char 1)")
    assert card is not None and card.code == "invalid-json-flag"
