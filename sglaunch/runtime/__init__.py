"""Launch and monitor an sglang server, with no UI: the TUI and the headless CLI share it.

    spec = LaunchSpec(argv=("--model-path", "m", "--port", "30000"), profile="demo")
    monitor = Monitor(spec, startup_timeout=900)
    monitor.subscribe(print)         # MonitorEvent objects, on the monitor's threads
    monitor.start()
    monitor.wait_ready()
    monitor.snapshot()               # MonitorState
    monitor.stop()

or, for scripts: `run_headless(spec) -> ExitCode`.
"""

from sglaunch.runtime.failures import Diagnosis
from sglaunch.runtime.headless import run_headless
from sglaunch.runtime.load import Latency, LoadStats
from sglaunch.runtime.monitor import Monitor, PortInUseError
from sglaunch.runtime.process import ServerProcess
from sglaunch.runtime.spec import LaunchSpec, ServerFlags
from sglaunch.runtime.state import (
    EventKind,
    GpuSample,
    GraphCapture,
    KvCacheInfo,
    MonitorEvent,
    MonitorState,
    Phase,
    Progress,
    StartupSummary,
    Status,
    WeightsInfo,
)

__all__ = [
    "Diagnosis",
    "EventKind",
    "GpuSample",
    "GraphCapture",
    "KvCacheInfo",
    "Latency",
    "LaunchSpec",
    "LoadStats",
    "Monitor",
    "MonitorEvent",
    "MonitorState",
    "Phase",
    "PortInUseError",
    "Progress",
    "ServerFlags",
    "ServerProcess",
    "StartupSummary",
    "Status",
    "WeightsInfo",
    "run_headless",
]
