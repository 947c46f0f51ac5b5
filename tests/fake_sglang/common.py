"""Constants, environment knobs and the line-at-a-time logger of the stand-in server."""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time
from pathlib import Path

VERSION = "0.5.23"
SCHEMA_PATH = (
    Path(__file__).resolve().parents[2] / "sglaunch" / "flags" / "data" / "schema-0.5.23.json"
)
# the children run the same script as the main process
ENTRY = Path(__file__).resolve().parents[1] / "fake_sglang_server.py"
SITE = "/usr/local/lib/python3.11/dist-packages/sglang"
ROLE_FLAG = "--_fake-role="

SCENARIOS = (
    "ok",
    "fatal_scheduler",
    "oom_no_mem",
    "oom_kv_weights",
    "oom_cuda_graph",
    "scheduler_sigkill",
    "warmup_fail",
    "port_in_use",
    "runtime_crash",
    "health_timeout",
    "hang_loading",
    "argparse_error",
)

# The default mem_fraction_static sglang resolves on an 80 GB Hopper for a small model.
DEFAULT_MEM_FRACTION = 0.835
TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
E2E_BUCKETS = (*TTFT_BUCKETS, 600, 1200, 1800, 2400)
ITL_BUCKETS = (
    0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060,
    0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000,
)  # fmt: skip
QUEUE_BUCKETS = (
    0.0, 0.001, 0.005, 0.010, 0.050, 0.100, 0.200, 0.500, 1, 2, 3, 4, 5, 10, 15, 20, 30, 40,
    50, 60, 70, 80, 90, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1200, 1400, 1600,
    1800, 2000, 2500, 3000,
)  # fmt: skip
GRAPH_PHASES = (
    "prefill",
    "decode",
    "target_verify",
    "draft_prefill",
    "draft_decode",
    "draft_extend",
)
LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40, "critical": 50}
STATUS_TEXT = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


# --- environment --------------------------------------------------------------------


def _env_float(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def _env_bool(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "y")


SCALE = max(_env_float("FAKE_SGLANG_TIME_SCALE", 0.05), 0.0)
SCENARIO = os.environ.get("FAKE_SGLANG_SCENARIO", "ok") or "ok"
LOG_MS = _env_bool("SGLANG_LOG_MS")
FORWARD_ITERS = _env_bool("SGLANG_LOG_FORWARD_ITERS")


def scaled(seconds: float) -> float:
    return seconds * SCALE


# --- output: one os.write per line, so lines from several processes never interleave ----

_write_lock = threading.Lock()


def _write(fd: int, text: str) -> None:
    data = text.encode("utf-8", "replace")
    with _write_lock:
        while data:
            try:
                n = os.write(fd, data)
            except BrokenPipeError:
                return
            except InterruptedError:
                continue
            data = data[n:]


def _stamp(with_ms: bool) -> str:
    now = time.time()
    text = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(now))
    if with_ms:
        text += f".{int(now * 1000) % 1000:03d}"
    return text


class Logger:
    """sglang's log format: `[ts{.ms}{rank prefix}] message` on stderr."""

    def __init__(self, level: str = "info", prefix: str = "") -> None:
        self.threshold = LEVELS.get(level.lower(), 20)
        self.prefix = prefix

    def log(self, msg: str, level: int = 20) -> None:
        if level >= self.threshold:
            _write(2, f"[{_stamp(LOG_MS)}{self.prefix}] {msg}\n")

    def info(self, msg: str) -> None:
        self.log(msg, 20)

    def warning(self, msg: str) -> None:
        self.log(msg, 30)

    def error(self, msg: str) -> None:
        self.log(msg, 40)

    def uvicorn(self, msg: str, level: str = "INFO", fd: int = 2) -> None:
        # uvicorn's own formatter: never milliseconds, never rank tags.
        if LEVELS[level.lower()] >= self.threshold:
            _write(fd, f"[{_stamp(False)}] {(level + ':').ljust(9)} {msg}\n")


def _set_pdeathsig(name: bytes) -> None:
    """What sglang's kill_itself_when_parent_died does, plus the short process name."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        libc.prctl(15, name)  # PR_SET_NAME (comm holds 15 bytes)
    except OSError:
        pass


def _fake_traceback(frames: list[tuple[str, int, str, str]], last: str) -> str:
    lines = ["Traceback (most recent call last):"]
    for path, line, func, code in frames:
        lines.append(f'  File "{SITE}/{path}", line {line}, in {func}')
        lines.append(f"    {code}")
    lines.append(last)
    return "\n".join(lines)
