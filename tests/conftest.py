"""Shared helpers: build a check from data the way the CLI does, without sglang or a GPU."""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sglaunch.checking import build_input
from sglaunch.facts.model import load_model_facts
from sglaunch.facts.presets import parse_gpu_spec
from sglaunch.flags.argv import parse_argv
from sglaunch.flags.schema import bundled_schema
from sglaunch.validators.engine import Report, validate
from sglaunch.validators.facts import CheckInput, ModelFacts
from tests.support.xdist_groups import add_release_groups

DATA = Path(__file__).parent / "data"
MODELS = DATA / "models"


def model_dir(name: str) -> Path:
    return MODELS / name


@functools.cache
def _model_facts(source: str, version: str | None) -> ModelFacts:
    # frozen facts: one read per model and release serves every case of a table
    return load_model_facts(source, sglang_version=version)


def make_input(
    model: str | None,
    argv: list[str],
    gpu: str = "H100x8",
    env: dict[str, str] | None = None,
    version: str | None = None,
) -> CheckInput:
    """The check the CLI would build, for `version`'s bundled schema and rules (default: the newest)."""
    schema = bundled_schema(version)
    parsed = parse_argv(argv, schema)
    facts = None
    if model is not None:
        source = (
            model if model.startswith("example:") or os.path.isabs(model) else str(model_dir(model))
        )
        facts = _model_facts(source, version)
    return build_input(
        parsed.values,
        gpu=parse_gpu_spec(gpu),
        model=facts,
        env=env or {},
        schema=schema,
        issues=parsed.issues,
        sglang_version=version,
    )


def run_rules(
    model: str | None,
    argv: list[str],
    gpu: str = "H100x8",
    env: dict[str, str] | None = None,
    version: str | None = None,
) -> Report:
    return validate(make_input(model, argv, gpu, env, version))


@pytest.fixture(autouse=True)
def _isolated_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No test reads or writes the real user directories."""
    home = tmp_path_factory.mktemp("sglaunch-home")
    monkeypatch.setenv("SGLAUNCH_HOME", str(home))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session", autouse=True)
def _oracle_service_folder() -> Iterator[Path]:
    """The shared oracle services of this run live in one private folder (a short path, as
    sockets need) and idle out after 30 s; none outlives the run."""
    from sglaunch.oracle.ipc import IDLE_ENV, RUNTIME_ENV
    from sglaunch.oracle.service_admin import stop_services

    folder = Path(tempfile.mkdtemp(prefix="sglaunch-tests-"))
    saved = {name: os.environ.get(name) for name in (RUNTIME_ENV, IDLE_ENV)}
    os.environ[RUNTIME_ENV] = str(folder)
    os.environ[IDLE_ENV] = "30"
    yield folder
    stop_services(folder=folder, wait=5.0)
    shutil.rmtree(folder, ignore_errors=True)
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


# first: xdist reads the groups in its own hook of this name, which otherwise runs before
# this one and sees no group (then every worker ran every release's corpus)
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist (`make test` runs the unit, functional and sglang tiers on both cores), the
    tests of one sglang module and release share an xdist worker (tests/support/xdist_groups.py)."""
    add_release_groups(items, Path(__file__).parent)
