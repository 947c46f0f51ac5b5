"""A multi-node launch's exports from the palette: the file `profiles export` writes, and the
command that hands the profile to Slurm."""

from __future__ import annotations

from pathlib import Path

from sglaunch.profiles import Profile, ProfileStore
from sglaunch.profiles.engines import engine_export
from sglaunch.tui.app import SglaunchApp
from tests.support.tui import make_app, settle_app, told, wait_until

LLAMA = "example:llama-3.1-8b"
FLAGS = {"tp_size": 16, "dist_init_addr": "10.0.0.5:20000", "host": "0.0.0.0", "nnodes": 2}


def titles(app: SglaunchApp) -> list[str]:
    return [c.title for c in app.get_system_commands(app.screen)]


async def run_command(app: SglaunchApp, pilot, title: str) -> None:  # type: ignore[no-untyped-def]
    """Through the palette, as a user: ctrl+p, the command's name, enter."""
    await pilot.press("ctrl+p")
    await pilot.pause()
    await pilot.press(*title)
    # the palette searches in the background: wait until the command is its first hit
    from textual.command import CommandList

    assert await wait_until(
        pilot,
        lambda: (
            (hits := app.screen.query(CommandList))
            and hits.first().option_count > 0
            and title in str(hits.first().get_option_at_index(0).prompt)
        ),
    )
    await pilot.press("enter")
    await pilot.pause()


async def test_the_palette_exports_a_multi_node_profile_for_slurm(tmp_path: Path) -> None:
    store = ProfileStore(tmp_path / "profiles")
    store.save(Profile(name="big", model=LLAMA, flags=FLAGS, nodes=2))
    out = tmp_path / "out"
    out.mkdir()
    app = make_app(
        gpu_spec="H100x8",
        model=None,
        profile="big",
        profile_dir=tmp_path / "profiles",
        export_dir=out,
    )
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        assert app.session.nodes == 2
        await run_command(app, pilot, "Export for Slurm")
        written = out / "big.sbatch"
        assert await wait_until(pilot, written.exists)
        # the same text `sglaunch profiles export big --format slurm` writes
        assert written.read_text() == engine_export(store.load("big"), "slurm")
        assert written.stat().st_mode & 0o111  # a batch script runs as it is
        assert await wait_until(pilot, lambda: any(str(written) in t for t in told(app)))
        await run_command(app, pilot, "Export for LeaderWorkerSet")
        assert await wait_until(pilot, (out / "big.lws.yaml").exists)
        await run_command(app, pilot, "Launch on Slurm")
        assert any("sglaunch --profile big --apply --target slurm" in t for t in told(app))


async def test_an_export_of_an_unsaved_launch_asks_for_a_profile_first(tmp_path: Path) -> None:
    app = make_app(
        gpu_spec="H100x8",
        model=LLAMA,
        argv=["--tp", "16", "--nnodes", "2"],
        profile_dir=tmp_path,
        export_dir=tmp_path,
    )
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        await run_command(app, pilot, "Export for SkyPilot")
        assert any("save this launch first (ctrl+s)" in t for t in told(app))
        assert not list(tmp_path.iterdir())


async def test_one_node_offers_no_node_export(tmp_path: Path) -> None:
    app = make_app(gpu_spec="H100x8", model=LLAMA, argv=["--tp", "8"])
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        assert not [t for t in titles(app) if t.startswith(("Export for", "Launch on"))]
        app.session.choose_nodes(2)
        assert "Export for Slurm" in titles(app) and "Launch on Slurm…" in titles(app)
