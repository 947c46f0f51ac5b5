"""Which sglang release the TUI checks for, and saying so."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from sglaunch.profiles import Profile, ProfileStore, Validated
from sglaunch.tui.widgets.flag_editor import FlagEditor
from tests.support.tui import make_app, settle_app, told, wait_until

DP_ERROR = "MiniCPM does not support DP attention"


def saved(root: Path, version: str) -> None:
    ProfileStore(root).save(
        Profile(
            name="old",
            model="example:minicpm-sala",
            # dp-size 1: only 0.5.19-0.5.21 reject --enable-dp-attention itself
            flags={"enable_dp_attention": True},
            validated=Validated(version, ["NVIDIA H100 80GB HBM3"], 8, datetime.now(UTC)),
        )
    )


async def test_a_profile_checks_for_the_release_it_was_validated_with(tmp_path: Path) -> None:
    saved(tmp_path, "0.5.20")
    app = make_app(gpu_spec="H100x8", model=None, profile="old", profile_dir=tmp_path)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        assert app.active.version == "0.5.20" and str(app.active.source) == "named"
        assert DP_ERROR in [f.message for f in app.verdict.errors]
        assert app.sub_title.endswith("for sglang 0.5.20 (named)")
        assert "sglang 0.5.20 (named)" in str(app.main.query_one(FlagEditor).border_title)
        # its flags too, once the flag facts (no sglang installed here) have come in
        assert app.schema.sglang_version == "0.5.20"
        assert app.session.schema is app.schema


async def test_the_default_release_says_it_is_the_default_and_names_the_difference(
    tmp_path: Path,
) -> None:
    saved(tmp_path, "0.5.20")
    app = make_app(gpu_spec="H100x8", model=None, profile="old", profile_dir=tmp_path)
    app.named_version = "0.5.23"  # as `sglaunch --sglang-version 0.5.23 --profile old`
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        assert app.active.version == "0.5.23"
        assert DP_ERROR not in [f.message for f in app.verdict.errors]
        notes = told(app)
        assert any(
            "validated with sglang 0.5.20; now checked for sglang 0.5.23" in n for n in notes
        )
    plain = make_app(gpu_spec="H100x8")
    async with plain.run_test(size=(160, 50)) as pilot:
        await settle_app(plain, pilot)
        assert plain.sub_title.endswith("for sglang 0.5.23 (default)")


async def test_the_model_is_read_again_for_the_installed_release() -> None:
    # the model is read at start for the default release; the installed one comes later.
    # MiniCPM-V 4.7 has no class of its own before 0.5.23: its facts (native class, vision
    # config, and so the memory plan) must be 0.5.21's once that is the installed release
    from sglaunch.flags.schema import bundled_schema
    from sglaunch.release import FlagFacts, choose
    from tests.conftest import model_dir

    facts = FlagFacts(bundled_schema("0.5.21"), choose("0.5.21"), "flags read from sglang 0.5.21")
    app = make_app(
        gpu_spec="B200x8", model=str(model_dir("minicpmv-4.7")), flag_facts=lambda named: facts
    )
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        # the release may come in after the first read: then the model is read once more
        assert await wait_until(pilot, lambda: app.active.version == "0.5.21")
        await settle_app(app, pilot)
        model = app.session.model
        assert model is not None and model.sglang_native is False
        assert model.shapes is not None and model.shapes.vision_layers == 12  # transformers'
