"""sglang's errors that are not its argument checks get the flag whose value they are about."""

from __future__ import annotations

from sglaunch.catalogue.vetting import named_flags
from sglaunch.flags.schema import bundled_schema
from sglaunch.validators.findings import Finding, Severity


def _error(code: str, message: str) -> Finding:
    return Finding(code=code, severity=Severity.ERROR, message=message, source="sglang:x.py:1")


def test_a_missing_path_names_its_flag() -> None:
    argv = ["--model-path", "m", "--speculative-draft-model-path", "/no/such/draft"]
    message = "OSError: Repo id must be in the form 'repo_name': '/no/such/draft'."
    (f,) = named_flags([_error("sglang-error", message)], argv, bundled_schema("0.5.23"))
    assert f.flags == ("speculative_draft_model_path",)
    assert "--speculative-draft-model-path /no/such/draft: no such file or folder" in f.detail


def test_json_sglang_could_not_decode_names_its_flag() -> None:
    argv = ["--model-path", "m", "--json-model-override-args", "{rope_scaling:{type:yarn}}"]
    message = "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
    (f,) = named_flags([_error("invalid-json-flag", message)], argv, bundled_schema("0.5.23"))
    assert f.flags == ("json_model_override_args",)
    assert "--json-model-override-args holds the JSON" in f.detail


def test_an_error_that_names_no_value_is_left_alone() -> None:
    argv = ["--model-path", "some/model", "--tp-size", "2"]
    finding = _error("sglang-error", "something else went wrong")
    assert named_flags([finding], argv, bundled_schema("0.5.23")) == [finding]
