"""The TUI across nodes: nodes in the GPU dialog, the layouts over them, a line per node."""

from __future__ import annotations

from textual.widgets import DataTable, Input

from sglaunch.tui.screens.dialogs import GpuScreen
from sglaunch.tui.screens.layouts import LayoutsScreen
from sglaunch.tui.widgets.panels import CommandPreview
from tests.fakes.oracle import FakeOracle
from tests.support.tui import make_app, plain, settle_app

LLAMA = "example:llama-3.1-8b"
LINE = ["--tp", "16", "--dist-init-addr", "10.0.0.5:20000", "--host", "0.0.0.0"]


def preview_text(app) -> str:  # type: ignore[no-untyped-def]
    return str(app.main.query_one(CommandPreview).render())


async def test_nodes_chosen_in_the_gpu_dialog_check_and_show_a_line_per_node() -> None:
    app = make_app(
        oracle=FakeOracle(), gpu_spec="H100x8", model=LLAMA, argv=[*LINE, "--nnodes", "2"]
    )
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        # the line's --nnodes is the topology until one is chosen
        assert app.session.nodes == 2
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert isinstance(app.screen, GpuScreen)
        nodes = app.screen.query_one("#gpu-nodes", Input)
        assert nodes.value == "2"
        nodes.value = "4"
        await pilot.click("#gpu-apply")
        await pilot.pause()
        await settle_app(app, pilot)
        assert not isinstance(app.screen, GpuScreen)
        assert app.session.nodes == 4 and app.session.gpu.describe().startswith("4 nodes × 8×")
        # the count chosen is the line's: the checks see what every node runs
        assert app.session.flags.get("nnodes") == 4
        assert "nodes-mismatch" not in {f.code for f in app.verdict.findings}
        text = preview_text(app)
        assert "launch command per node" in (app.main.query_one(CommandPreview).border_title or "")
        for rank in range(4):
            assert f"# node {rank} of 4" in text
            assert f"--node-rank {rank}" in text
        assert text.count("--nnodes 4") == 4


async def test_nodes_chosen_for_a_one_node_line_set_its_nnodes_and_find_the_rendezvous() -> None:
    app = make_app(oracle=FakeOracle(), gpu_spec="H100x8", model=LLAMA, argv=["--tp", "16"])
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert isinstance(app.screen, GpuScreen)
        app.screen.query_one("#gpu-nodes", Input).value = "2"
        await pilot.click("#gpu-apply")
        await pilot.pause()
        await settle_app(app, pilot)
        assert app.session.nodes == 2 and app.session.flags.get("nnodes") == 2
        # the GPU box says the topology, as the CLI's headers do
        assert "2 nodes × 8× H100" in plain(app.screen.query_one("#gpu-panel"))
        codes = {f.code for f in app.verdict.findings}
        # as `sglaunch check -- --tp 16 --nnodes 2` says of this line
        assert "nodes-mismatch" not in codes
        assert {"dist-init-addr-missing", "multinode-host-loopback"} <= codes
        (loopback,) = [f for f in app.verdict.findings if f.code == "multinode-host-loopback"]
        assert loopback.fixes[0].set == {"host": "0.0.0.0"}
        text = preview_text(app)
        assert text.count("--nnodes 2") == 2 and "--node-rank 1" in text
        # back to one node: the line's node flags go with it
        await pilot.press("ctrl+g")
        await pilot.pause()
        app.screen.query_one("#gpu-nodes", Input).value = "1"
        await pilot.click("#gpu-apply")
        await pilot.pause()
        await settle_app(app, pilot)
        assert app.session.nodes == 1 and "nnodes" not in app.session.flags
        assert "dist-init-addr-missing" not in {f.code for f in app.verdict.findings}


async def test_a_bad_node_count_stays_in_the_dialog() -> None:
    app = make_app(gpu_spec="H100x8", model=LLAMA, argv=LINE)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        await pilot.press("ctrl+g")
        await pilot.pause()
        app.screen.query_one("#gpu-nodes", Input).value = "0"
        await pilot.click("#gpu-apply")
        await pilot.pause()
        assert isinstance(app.screen, GpuScreen)
        assert "nodes must be 1 to" in str(app.screen.query_one("#gpu-error").render())
        assert app.session.nodes == 1


async def test_the_layouts_span_the_nodes_and_picking_one_sets_nnodes() -> None:
    app = make_app(gpu_spec="H100x8", model=LLAMA, argv=[*LINE, "--nnodes", "2"])
    async with app.run_test(size=(200, 50)) as pilot:
        await settle_app(app, pilot)
        await pilot.press("m")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, LayoutsScreen)
        assert "Parallel layouts on 2 nodes × 8 GPUs" in str(
            screen.query_one(".dialog-title").render()
        )
        table = screen.query_one(DataTable)
        assert "nodes" in [str(c.label) for c in table.columns.values()]
        spans = {(x.tp, x.pp, x.nodes, x.servers) for x in screen.layouts}
        assert (16, 1, 2, 1) in spans and (8, 2, 2, 1) in spans
        assert any(servers == 2 for *_, servers in spans)
        choice = next(i for i, x in enumerate(screen.layouts) if (x.tp, x.pp, x.nodes) == (8, 2, 2))
        table.move_cursor(row=choice)
        await pilot.press("enter")
        await pilot.pause()
        flags = app.session.flags
        assert (flags.get("tp_size"), flags.get("pp_size"), flags.get("nnodes")) == (8, 2, 2)
