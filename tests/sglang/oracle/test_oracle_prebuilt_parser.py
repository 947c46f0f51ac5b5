"""The spare child builds sglang's argument parser before its request arrives, keyed on the
environment variables building it read: a request whose environment gives one of them
another value gets a parser built after its environment is in place, and every answer is
the one a child that built its own parser gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from sglaunch.facts.presets import parse_gpu_spec
from sglaunch.oracle import Oracle, OracleAnswer
from sglaunch.validators.facts import GpuFacts
from tests.support.batched import verdict_key
from tests.support.differential_corpus import build_corpus

pytestmark = pytest.mark.oracle

# sglang's parser offers --sampling-backend token_oracle only when this is set at build time
TOKEN_ORACLE = "SGLANG_KV_CANARY_ENABLE_TOKEN_ORACLE"
# read while the parser is built (argparse's formatter asks the terminal's width), and
# changes no verdict: a request that sets it gets a parser built in its own child
FRESH_PARSER = {"COLUMNS": "97"}


def _prebuilt(answer: OracleAnswer) -> bool:
    return "parser_prebuilt_s" in answer.timing


def test_the_spare_answers_with_the_parser_it_built_ahead(
    oracle: Oracle, models: dict[str, Path], h100x2: GpuFacts
) -> None:
    answer = oracle.resolve(["--model-path", str(models["sala"]), "--tp-size", "2"], {}, h100x2)
    assert answer.ok, (answer.fault, answer.error)
    assert answer.resolved is not None and answer.resolved["tp_size"] == 2
    assert _prebuilt(answer), answer.timing


def test_an_environment_that_changes_the_parser_gets_a_parser_of_its_own(
    oracle: Oracle, models: dict[str, Path], b200x1: GpuFacts
) -> None:
    argv = ["--model-path", str(models["minicpm"]), "--sampling-backend", "token_oracle"]
    without = oracle.resolve(argv, {}, b200x1)
    assert without.error is not None and without.error.exit_code == 2, without
    assert "invalid choice: 'token_oracle'" in without.error.message
    assert _prebuilt(without)

    with_env = oracle.resolve(argv, {TOKEN_ORACLE: "1"}, b200x1)
    assert not _prebuilt(with_env), with_env.timing
    assert with_env.error is None or with_env.error.stage != "parse", with_env.error
    # and the spare after it builds one ahead again
    assert _prebuilt(oracle.resolve(argv, {}, b200x1))


def test_answers_with_the_prebuilt_parser_equal_a_child_that_built_its_own(
    oracle: Oracle,
) -> None:
    gpus: dict[str, GpuFacts] = {}
    differ, asked = [], 0
    for i, case in enumerate(build_corpus()):
        if i % 90:
            continue
        gpu = gpus.setdefault(case.gpu, parse_gpu_spec(case.gpu))
        argv, env = case.argv(), case.env_dict
        prebuilt = oracle.resolve(argv, env, gpu)
        own = oracle.resolve(argv, {**env, **FRESH_PARSER}, gpu)
        assert not prebuilt.fault and not own.fault, (prebuilt.fault, own.fault)
        assert not _prebuilt(own), own.timing
        asked += _prebuilt(prebuilt)
        if verdict_key(prebuilt) != verdict_key(own):
            differ.append(f"{' '.join(argv)} env={env}")
    assert asked >= 15, "most launches must have been answered with a prebuilt parser"
    assert differ == []
