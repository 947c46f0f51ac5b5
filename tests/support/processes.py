"""Helpers for the runtime tests: the stand-in server, free ports, process checks."""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psutil

from sglaunch.runtime import EventKind, LaunchSpec, Monitor, MonitorEvent

ROOT = Path(__file__).resolve().parents[2]
FAKE = ROOT / "tests" / "fake_sglang_server.py"
TIME_SCALE = "0.02"
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fake_env(scenario: str = "ok", **extra: str) -> dict[str, str]:
    env = {"FAKE_SGLANG_SCENARIO": scenario, "FAKE_SGLANG_TIME_SCALE": TIME_SCALE}
    env.update(extra)
    return env


def fake_spec(
    *flags: str,
    port: int | None = None,
    scenario: str = "ok",
    env: dict[str, str] | None = None,
    **spec_kwargs: Any,
) -> LaunchSpec:
    port = port or free_tcp_port()
    argv = ("--model-path", MODEL, "--port", str(port), *flags)
    return LaunchSpec(
        argv=argv,
        command_prefix=(sys.executable, str(FAKE)),
        env={**fake_env(scenario), **(env or {})},
        profile=f"test-{scenario}",
        **spec_kwargs,
    )


def fast_monitor(spec: LaunchSpec, **kwargs: Any) -> Monitor:
    options: dict[str, Any] = {
        "probe_interval": 0.1,
        "metrics_interval": 0.2,
        "health_interval": None,
        "gpu_interval": None,
        "stop_grace": 5.0,
        "startup_timeout": 30.0,
    }
    options.update(kwargs)
    return Monitor(spec, **options)


def alive(pid: int) -> bool:
    try:
        proc = psutil.Process(pid)
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_gone(pids: Iterable[int], timeout: float = 30.0) -> set[int]:
    """The pids still alive after `timeout` (empty when all are gone)."""
    pids = set(pids)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = {p for p in pids if alive(p)}
        if not left:
            return set()
        time.sleep(0.05)
    return {p for p in pids if alive(p)}


def tree_of(pid: int) -> set[int]:
    try:
        main = psutil.Process(pid)
        return {pid, *(c.pid for c in main.children(recursive=True))}
    except psutil.NoSuchProcess:
        return set()


def wait_tree(pid: int, size: int, timeout: float = 30.0) -> set[int]:
    """The process tree under `pid` once it has `size` members (main, schedulers, detokenizer)."""
    deadline = time.monotonic() + timeout
    tree: set[int] = set()
    while time.monotonic() < deadline:
        tree = tree_of(pid)
        if len(tree) >= size:
            return tree
        time.sleep(0.02)
    return tree


def wait_for(predicate: Any, timeout: float = 30.0, interval: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())


class FakeNvml:
    """Just the NVML calls `probe_gpus` makes, for one 80 GB H100."""

    def __init__(self, used: int = 70 << 30, total: int = 80 << 30) -> None:
        self.used = used
        self.total = total

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        pass

    def nvmlSystemGetDriverVersion(self) -> str:
        return "570.86.15"

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return 12080

    def nvmlDeviceGetCount(self) -> int:
        return 1

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return f"GPU-{h:08d}-aaaa-bbbb-cccc-000000000000"

    def nvmlDeviceGetName(self, h: int) -> str:
        return "NVIDIA H100 80GB HBM3"

    def nvmlDeviceGetMemoryInfo(self, h: int) -> SimpleNamespace:
        return SimpleNamespace(total=self.total, used=self.used, free=self.total - self.used)

    def nvmlDeviceGetCudaComputeCapability(self, h: int) -> tuple[int, int]:
        return (9, 0)

    def nvmlDeviceGetUtilizationRates(self, h: int) -> SimpleNamespace:
        return SimpleNamespace(gpu=87, memory=40)

    def __getattr__(self, name: str) -> Any:
        # temperature, power, PCI info...: not needed, and probe_gpus tolerates errors
        raise AttributeError(name)


class Recorder:
    """Every event a monitor emits, in order."""

    def __init__(self, monitor: Monitor) -> None:
        self.events: list[MonitorEvent] = []
        self._lock = threading.Lock()
        monitor.subscribe(self._add)

    def _add(self, event: MonitorEvent) -> None:
        with self._lock:
            self.events.append(event)

    def kinds(self) -> list[EventKind]:
        with self._lock:
            return [e.kind for e in self.events]

    def of(self, kind: EventKind) -> list[MonitorEvent]:
        with self._lock:
            return [e for e in self.events if e.kind is kind]


class TreeSampler:
    """Collects every pid of a process tree while it runs, to check each is gone later."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.pids: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        # ends with the tree's root too: a test that never calls stop() must not leave a
        # thread polling /proc at 100 Hz for the rest of the session (five such threads
        # slowed every later test of a full run)
        while not self._stop.is_set():
            now = tree_of(self.pid)
            if not now:
                return
            self.pids |= now
            time.sleep(0.01)

    def stop(self) -> set[int]:
        self._stop.set()
        self._thread.join()
        return self.pids


def launch(
    made: list[Monitor], spec: LaunchSpec, **kwargs: Any
) -> tuple[Monitor, Recorder, TreeSampler]:
    monitor = fast_monitor(spec, **kwargs)
    made.append(monitor)
    recorder = Recorder(monitor)
    monitor.start()
    assert monitor.pid is not None
    return monitor, recorder, TreeSampler(monitor.pid)
