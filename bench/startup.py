"""How fast is the TUI? Prints numbers; the README quotes them.

1. Process start to the first interactive frame, headless: a fresh interpreter
   imports sglaunch, builds the app with its real collaborators (NVML probe,
   model loader; the oracle starts in a worker and is not waited for) and
   renders the main screen with every flag. Budget < 0.5 s; on a noisy machine
   the ratio to the smallest Textual app (runs taken in turns) says more, and
   the ratio of the two processes' CPU to their first frame most: at most 1.5x.
2. Keystroke to finding, built-in tier: toggling a flag that makes (or clears)
   the MiniCPM DP-attention error, measured from the key press until the
   findings panel shows the new verdict. Budget < 16 ms (one frame).
3. The process never imports torch or sglang; transformers only in a worker
   (checked and printed).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time

CHILD = r"""
import json, sys, time
import sglaunch.cli  # as the `sglaunch` command starts: its package installs the dataclass cache
from sglaunch.tui.launch import build_app, pause_collection

resume = pause_collection()  # as `sglaunch` (run_tui) starts the app
app = build_app(gpu=None, with_oracle=True, on_first_frame=resume)

async def ready(pilot):
    while app.first_frame_at is None:  # set after the first frame that shows the editor
        await pilot.pause(0.01)
    cpu = app.first_frame_cpu  # the process's CPU to that frame: what load does not inflate much
    table = app.screen.query_one("#flag-table")
    assert table.row_count > 500
    await app.workers.wait_for_complete()
    await pilot.pause()
    heavy = sorted(m for m in ("torch", "sglang", "transformers") if m in sys.modules)
    print(json.dumps({"ready": app.first_frame_at, "cpu": cpu, "settled": time.time(), "heavy": heavy}), flush=True)
    app.exit()

app.run(headless=True, size=(160, 50), auto_pilot=ready)
"""

# the yardstick on a noisy machine: the smallest Textual app to its first frame, same way
BASELINE = r"""
import json, time
from textual.app import App
from textual.widgets import Static

class Hello(App):
    def compose(self):
        yield Static("hello")

async def ready(pilot):
    await pilot.pause()
    print(json.dumps({"ready": time.time(), "cpu": time.process_time()}), flush=True)
    pilot.app.exit()

Hello().run(headless=True, size=(160, 50), auto_pilot=ready)
"""

# an installed sglaunch has its .pyc: a shell's PYTHONDONTWRITEBYTECODE would time compiling
BYTECODE_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

RUNS = 7
TOGGLES = 40


def one_run(code: str) -> tuple[float, dict]:
    """(when it started, what it printed) for a fresh interpreter running `code`."""
    t0 = time.time()
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env=BYTECODE_ENV,
    )
    line = next(x for x in done.stdout.splitlines() if x.startswith("{"))
    return t0, json.loads(line)


def paired_runs() -> tuple[list[tuple[float, dict]], list[tuple[float, dict]]]:
    """RUNS of the TUI and of the smallest app, taken in turns so that both meet the same load,
    after one of each not counted: a start after the first has the bytecode, the dataclass
    methods and Textual's parsed CSS that the first kept (as every start of an installed
    sglaunch but its very first)."""
    one_run(CHILD)
    one_run(BASELINE)
    tui, base = [], []
    for _ in range(RUNS):
        tui.append(one_run(CHILD))
        base.append(one_run(BASELINE))
    return tui, base


async def keystrokes() -> tuple[list[float], list[float]]:
    """(key to findings updated, key to the next painted frame), in seconds."""
    from textual import _compositor

    from sglaunch.tui.widgets.findings import FindingsPanel
    from sglaunch.tui.widgets.flag_editor import FlagEditor
    from tests.support.tui import make_app

    renders: list[tuple[float, float]] = []
    original = _compositor.Compositor.render_update

    def timed(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        start = time.perf_counter()
        result = original(self, *args, **kwargs)
        renders.append((start, time.perf_counter()))
        return result

    _compositor.Compositor.render_update = timed  # the bench only: when frames are painted
    app = make_app(gpu_spec="H100x8", argv=["--tp", "2", "--dp-size", "2"])
    handled, painted = [], []
    async with app.run_test(size=(160, 50)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        editor = app.main.query_one(FlagEditor)
        editor.select("enable_dp_attention")
        panel = app.main.query_one(FindingsPanel)
        await pilot.pause(0.2)
        for _ in range(TOGGLES):
            before = any(f.code == "minicpm-dp-attention" for f in panel.findings)
            renders.clear()
            t0 = time.perf_counter()
            await pilot.press("space")
            await pilot.pause(0.05)
            after = any(f.code == "minicpm-dp-attention" for f in panel.findings)
            assert after != before, "the toggle must flip the verdict"
            handled.append(app.last_edit_done_at - t0)
            frame = next(end for start, end in renders if start >= app.last_edit_done_at)
            painted.append(frame - t0)
    _compositor.Compositor.render_update = original
    return handled, painted


def main() -> None:
    sys.path.insert(0, ".")
    tui, base = paired_runs()
    times = [data["ready"] - t0 for t0, data in tui]
    settled = [data["settled"] - t0 for t0, data in tui]
    heavy = tui[-1][1]["heavy"]
    base_times = [data["ready"] - t0 for t0, data in base]
    cpu, base_cpu = min(d["cpu"] for _, d in tui), min(d["cpu"] for _, d in base)
    median, base_median = statistics.median(times), statistics.median(base_times)
    print(
        f"process start to first interactive frame (headless, {RUNS} runs, load {os.getloadavg()[0]:.1f}): "
        f"median {median:.3f} s, min {min(times):.3f} s  (budget 0.5 s)"
    )
    print(
        f"  the smallest Textual app to its first frame, same machine, runs taken in turns: "
        f"median {base_median:.3f} s, min {min(base_times):.3f} s"
    )
    print(
        f"  -> sglaunch takes {median / base_median:.2f}x that (medians), {min(times) / min(base_times):.2f}x (mins); "
        f"its CPU to the first frame {cpu:.3f} s = {cpu / base_cpu:.2f}x the smallest app's {base_cpu:.3f} s (budget 1.5x)"
    )
    print(
        f"process start to settled (GPUs probed, model loaded, first verdict): median {statistics.median(settled):.3f} s"
    )
    print(
        f"heavy modules in the TUI process at that point: {heavy or 'none (no torch, sglang or transformers)'}"
    )
    handled, painted = asyncio.run(keystrokes())
    print(
        f"keystroke to finding shown, built-in tier ({TOGGLES} toggles): median {statistics.median(handled) * 1e3:.1f} ms, "
        f"max {max(handled) * 1e3:.1f} ms  (budget 16 ms; rules + every panel updated)"
    )
    print(
        f"keystroke to the next painted frame (headless 160x50): median {statistics.median(painted) * 1e3:.1f} ms, "
        f"max {max(painted) * 1e3:.1f} ms"
    )


if __name__ == "__main__":
    main()
