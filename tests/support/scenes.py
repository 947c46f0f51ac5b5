"""The key screens, set up once: the snapshot tests and scripts/make_screenshots.py share them."""

from __future__ import annotations

from textual.widgets import OptionList, TextArea

from sglaunch.tui.app import SglaunchApp

# a DeepSeek-style line on the MiniCPM SALA example: the error everyone meets first
DP_LINE = ["--tp", "4", "--enable-dp-attention", "--dp-size", "4"]
PASTED = (
    "python3 -m sglang.launch_server --model-path openbmb/MiniCPM4-8B \\\n"
    "    --tp 4 --enable-dp-attention --dp-size 4 --trust-remote-code"
)


async def settle(pilot) -> None:  # type: ignore[no-untyped-def]
    """GPUs probed, model loaded, sglang's (fake) verdict in."""
    from tests.support.tui import settle_app

    app: SglaunchApp = pilot.app
    await pilot.pause(0.2)
    await settle_app(app, pilot)


async def open_card(pilot) -> None:  # type: ignore[no-untyped-def]
    await settle(pilot)
    app: SglaunchApp = pilot.app
    app.open_card(next(f for f in app.last_findings if f.code == "minicpm-dp-attention"))
    await pilot.pause()


async def paste(pilot) -> None:  # type: ignore[no-untyped-def]
    await settle(pilot)
    await pilot.press("ctrl+k")
    await pilot.pause()
    area = pilot.app.screen.query_one(TextArea)
    area.cursor_blink = False  # a blink caught mid-way made the snapshot flaky under load
    area.text = PASTED
    await pilot.pause()


async def focus_findings(pilot) -> None:  # type: ignore[no-untyped-def]
    await settle(pilot)
    pilot.app.screen.query_one("#finding-list", OptionList).focus()
    await pilot.pause()


# --- a monitor with a fixed story, for snapshots: no process, no clock ----------------

SNAP_LOG = [
    "[2026-11-01 12:00:00] server_args={'model_path': 'example:llama-3.1-8b', 'tp_size': 1, 'mem_fraction_static': 0.83}",
    "[2026-11-01 12:00:01] Init parallel begin.",
    "[2026-11-01 12:00:02] Load weight begin. avail mem=78.50 GB",
    "Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:08<00:00, 2.00s/it]",
    "[2026-11-01 12:00:10] Load weight end. elapsed=8.00 s, type=LlamaForCausalLM, avail mem=63.40 GB, mem usage=15.10 GB.",
    "[2026-11-01 12:00:11] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 431552, K size: 26.34 GB, V size: 26.34 GB",
    "[2026-11-01 12:00:11] Memory pool end. avail mem=9.80 GB",
    "[2026-11-01 12:00:12] Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, avail mem=9.60 GB",
    "[2026-11-01 12:00:18] Capture target decode CUDA graph end. bs=[1, 2, 4, 8, 16, 32, 64, 128, 256], elapsed=6.00 s, mem usage=0.80 GB, avail mem=8.80 GB.",
    "[2026-11-01 12:00:18] max_total_num_tokens=431552, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=131072, available_gpu_mem=8.80 GB",
    "[2026-11-01 12:00:19] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)",
    "[2026-11-01 12:00:20] The server is fired up and ready to roll!",
]


