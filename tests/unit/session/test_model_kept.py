"""The model the user chose is the launch's model: a Hugging Face repo id that is not in the
local cache (sglang will download it) is kept and checked without its config, never swapped
for the model that was open before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sglaunch.cli.main import main
from sglaunch.facts.model import ModelNotCached, load_model_facts
from sglaunch.flags.launchline import parse_launch_line
from sglaunch.flags.schema import bundled_schema
from sglaunch.profiles import ProfileStore, to_command, to_yaml
from sglaunch.session import LaunchSession
from sglaunch.verdict import TwoTier
from tests.fakes.oracle import FakeOracle

REPO = "Qwen/Qwen3-8B"  # a repo no bundled example mirrors
LINE = (
    f"python -m sglang.launch_server --model-path {REPO} --tp 4 --enable-dp-attention --dp-size 4"
)
NOTE = f"{REPO}: not in the local cache — checked without its config (sglang will download it)"


@pytest.fixture(autouse=True)
def empty_hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = int(exc.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


def test_a_pasted_repo_replaces_the_open_example_in_the_session() -> None:
    session = LaunchSession(bundled_schema(), default_python="/venv/bin/python")
    session.request_model("example:minicpm-sala")
    session.model_loaded("example:minicpm-sala", load_model_facts("example:minicpm-sala"))
    source = session.load_launch_line(parse_launch_line(LINE))
    assert source == REPO
    session.request_model(REPO)
    with pytest.raises(ModelNotCached) as exc:
        load_model_facts(REPO)
    assert "not in the local Hugging Face cache" in str(exc.value)
    assert session.model_not_cached(REPO)
    assert (session.model_source, session.model, session.model_note) == (REPO, None, NOTE)
    assert session.launch_spec({}).argv[:2] == ("--model-path", REPO)
    assert session.argv()[:2] == ["--model-path", REPO]
    assert f"--model-path {REPO}" in session.command_line(display=True)
    profile = session.to_profile("pasted")
    assert profile.model == REPO
    assert f"--model-path {REPO}" in to_command(profile)
    assert f"model-path: {REPO}" in to_yaml(profile).text
    verdict = TwoTier(FakeOracle()).check(session)
    assert NOTE in verdict.status


def test_check_keeps_a_repo_that_is_not_cached(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run(
        ["check", "--gpu", "H100x8", "--no-oracle", "--json", "--", *LINE.split()], capsys
    )
    assert rc == 0, err
    assert f"! {NOTE}" in err
    data = json.loads(out)
    assert data["argv"][:2] == ["--model-path", REPO]


def test_import_and_show_keep_a_repo_that_is_not_cached(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, _, err = run(["profiles", "import", LINE, "--name", "sala"], capsys)
    assert rc == 0, err
    assert ProfileStore().load("sala").model == REPO
    rc, out, _ = run(["profiles", "show", "sala", "--json"], capsys)
    assert rc == 0 and json.loads(out)["model_problem"] == NOTE
    rc, out, _ = run(["profiles", "export", "sala", "--format", "command"], capsys)
    assert rc == 0 and f"--model-path {REPO} " in out


# A repo a bundled example mirrors (the seed story's line, pasted before the download): the
# checks read sglaunch's copy of its config, the launch keeps the repo id.
SALA = "openbmb/MiniCPM-SALA"
SALA_LINE = LINE.replace(REPO, SALA)
COPY_NOTE = (
    f"{SALA}: not in the local cache — checked with sglaunch's bundled copy of its config "
    "(sglang will download the model)"
)


def test_a_repo_an_example_mirrors_is_checked_with_the_bundled_copy() -> None:
    from sglaunch.facts.model import model_path_for_launch, model_path_for_sglang
    from sglaunch.validators.engine import validate

    facts = load_model_facts(SALA)
    assert facts.source == SALA and facts.is_minicpm_sala
    session = LaunchSession(bundled_schema(), default_python="/venv/bin/python")
    session.load_launch_line(parse_launch_line(SALA_LINE))
    session.request_model(SALA)
    assert session.model_loaded(SALA, facts)
    assert session.model_note == COPY_NOTE
    assert session.launch_spec({}).argv[:2] == ("--model-path", SALA)
    assert model_path_for_launch(SALA) == SALA
    assert model_path_for_sglang(SALA).endswith("examples/minicpm-sala")  # what sglang reads
    codes = {f.code for f in validate(session.check_input()).findings}
    assert "minicpm-dp-attention" in codes


def test_check_says_the_bundled_copy_and_finds_the_minicpm_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, err = run(
        ["check", "--gpu", "H100x4", "--no-oracle", "--json", "--", *SALA_LINE.split()], capsys
    )
    assert rc == 1, err
    assert f"! {COPY_NOTE}" in err
    data = json.loads(out)
    assert "minicpm-dp-attention" in {f["code"] for f in data["findings"]}
    rc, out, err = run(
        ["check", "--gpu", "H100x4", "--no-oracle", "--fix", "--", *SALA_LINE.split()], capsys
    )
    assert rc == 0, err
    assert f"--model-path {SALA} --tp-size 4" in out and "examples" not in out
