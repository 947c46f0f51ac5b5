"""A pasted launch line's model is the launch's model, even when it is not in the local cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from sglaunch.tui.widgets.panels import ModelPanel
from tests.fakes.oracle import FakeOracle
from tests.functional.tui.test_editor_interactions import paste
from tests.support.tui import make_app, plain, settle_app

REPO = "Qwen/Qwen3-8B"  # a repo no bundled example mirrors
LINE = (
    f"python -m sglang.launch_server --model-path {REPO} --tp 4 --enable-dp-attention --dp-size 4"
)


@pytest.fixture(autouse=True)
def empty_hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


async def test_a_pasted_repo_not_in_the_cache_replaces_the_open_example() -> None:
    app = make_app(gpu_spec="H100x8", oracle=FakeOracle())  # the SALA example is open
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        await paste(app, pilot, LINE)
        session = app.session
        assert session.model_source == REPO
        assert session.model is None  # never the example's facts under the user's model
        spec = session.launch_spec({})
        assert spec.argv[:2] == ("--model-path", REPO)
        assert "examples/minicpm-sala" not in " ".join(spec.command())
        preview = plain(app.main.query_one("#command"))
        assert f"--model-path {REPO}" in preview and "examples" not in preview
        assert f"model-path: {REPO}" in app.config_yaml()
        panel = plain(app.main.query_one(ModelPanel))
        assert "not in the local cache" in panel and "without its config" in panel
        assert "previous model" not in panel
        assert "without its config" in app.verdict.status
        assert session.to_profile("pasted").model == REPO


async def test_a_pasted_repo_an_example_mirrors_is_checked_with_its_bundled_copy() -> None:
    sala = "openbmb/MiniCPM-SALA"
    app = make_app(gpu_spec="H100x4", oracle=FakeOracle(), model="example:llama-3.1-8b")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        await paste(app, pilot, LINE.replace(REPO, sala))
        await settle_app(app, pilot)
        session = app.session
        assert session.model_source == sala
        assert session.model is not None and session.model.is_minicpm_sala
        assert session.launch_spec({}).argv[:2] == ("--model-path", sala)
        panel = plain(app.main.query_one(ModelPanel))
        assert "MiniCPMSALAForCausalLM" in panel and "bundled copy" in panel
        assert "minicpm-dp-attention" in {f.code for f in app.verdict.findings}