class FrozenMonitor:
    """The monitor's reading side, over a transcript replayed at fixed times."""

    def __init__(self, spec: object) -> None:
        from sglaunch.runtime.load import Latency, LoadStats
        from sglaunch.runtime.logparse import parse_line
        from sglaunch.runtime.startup import StartupTracker
        from sglaunch.runtime.state import GpuSample

        self.spec = spec
        tracker = StartupTracker({"enable_metrics": True})
        self.events = tracker.spawned(
            4242, "/runs/20261101-120000-llama", "http://127.0.0.1:30000", ("python",), 1000.0
        )
        for i, line in enumerate(SNAP_LOG):
            ev = parse_line(line)
            if ev is not None:
                self.events += tracker.log(ev, line, 1000.0 + i).events
        samples = tuple(
            GpuSample(i, "NVIDIA H100 80GB HBM3", 70 << 30, 80 << 30, 35) for i in range(8)
        )
        self.events += tracker.gpus(samples, 1013.0)
        lat = Latency(0.041, 0.09, 0.16, 120, 60.0)
        load = LoadStats(source="metrics", at=1014.0, running=12, queued=3, token_usage=0.31,
                         gen_throughput=2450.0, cache_hit_rate=0.62, ttft=lat, itl=Latency(0.011, 0.014, 0.02, 900, 60.0))  # fmt: skip
        self.events += tracker.load(load)
        self.state = tracker.state
        self.subscribers: list[object] = []

    def subscribe(self, callback):  # type: ignore[no-untyped-def]
        self.subscribers.append(callback)
        return lambda: None

    def start(self, *, detach: bool = False) -> None:
        for ev in self.events:
            for cb in self.subscribers:
                cb(ev)  # type: ignore[operator]

    def snapshot(self):  # type: ignore[no-untyped-def]
        return self.state.copy()

    def lines_since(self, seq: int) -> tuple[int, list[str]]:
        return len(SNAP_LOG), SNAP_LOG[seq:]

    def log_tail(self, n: int = 200) -> list[str]:
        return SNAP_LOG[-n:]

    def stop(self, grace: float | None = None, *, wait: bool = True) -> None:
        return None


async def monitor_ready(pilot) -> None:  # type: ignore[no-untyped-def]
    from sglaunch.tui.screens.dialogs import ConfirmScreen

    await settle(pilot)
    await pilot.press("ctrl+l")
    await pilot.pause()
    if isinstance(pilot.app.screen, ConfirmScreen):  # planning mode asks first
        await pilot.press("y")
    await pilot.pause(0.3)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause(0.5)


async def profiles_picker(pilot) -> None:  # type: ignore[no-untyped-def]
    await settle(pilot)
    await pilot.press("f2")
    await pilot.pause()


async def gpu_dialog(pilot) -> None:  # type: ignore[no-untyped-def]
    await settle(pilot)
    await pilot.press("ctrl+g")
    await pilot.pause()


async def resolved_view(pilot) -> None:  # type: ignore[no-untyped-def]
    await settle(pilot)
    await pilot.press("ctrl+r")
    await pilot.pause()


def saved_profiles(root: object) -> None:
    """Three profiles with fixed times, for the picker's snapshot."""
    import os
    from pathlib import Path

    from sglaunch.profiles import Profile, ProfileStore

    store = ProfileStore(Path(str(root)))
    for name, model, flags in (
        ("llama-tp4", "example:llama-3.1-8b", {"tp_size": 4}),
        ("sala-h200", "example:minicpm-sala", {"tp_size": 2}),
        ("v46-b200", "example:minicpm-v-4.6", {}),
    ):
        store.save(Profile(name=name, model=model, flags=flags))
        os.utime(store.path(name), (1793000000, 1793000000))


from tests.fakes.oracle import EXAMPLES_SHOWN_AT  # noqa: E402


def shown_model_path(source: str, env: object = None) -> str:
    """A bundled example's folder as the screens show it, wherever the checkout is.

    Snapshots and screenshots must not depend on where the repository was cloned: the
    launch pane shows the real folder, so the scenes pin where it seems to be.
    """
    if source.startswith("example:"):
        return f"{EXAMPLES_SHOWN_AT}/{source.removeprefix('example:')}"
    return source


def pin_paths(setattr: object) -> None:
    """Apply `shown_model_path` with `setattr(target, name, value)` (pytest's monkeypatch)."""
    import sglaunch.session

    setattr(sglaunch.session, "model_path_for_sglang", shown_model_path)  # type: ignore[operator]
