"""The TUI under test: the app built with fakes for NVML, the model loader's environment and the
oracle, and bounded waits for what it does (the functional and process TUI tests share them)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from sglaunch.facts.gpu import probe_gpus
from sglaunch.facts.model import load_model_facts
from sglaunch.flags.schema import bundled_schema
from sglaunch.tui.app import SglaunchApp
from sglaunch.tui.collaborators import Collaborators
from sglaunch.tui.css_cache import CssRulesCache
from tests.fakes.nvml import FakeNvml, NVMLError_LibraryNotFound
from tests.fakes.oracle import FakeOracle


def make_app(
    *,
    oracle: FakeOracle | None = None,
    nvml: FakeNvml | None = None,
    model: str | None = "example:minicpm-sala",
    gpu_spec: str | None = None,
    argv: list[str] | None = None,
    debounce: float = 0.05,
    flag_facts: Callable[[str | None], object] | None = None,
    server_factory: object | None = None,
    profile: str | None = None,
    profile_dir: object | None = None,
    export_dir: object | None = None,
    on_first_frame: Callable[[], None] | None = None,
    css_rules: CssRulesCache | None = None,
) -> SglaunchApp:
    nvml = nvml or FakeNvml(
        [], init_error=NVMLError_LibraryNotFound("NVML Shared Library Not Found")
    )
    collab = Collaborators(
        gpu_probe=lambda: probe_gpus(nvml=nvml, env={}),
        model_loader=load_model_facts,
        oracle=oracle,
        flag_facts=flag_facts,  # type: ignore[arg-type]
        server_factory=server_factory,
        profile_dir=profile_dir,
        export_dir=export_dir,
        css_rules=css_rules,
    )
    app = SglaunchApp(
        schema=bundled_schema(),
        collaborators=collab,
        model=model,
        gpu_spec=gpu_spec,
        argv=argv,
        debounce=debounce,
        profile=profile,
        on_first_frame=on_first_frame,
    )
    _record_toasts(app)
    return app


def child_report(code: str) -> Any:
    """Run `code` (which starts an app headless) in a fresh interpreter, as `sglaunch` starts:
    what its last line of output says, as JSON."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _record_toasts(app: SglaunchApp) -> None:
    # Textual drops a toast once its timeout passes: on a loaded machine a test could read
    # the list after that and see nothing, so every toast is kept here as well
    said: list[str] = []
    shown = app.notify

    def notify(message: str, *args: object, **kwargs: object) -> None:
        said.append(message)
        shown(message, *args, **kwargs)  # type: ignore[arg-type]

    app.notify = notify  # type: ignore[method-assign]
    app.toasts_said = said  # type: ignore[attr-defined]


def told(app: SglaunchApp) -> list[str]:
    """Every toast the app showed, including those whose time has passed."""
    return list(app.toasts_said)  # type: ignore[attr-defined]


def plain(widget: object) -> str:
    """The text a Static-like widget shows (Rich renderables rendered without colour)."""
    from rich.console import Console

    content = getattr(widget, "content", widget)
    console = Console(width=200, record=True, color_system=None, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(content)
    return console.export_text()


# waits are bounded by the wall clock, not by a count of pauses: on a loaded CI machine a
# pause lasts longer than asked, and a settle that gives up early makes a later line flaky
PATIENCE_S = 60.0


async def wait_until(pilot, ready: Callable[[], bool], step: float = 0.01) -> bool:  # type: ignore[no-untyped-def]
    """Pause until `ready()` or PATIENCE_S pass; whether it became ready."""
    deadline = time.monotonic() + PATIENCE_S
    while not ready():
        if time.monotonic() > deadline:
            return False
        await pilot.pause(step)
    return True


async def workers_done(app: SglaunchApp) -> None:
    """Every worker ended. One cancelled by a newer one of its exclusive group (the model
    read again for another release) is not a failure: its successor is waited for."""
    from textual.worker import WorkerCancelled

    deadline = time.monotonic() + PATIENCE_S
    while True:
        try:
            await app.workers.wait_for_complete()
            return
        except WorkerCancelled:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.01)  # the event loop takes the cancelled one off the list


async def settle_app(app: SglaunchApp, pilot) -> None:  # type: ignore[no-untyped-def]
    """Workers done, and sglang's (fake) verdict in whenever it can be asked."""
    # the GPU probe and the model load start after the first frame: on a loaded machine
    # that frame may not be painted yet, and then there is no worker to wait for
    await wait_until(pilot, lambda: app.first_frame_at is not None)
    await workers_done(app)
    deadline = time.monotonic() + PATIENCE_S
    while app.session.model_pending and time.monotonic() < deadline:
        await pilot.pause(0.01)
        await workers_done(app)
    await pilot.pause()

    def verdict_in() -> bool:
        waiting = app.tiers.waits_for(app.session)
        if app.tiers.oracle is None or waiting is not None or app.verdict.answered:
            return True
        return app.tiers.reply_for(app.session) is not None  # a fault: answered, no verdict

    deadline = time.monotonic() + PATIENCE_S
    while not verdict_in() and time.monotonic() < deadline:
        await pilot.pause(0.02)
        await workers_done(app)
    await pilot.pause()
