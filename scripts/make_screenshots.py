"""Render the app's key screens to screenshots/*.svg (the README shows them).

    make screenshots        # or: .venv/bin/python scripts/make_screenshots.py

The app renders itself (Textual's SVG export), with the same fakes the tests
use: planning-mode GPUs, the fake oracle, the stand-in sglang server.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from textual._doc import take_svg_screenshot  # noqa: E402

from sglaunch.runtime import Status  # noqa: E402
from sglaunch.tui.app import SglaunchApp  # noqa: E402
from tests.fakes.nvml import H100, FakeNvml, gpu  # noqa: E402
from tests.fakes.oracle import FakeOracle  # noqa: E402
from tests.process.tui.test_monitor_screen import factory, graph_oom_app  # noqa: E402
from tests.support.processes import free_tcp_port  # noqa: E402
from tests.support.scenes import DP_LINE, focus_findings, open_card, paste, settle  # noqa: E402
from tests.support.tui import make_app  # noqa: E402

OUT = ROOT / "screenshots"
# what NVML would show while the demo server runs: weights + KV pool resident, some load
SERVING_GPUS = FakeNvml([gpu(H100, i, used_gib=70.2, util=35 + i) for i in range(8)])


def monitor_until(status: Status) -> Callable[..., Awaitable[None]]:
    async def run(pilot) -> None:  # type: ignore[no-untyped-def]
        await settle(pilot)
        await pilot.press("ctrl+l")
        for _ in range(300):
            await pilot.pause(0.1)
            screen = pilot.app.screen
            if getattr(screen, "state", None) is not None and screen.state.status is status:
                break
        await pilot.pause(1.5)

    return run


async def layouts(pilot) -> None:  # type: ignore[no-untyped-def]
    await settle(pilot)
    await pilot.press("m")  # the parallel layouts that fit, each planned and checked
    await pilot.pause(0.5)


def shots() -> list[
    tuple[str, Callable[[], SglaunchApp], tuple[int, int], Callable[..., Awaitable[None]]]
]:
    port = free_tcp_port()
    return [
        (
            "main",
            lambda: make_app(oracle=FakeOracle(), gpu_spec="H100x8", argv=DP_LINE),
            (160, 50),
            settle,
        ),
        (
            "card",
            lambda: make_app(oracle=FakeOracle(), gpu_spec="H100x8", argv=DP_LINE),
            (160, 50),
            open_card,
        ),
        (
            "layouts",
            lambda: make_app(oracle=FakeOracle(), gpu_spec="H100x8", argv=DP_LINE),
            (160, 50),
            layouts,
        ),
        ("paste", lambda: make_app(oracle=FakeOracle(), gpu_spec="H100x8"), (120, 36), paste),
        (
            "narrow",
            lambda: make_app(oracle=FakeOracle(), gpu_spec="H100x8", argv=DP_LINE),
            (80, 24),
            focus_findings,
        ),
        (
            "monitor-ready",
            lambda: make_app(
                nvml=FakeNvml([gpu(H100, i) for i in range(8)]),
                model="example:llama-3.1-8b",
                argv=["--port", str(port), "--enable-metrics"],
                server_factory=factory("ok", nvml=SERVING_GPUS),
            ),
            (160, 50),
            monitor_until(Status.READY),
        ),
        ("monitor-oom", graph_oom_app, (160, 50), monitor_until(Status.FAILED)),
    ]


def main() -> None:
    import os
    import tempfile

    # run directories of the demo launches go to a scratch home, not the user's; shown as
    # a user's own would be (~/.local/share/sglaunch/runs/…), not as a temporary path
    scratch = tempfile.mkdtemp(prefix="sglaunch-shots-")
    os.environ["HOME"] = scratch
    os.environ.pop("SGLAUNCH_HOME", None)
    os.environ.pop("XDG_DATA_HOME", None)
    os.environ.pop("XDG_STATE_HOME", None)
    from tests.support.scenes import pin_paths

    pin_paths(setattr)  # the example's folder, wherever this checkout is
    OUT.mkdir(exist_ok=True)
    for name, build, size, before in shots():
        svg = take_svg_screenshot(app=build(), terminal_size=size, run_before=before)
        (OUT / f"{name}.svg").write_text(svg, encoding="utf-8")
        print(f"screenshots/{name}.svg")


if __name__ == "__main__":
    asyncio.set_event_loop_policy(None)
    main()
