#!/usr/bin/env python3
"""A stand-in for the sglang 0.5.23 HTTP server, for tests and benchmarks, with no GPU.

Launched exactly like the real server (`python tests/fake_sglang_server.py <sglang args>`),
it follows `reference/sglang-0.5.23-runtime.md` §7 with the §7.0 corrections: the same
argument parser (built from the bundled flag schema, so unknown flags exit 2), the same
log lines on the same streams with the same timing shape, the same endpoints per phase,
the same Prometheus metrics, the same process tree (scheduler and detokenizer children
with PR_SET_PDEATHSIG, readiness over a pipe) and the same signal behaviour.

Behaviour is chosen only through environment variables, so the argv stays the real one:
FAKE_SGLANG_SCENARIO (ok, fatal_scheduler, oom_no_mem, oom_kv_weights, oom_cuda_graph,
scheduler_sigkill, warmup_fail, port_in_use, runtime_crash, health_timeout, hang_loading,
argparse_error), FAKE_SGLANG_TIME_SCALE (multiplies every sleep; default 0.05),
FAKE_SGLANG_MAX_TOTAL_TOKENS, FAKE_SGLANG_SHARDS, FAKE_SGLANG_CAPTURE_BS,
FAKE_SGLANG_LOAD_SCRIPT (JSON list of {t, running, queue, new_tokens, gen_tps, token_usage}),
FAKE_SGLANG_CRASH_AFTER, FAKE_SGLANG_ENTRY (launch_server | serve) and
FAKE_SGLANG_LOG_RATE (decode log lines per second once ready, for benchmarks). It honours
SGLANG_LOG_MS, SGLANG_HEALTH_CHECK_TIMEOUT and SGLANG_LOG_FORWARD_ITERS like sglang.

Standard library only: tests need no fastapi, uvicorn or prometheus_client.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import math
import os
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
import urllib.error
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

VERSION = "0.5.23"
SCHEMA_PATH = (
    Path(__file__).resolve().parent.parent / "sglaunch" / "flags" / "data" / "schema-0.5.23.json"
)
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


# --- the argument parser, from the bundled schema --------------------------------------


def _human_int(value: str) -> int:
    value = value.strip()
    units = {"k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    for suffix in sorted(units, key=len, reverse=True):
        if value.endswith(suffix) and value[: -len(suffix)].replace(".", "", 1).isdigit():
            return int(float(value[: -len(suffix)]) * units[suffix])
    return int(value)


def _json_value(value: str) -> Any:
    return json.loads(value)


def _nullable_str(value: str) -> str | None:
    return None if not value or value == "None" else value


_TYPES: dict[str, Any] = {
    "int": int,
    "float": float,
    "human_int": _human_int,
    "json": _json_value,
    "json_list": _json_value,
    "json_object": _json_value,
    "nullable_str": _nullable_str,
}


def build_parser() -> argparse.ArgumentParser:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    parser = argparse.ArgumentParser(prog=schema.get("prog", "sglang serve"))
    for flag in schema["flags"]:
        options = list(flag["options"])
        kwargs: dict[str, Any] = {"dest": flag["dest"], "default": flag.get("default")}
        action = flag.get("action", "store")
        if action == "store_true":
            kwargs["action"] = "store_true"
        elif action == "store_false":
            kwargs["action"] = "store_false"
        elif action == "boolean_optional":
            kwargs["action"] = argparse.BooleanOptionalAction
            options = [o for o in options if not o.startswith("--no-")]
        else:
            if flag.get("type") in _TYPES:
                kwargs["type"] = _TYPES[flag["type"]]
            if flag.get("choices") is not None:
                kwargs["choices"] = flag["choices"]
            if flag.get("nargs") is not None:
                kwargs["nargs"] = flag["nargs"]
            if flag.get("nargs") == "?":
                kwargs["const"] = flag.get("const")
        if flag.get("required"):
            kwargs["required"] = True
        parser.add_argument(*options, **kwargs)
    return parser


def _config_args(path: str) -> list[str]:
    """sglang's --config merge for the flat YAML subset launch configs use."""
    out: list[str] = []
    text = Path(path).read_text(encoding="utf-8")
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip() or ":" not in line:
            continue
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip().strip("'\"")
        if value.lower() == "true":
            out.append(f"--{key}")
        elif value.lower() == "false":
            continue
        elif value.startswith("[") and value.endswith("]"):
            out.append(f"--{key}")
            out += [v.strip().strip("'\"") for v in value[1:-1].split(",") if v.strip()]
        else:
            out += [f"--{key}", value]
    return out


def parse_server_args(argv: list[str]) -> argparse.Namespace:
    parser = build_parser()
    if SCENARIO == "argparse_error":
        # Reproduce the real message: the model path is what people forget.
        cut: list[str] = []
        skip = False
        for tok in argv:
            if skip:
                skip = False
                continue
            head = tok.split("=", 1)[0]
            if head in ("--model-path", "--model"):
                skip = "=" not in tok
                continue
            cut.append(tok)
        argv = cut
    if "--config" in argv:
        i = argv.index("--config")
        if i + 1 < len(argv):
            try:
                argv = _config_args(argv[i + 1]) + argv
            except OSError as exc:
                parser.error(f"cannot read --config {argv[i + 1]}: {exc}")
    return parser.parse_args(argv)


# --- child processes ----------------------------------------------------------------------


def _child_main(argv: list[str]) -> int:
    cfg = json.loads(argv[2].split("=", 1)[1])
    role = argv[0][len(ROLE_FLAG) :]
    rank = int(argv[1].split("=", 1)[1])
    _set_pdeathsig(b"sglang::schedul" if role == "scheduler" else b"sglang::detoken")
    if os.getppid() != cfg["ppid"]:
        return 1  # the parent died before PR_SET_PDEATHSIG took effect
    if role == "scheduler":
        return Scheduler(cfg, rank).run()
    return Detokenizer(cfg).run()


class Commands:
    """JSON lines from the main process (sglang's ZMQ sockets, in miniature)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buf = b""

    def read(self, timeout: float | None) -> list[dict[str, Any]] | None:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return []
        chunk = os.read(self.fd, 65536)
        if not chunk:
            return None
        self.buf += chunk
        *lines, self.buf = self.buf.split(b"\n")
        return [json.loads(line) for line in lines if line.strip()]


class Detokenizer:
    def __init__(self, cfg: dict[str, Any]) -> None:
        self.commands = Commands(cfg["cmd_fd"])

    def run(self) -> int:
        while True:
            batch = self.commands.read(None)
            if batch is None or any(c.get("op") == "shutdown" for c in batch):
                return 0


class Scheduler:
    def __init__(self, cfg: dict[str, Any], rank: int) -> None:
        self.cfg = cfg
        self.rank = rank
        self.t0 = cfg["t0"]
        self.tp = cfg["tp_size"]
        self.log = Logger(cfg["log_level"], f" TP{rank}" if self.tp > 1 else "")
        self.commands = Commands(cfg["cmd_fd"])
        self.ready_fd = cfg["ready_fd"]
        self.rank0 = rank == 0
        self.stop = threading.Event()

    def at(self, t: float) -> None:
        delay = self.t0 + scaled(t) - time.monotonic()
        if delay > 0:
            time.sleep(delay)

    def bar(self, text: str) -> None:
        if self.rank0:
            _write(2, text)

    def fail(self, frames: list[tuple[str, int, str, str]], last: str) -> int:
        head = [
            ("srt/managers/scheduler.py", 6362, "run_scheduler_process",
             "scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, attn_cp_rank, moe_dp_rank, dp_rank)"),
            ("srt/managers/scheduler.py", 418, "__init__", "self.init_model_worker()"),
            ("srt/managers/scheduler.py", 640, "init_model_worker", "self.tp_worker = TpModelWorker(**worker_kwargs)"),
            ("srt/managers/tp_worker.py", 263, "__init__", "self._model_runner = ModelRunner("),
        ]  # fmt: skip
        self.log.error("Scheduler hit an exception: " + _fake_traceback(head + frames, last))
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.cfg["ppid"], signal.SIGQUIT)
        return 0

    def run(self) -> int:
        cfg, log = self.cfg, self.log
        mf = cfg["mem_fraction_static"]
        self.at(1.0)
        log.info("Init parallel begin.")
        self.at(1.5)
        log.info("Init parallel ends. elapsed=0.50 s")
        log.info("Memory baseline taken. mem usage=0.45 GB")
        self.at(2.0)
        log.info("Load weight begin. avail mem=78.50 GB")
        if SCENARIO == "fatal_scheduler":
            return self.fail(
                [("srt/model_executor/model_runner.py", 1291, "load_model",
                  "self.model = self.loader.load_model(")],
                "RuntimeError: Error while deserializing header: MetadataIncompleteBuffer "
                "(model-00002-of-00004.safetensors is truncated)",
            )  # fmt: skip
        if SCENARIO == "hang_loading":
            while True:
                time.sleep(3600)
        shards = max(int(_env_float("FAKE_SGLANG_SHARDS", 4)), 1)
        per = 8.0 / shards
        desc = "Loading safetensors checkpoint shards"
        self.bar(f"\r{desc}:   0% Completed | 0/{shards} [00:00<?, ?it/s]")
        for i in range(1, shards + 1):
            self.at(2.0 + per * i)
            left = per * (shards - i)
            self.bar(
                f"\r{desc}: {100 * i // shards:3d}% Completed | {i}/{shards} "
                f"[00:{int(per * i):02d}<00:{int(left):02d}, {per:5.2f}s/it]"
            )
            if SCENARIO == "scheduler_sigkill" and self.rank0 and i == 1:
                os.kill(os.getpid(), signal.SIGKILL)
        self.bar("\n")
        self.at(10.0)
        log.info(
            "Load weight end. elapsed=8.00 s, type=LlamaForCausalLM, avail mem=63.40 GB, mem usage=15.10 GB."
        )
        if SCENARIO == "oom_no_mem":
            return self.fail(
                [("srt/model_executor/model_runner.py", 1402, "init_memory_pool",
                  "self.max_total_num_tokens = configure_pools(self)"),
                 ("srt/model_executor/pool_configurator.py", 94, "configure", "raise RuntimeError(")],
                "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
                f"Current value: mem_fraction_static={mf}",
            )  # fmt: skip
        if SCENARIO == "oom_kv_weights":
            viable = min(mf + 0.0114, 0.99)
            return self.fail(
                [("srt/mem_cache/kv_cache_configurator.py", 3043, "_profile_available_bytes",
                  "raise ValueError(")],
                "ValueError: Loaded weights leave no GPU memory for the KV cache under "
                f"--mem-fraction-static={mf}. Raise --mem-fraction-static above {viable + 0.0006:.3f} "
                f"(minimum viable = 1 - available/pre = {viable:.4f}). "
                "If using speculative decoding, draft weights are now counted.",
            )  # fmt: skip
        tokens = cfg["max_total_tokens"]
        self.at(11.0)
        log.info(
            f"KV Cache is allocated. dtype: torch.bfloat16, #tokens: {tokens}, K size: 26.70 GB, V size: 26.70 GB"
        )
        log.info("Memory pool end. avail mem=9.80 GB")
        if cfg["prefill_graph"]:
            nums = [512, 1024, 2048, 4096, 8192]
            self.at(11.2)
            log.info(
                f"Capture target prefill CUDA graph begin. backend=breakable, num_tokens={nums}, avail mem=9.70 GB"
            )
            for i, n in enumerate(reversed(nums)):
                self.at(11.2 + 0.1 * (i + 1))
                self.bar(
                    f"\rCapturing prefill shape (num_tokens={n} avail_mem={9.70 - 0.01 * i:.2f} GB): "
                    f"{100 * i // len(nums):3d}%|          | {i}/{len(nums)} [00:00<00:00, 10.00it/s]"
                )
            self.bar("\n")
            log.info(
                "Capture target prefill CUDA graph end. elapsed=0.60 s, mem usage=0.05 GB, avail mem=9.65 GB."
            )
        else:
            log.info(
                "Disable prefill CUDA graph because cuda_graph_config resolved prefill.backend='disabled' "
                "(e.g. via --cuda-graph-backend-prefill=disabled or auto-disable rules)."
            )
        bs_list = cfg["capture_bs"]
        if cfg["decode_graph"]:
            self.at(12.0)
            log.info(
                "Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, avail mem=9.60 GB"
            )
            step = 6.0 / max(len(bs_list), 1)
            total = len(bs_list)
            for i, bs in enumerate(reversed(bs_list)):
                self.at(12.0 + step * i)
                pct = 100 * i // total
                filled = "█" * (i * 10 // total)
                self.bar(
                    f"\rCapturing batches (bs={bs} avail_mem={9.55 - 0.1 * i:.2f} GB): {pct:3d}%|"
                    f"{filled.ljust(10)}| {i}/{total} [00:{int(step * i):02d}<00:{int(step * (total - i)):02d}, "
                    f"{step:5.2f}s/it]"
                )
                if SCENARIO == "oom_cuda_graph" and i == 1:
                    self.bar("\n")
                    return self.fail(
                        [("srt/model_executor/model_runner.py", 1650, "init_device_graphs",
                          "self.graph_runner = setup_cuda_graphs(self)"),
                         ("srt/model_executor/runner/decode_cuda_graph_runner.py", 598, "__init__",
                          "raise Exception(")],
                        "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 2.00 GiB. "
                        "GPU 0 has a total capacity of 79.19 GiB of which 1.06 GiB is free. Including non-PyTorch "
                        "memory, this process has 78.12 GiB memory in use. Of the allocated memory 75.50 GiB is "
                        "allocated by PyTorch, and 1.12 GiB is reserved by PyTorch but unallocated. If reserved but "
                        "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to "
                        "avoid fragmentation.  See documentation for Memory Management  "
                        "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n"
                        "Possible solutions:\n"
                        "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
                        "2. set --cuda-graph-max-bs-decode to a smaller value (e.g., 16)\n"
                        "3. disable decode CUDA graph by --cuda-graph-backend-decode=disabled. "
                        "(Not recommended. Huge performance loss)\n"
                        "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose ",
                    )  # fmt: skip
            self.at(18.0)
            self.bar(
                f"\rCapturing batches (bs={bs_list[0]} avail_mem=8.85 GB): 100%|██████████| {total}/{total} "
                f"[00:06<00:00, {step:5.2f}s/it]\n"
            )
            log.info(
                f"Capture target decode CUDA graph end. bs={bs_list}, elapsed=6.00 s, mem usage=0.80 GB, avail mem=8.80 GB."
            )
        self.at(18.2)
        if self.rank0:
            log.info(
                f"max_total_num_tokens={tokens}, chunked_prefill_size={cfg['chunked_prefill_size']}, "
                f"max_prefill_tokens=16384, max_running_requests={cfg['max_running_requests']}, "
                f"context_len={cfg['context_len']}, available_gpu_mem=8.80 GB"
            )
        ready = {
            "status": "ready",
            "max_total_num_tokens": tokens,
            "max_req_input_len": cfg["context_len"] - 5,
        }
        _write(self.ready_fd, json.dumps(ready) + "\n")
        os.close(self.ready_fd)
        return self.serve()

    def serve(self) -> int:
        while True:
            batch = self.commands.read(None)
            if batch is None:
                return 0
            for cmd in batch:
                op = cmd.get("op")
                if op == "log":
                    self.log.log(cmd["msg"], cmd.get("level", 20))
                elif op == "up":
                    self.on_up()
                elif op == "shutdown":
                    self.stop.set()
                    return 0

    def on_up(self) -> None:
        if SCENARIO == "runtime_crash":
            threading.Thread(target=self.crash_later, daemon=True).start()
        rate = _env_float("FAKE_SGLANG_LOG_RATE", 0.0)
        if rate > 0 and self.rank0:
            threading.Thread(target=self.flood, args=(rate,), daemon=True).start()

    def crash_later(self) -> None:
        time.sleep(scaled(_env_float("FAKE_SGLANG_CRASH_AFTER", 2.0)))
        frames = [
            ("srt/managers/scheduler.py", 6390, "run_scheduler_process", "scheduler.event_loop_overlap()"),
            ("srt/managers/scheduler.py", 1533, "event_loop_overlap", "batch_result = self.run_batch(batch)"),
            ("srt/managers/tp_worker.py", 611, "forward_batch_generation",
             "logits_output, can_run_cuda_graph = self.model_runner.forward("),
        ]  # fmt: skip
        self.log.error(
            "Scheduler hit an exception: "
            + _fake_traceback(
                frames,
                "RuntimeError: CUDA error: an illegal memory access was encountered\n"
                "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace "
                "below might be incorrect.",
            )
        )
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.cfg["ppid"], signal.SIGQUIT)
        os._exit(0)

    def flood(self, rate: float) -> None:
        # A steady stream of decode lines, written in 10 ms batches like a busy server.
        interval = 0.01
        per_tick = rate * interval
        owed = 0.0
        n = 0
        nxt = time.monotonic()
        while not self.stop.is_set():
            owed += per_tick
            lines = []
            while owed >= 1:
                owed -= 1
                n += 1
                lines.append(
                    f"[{_stamp(LOG_MS)}{self.log.prefix}] Decode batch, #running-req: {32 + n % 8}, "
                    f"#token: {40000 + n % 977}, token usage: 0.08, cuda graph: True, "
                    f"gen throughput (token/s): {2500 + n % 300}.00, #queue-req: {n % 3}\n"
                )
            if lines:
                _write(2, "".join(lines))
            nxt += interval
            time.sleep(max(nxt - time.monotonic(), 0))


# --- metrics -------------------------------------------------------------------------


def _fmt(v: float) -> str:
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    return repr(float(v))


def _labels(d: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{d[k]}"' for k in sorted(d)) + "}"


class Histogram:
    def __init__(
        self, name: str, help_text: str, buckets: tuple[float, ...], labels: dict[str, str]
    ) -> None:
        self.name, self.help, self.buckets, self.labels = name, help_text, buckets, labels
        self.counts = [0] * len(buckets)
        self.count = 0
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.count += 1
        self.sum += value
        for i, b in enumerate(self.buckets):
            if value <= b:
                self.counts[i] += 1

    def render(self) -> list[str]:
        out = [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} histogram"]
        for b, c in zip(self.buckets, self.counts, strict=True):
            lab = dict(self.labels)
            lab_text = _labels(lab)[:-1] + f',le="{float(b)}"}}'
            out.append(f"{self.name}_bucket{lab_text} {float(c)}")
        out.append(f'{self.name}_bucket{_labels(self.labels)[:-1]},le="+Inf"}} {float(self.count)}')
        out.append(f"{self.name}_count{_labels(self.labels)} {float(self.count)}")
        out.append(f"{self.name}_sum{_labels(self.labels)} {self.sum!r}")
        return out


class Metrics:
    """The Prometheus text sglang's multiprocess collector serves, for one unified engine."""

    GAUGE_HELP: ClassVar[dict[str, str]] = {
        "num_running_reqs": "The number of running requests.",
        "num_queue_reqs": "The number of requests in the waiting queue.",
        "num_grammar_queue_reqs": "The number of requests in the grammar waiting queue.",
        "gen_throughput": "The generation throughput (token/s).",
        "cache_hit_rate": "The prefix cache hit rate.",
        "decode_sum_seq_lens": "The sum of all sequence lengths in decode.",
        "token_usage": "The token usage.",
        "full_token_usage": "The token usage for full attention layers.",
        "num_used_tokens": "The number of used tokens.",
        "kv_available_tokens": "Number of free token slots in the KV cache pool.",
        "kv_evictable_tokens": "Number of evictable (radix-cached) token slots in the KV cache pool.",
        "kv_used_tokens": "Number of actively used token slots in the KV cache pool.",
        "utilization": "The utilization.",
        "fwd_occupancy": "Forward pass GPU occupancy percentage.",
        "new_token_ratio": "The new token ratio.",
        "is_cuda_graph": "Whether the batch is using CUDA graph.",
    }
    CONST_HELP: ClassVar[dict[str, str]] = {
        "max_total_num_tokens": "Maximum total number of tokens in the KV cache pool.",
        "weight_memory_usage_gb": "Memory used by model weights in GB.",
        "kv_cache_memory_usage_gb": "Memory used by the KV cache pools in GB.",
        "page_size": "KV cache page size in tokens.",
        "num_pages": "Number of KV cache pages.",
        "context_len": "Maximum context length.",
        "startup_available_gpu_memory_gb": "Available GPU memory in GB at startup.",
    }

    def __init__(self, served: str, tp_size: int, max_tokens: int, context_len: int) -> None:
        self.lock = threading.Lock()
        self.served = served
        self.tp_size = tp_size
        self.max_tokens = max_tokens
        self.context_len = context_len
        self.gauges: dict[str, float] | None = None  # per-batch, after the first prefill
        self.sched_pids: list[int] = []
        tok = {"engine_type": "unified", "is_streaming": "false", "model_name": served}
        self.counters = {
            "prompt_tokens_total": 0.0,
            "generation_tokens_total": 0.0,
            "num_requests_total": 0.0,
        }
        self.tok_labels = tok
        base = {"engine_type": "unified", "model_name": served}
        self.hists = {
            "ttft": Histogram("sglang:time_to_first_token_seconds",
                              "Histogram of time to first token in seconds.", TTFT_BUCKETS, tok),
            "itl": Histogram("sglang:inter_token_latency_seconds",
                             "Histogram of inter-token latency in seconds.", ITL_BUCKETS, base),
            "e2e": Histogram("sglang:e2e_request_latency_seconds",
                             "Histogram of End-to-end request latency in seconds", E2E_BUCKETS, tok),
            "tpot": Histogram("sglang:request_time_per_output_token_seconds",
                              "Per-request TPOT in seconds: (finished_time - first_token_time) / (completion_tokens - 1).",
                              ITL_BUCKETS, tok),
            "queue": Histogram("sglang:queue_time_seconds", "Histogram of queueing time in seconds.",
                               QUEUE_BUCKETS, self.sched_labels(0)),
        }  # fmt: skip
        self.http: dict[tuple[str, str], int] = {}
        self.responses: dict[tuple[str, str, str], int] = {}
        self.realtime = {"prefill_compute": 0.0, "prefill_cache": 0.0, "decode": 0.0}
        self.graph_passes = dict.fromkeys(
            ("decode_cuda_graph", "decode_none", "prefill_cuda_graph", "prefill_none"), 0.0
        )
        self.active: dict[tuple[str, str], int] = {}
        self.last_decode = 0.0

    def sched_labels(self, rank: int) -> dict[str, str]:
        return {
            "engine_type": "unified",
            "model_name": self.served,
            "moe_ep_rank": "0",
            "pp_rank": "0",
            "tp_rank": str(rank),
        }

    def set_batch(
        self, running: int, queue: int, used: int, gen_tps: float, hit_rate: float, graph: bool
    ) -> None:
        with self.lock:
            usage = used / self.max_tokens if self.max_tokens else 0.0
            if gen_tps > 0:
                self.last_decode = time.monotonic()
            self.graph_passes["decode_cuda_graph" if graph else "prefill_none"] += 1
            self.gauges = {
                "num_running_reqs": float(running),
                "num_queue_reqs": float(queue),
                "num_grammar_queue_reqs": 0.0,
                "gen_throughput": float(gen_tps),
                "cache_hit_rate": float(hit_rate),
                "decode_sum_seq_lens": float(used),
                "token_usage": round(usage, 2),
                "full_token_usage": usage,
                "num_used_tokens": float(used),
                "kv_available_tokens": float(self.max_tokens - used),
                "kv_evictable_tokens": 0.0,
                "kv_used_tokens": float(used),
                "utilization": 0.0,
                "fwd_occupancy": float("nan"),
                "new_token_ratio": 0.7,
                "is_cuda_graph": 1.0 if graph else 0.0,
            }

    def request(self, prompt: int, generated: int, ttft: float, itl: float, queue: float) -> None:
        with self.lock:
            self.counters["prompt_tokens_total"] += prompt
            self.counters["generation_tokens_total"] += generated
            self.counters["num_requests_total"] += 1
            self.realtime["prefill_compute"] += prompt
            self.realtime["decode"] += generated
            self.hists["ttft"].observe(ttft)
            for _ in range(max(generated - 1, 0)):
                self.hists["itl"].observe(itl)
            self.hists["tpot"].observe(itl)
            self.hists["e2e"].observe(ttft + itl * max(generated - 1, 0))
            self.hists["queue"].observe(queue)

    def http_active(self, endpoint: str, method: str, delta: int) -> None:
        with self.lock:
            self.active[(endpoint, method)] = self.active.get((endpoint, method), 0) + delta

    def count_http(self, endpoint: str, method: str, status: int) -> None:
        with self.lock:
            self.http[(endpoint, method)] = self.http.get((endpoint, method), 0) + 1
            key = (endpoint, method, str(status))
            self.responses[key] = self.responses.get(key, 0) + 1

    def render(self, startup: dict[str, Any]) -> str:
        with self.lock:
            out: list[str] = []
            for name, help_text in self.CONST_HELP.items():
                out += [f"# HELP sglang:{name} {help_text}", f"# TYPE sglang:{name} gauge"]
                value = {
                    "max_total_num_tokens": self.max_tokens,
                    "weight_memory_usage_gb": 15.1,
                    "kv_cache_memory_usage_gb": 53.4,
                    "page_size": 1.0,
                    "num_pages": self.max_tokens,
                    "context_len": self.context_len,
                    "startup_available_gpu_memory_gb": 8.8,
                }[name]
                for rank in range(self.tp_size):
                    out.append(f"sglang:{name}{_labels(self.sched_labels(rank))} {_fmt(value)}")
            out += ["# HELP sglang:graph_memory_usage_gb Memory used by captured device graphs in GB.",
                    "# TYPE sglang:graph_memory_usage_gb gauge"]  # fmt: skip
            for rank in range(self.tp_size):
                for phase in GRAPH_PHASES:
                    lab = {**self.sched_labels(rank), "phase": phase}
                    out.append(
                        f"sglang:graph_memory_usage_gb{_labels(lab)} {_fmt(0.8 if phase == 'decode' else 0.0)}"
                    )
            if self.gauges is not None:
                # sglang decays gen_throughput to 0 after 30 s without a decode batch
                if time.monotonic() - self.last_decode > scaled(30.0):
                    self.gauges["gen_throughput"] = 0.0
                for name, value in self.gauges.items():
                    out += [
                        f"# HELP sglang:{name} {self.GAUGE_HELP[name]}",
                        f"# TYPE sglang:{name} gauge",
                    ]
                    out.append(f"sglang:{name}{_labels(self.sched_labels(0))} {_fmt(value)}")
            for name, help_text in (("num_retracted_reqs", "The number of retracted requests."),
                                    ("num_paused_reqs", "The number of paused requests by async weight sync.")):  # fmt: skip
                out += [f"# HELP sglang:{name} {help_text}", f"# TYPE sglang:{name} gauge"]
                for rank, pid in enumerate(self.sched_pids):
                    lab = {**self.sched_labels(rank), "pid": str(pid)}
                    out.append(f"sglang:{name}{_labels(lab)} 0.0")
            counter_help = {
                "prompt_tokens_total": "Number of prefill tokens processed.",
                "generation_tokens_total": "Number of generation tokens processed.",
                "num_requests_total": "Number of requests processed.",
            }
            for name, value in self.counters.items():
                out += [
                    f"# HELP sglang:{name} {counter_help[name]}",
                    f"# TYPE sglang:{name} counter",
                ]
                out.append(f"sglang:{name}{_labels(self.tok_labels)} {_fmt(value)}")
            out += ["# HELP sglang:realtime_tokens_total Total number of tokens processed (updated on each log "
                    "interval). mode: prefill_compute, prefill_cache, decode.",
                    "# TYPE sglang:realtime_tokens_total counter"]  # fmt: skip
            for mode, value in self.realtime.items():
                out.append(
                    f"sglang:realtime_tokens_total{_labels({**self.sched_labels(0), 'mode': mode})} {_fmt(value)}"
                )
            out += ["# HELP sglang:cuda_graph_passes_total Total number of forward passes categorized by CUDA graph.",
                    "# TYPE sglang:cuda_graph_passes_total counter"]  # fmt: skip
            for mode, value in self.graph_passes.items():
                lab = {**self.sched_labels(0), "mode": mode}
                out.append(f"sglang:cuda_graph_passes_total{_labels(lab)} {_fmt(value)}")
            for hist in self.hists.values():
                out += hist.render()
            out += ["# HELP sglang:startup_time_seconds Engine startup duration by phase in seconds.",
                    "# TYPE sglang:startup_time_seconds gauge"]  # fmt: skip
            tok_base = {"engine_type": "unified", "model_name": self.served}
            for phase in ("load_weight", "kv_cache_allocation", "scheduler_e2e", "tokenizer_e2e"):
                out.append(
                    f"sglang:startup_time_seconds{_labels({**tok_base, 'phase': phase})} {_fmt(startup[phase])}"
                )
            out += ["# HELP sglang:startup_cuda_graph_time_seconds CUDA graph capture duration by phase in seconds.",
                    "# TYPE sglang:startup_cuda_graph_time_seconds gauge"]  # fmt: skip
            for phase in GRAPH_PHASES:
                value = startup["cuda_graph"][phase]
                out.append(
                    f"sglang:startup_cuda_graph_time_seconds{_labels({**tok_base, 'phase': phase})} {_fmt(value)}"
                )
            out += ["# HELP sglang:http_requests_total Total number of HTTP requests by endpoint and method",
                    "# TYPE sglang:http_requests_total counter"]  # fmt: skip
            for (endpoint, method), n in sorted(self.http.items()):
                out.append(
                    f"sglang:http_requests_total{_labels({'endpoint': endpoint, 'method': method})} {float(n)}"
                )
            out += ["# HELP sglang:http_responses_total Total number of HTTP responses by endpoint and status code",
                    "# TYPE sglang:http_responses_total counter"]  # fmt: skip
            for (endpoint, method, code), n in sorted(self.responses.items()):
                lab = {"endpoint": endpoint, "method": method, "status_code": code}
                out.append(f"sglang:http_responses_total{_labels(lab)} {float(n)}")
            out += ["# HELP sglang:http_requests_active Number of currently active HTTP requests",
                    "# TYPE sglang:http_requests_active gauge"]  # fmt: skip
            for (endpoint, method), n in sorted(self.active.items()):
                lab = {"endpoint": endpoint, "method": method}
                out.append(f"sglang:http_requests_active{_labels(lab)} {float(n)}")
            return "\n".join(out) + "\n"


# --- the main process ----------------------------------------------------------------------


class SchedulerDied(Exception):
    """The text Python prints for the uncaught RuntimeError from _wait_for_scheduler_ready."""


class ServerState:
    STARTING, UP, UNHEALTHY = "Starting", "Up", "UnHealthy"

    def __init__(self) -> None:
        self.status = self.STARTING
        self.gracefully_exit = False
        self.first_generate = False
        self.running = 0
        self.queue = 0
        self.token_usage = 0.0
        self.gen_tps = 0.0
        self.inflight = 0
        self.rids: list[str] = []
        self.forward_iter = 0
        self.lock = threading.Lock()


class FakeServer:
    def __init__(self, args: argparse.Namespace, argv: list[str]) -> None:
        self.args = args
        self.argv = argv
        self.pid = os.getpid()
        self.t0 = time.monotonic()
        self.log = Logger(args.log_level or "info")
        self.state = ServerState()
        self.children: list[subprocess.Popen[bytes]] = []
        self.schedulers: list[subprocess.Popen[bytes]] = []
        self.cmd_fds: list[int] = []
        self.ready_fds: list[int] = []
        self.detok_fd = -1
        self.httpd: ThreadingHTTPServer | None = None
        self.pending_signal: int | None = None
        self.wake = threading.Event()
        self.served = args.served_model_name or args.model_path
        self.max_tokens = int(_env_float("FAKE_SGLANG_MAX_TOTAL_TOKENS", 500000))
        self.context_len = int(args.context_length or 32768)
        self.mem_fraction = (
            args.mem_fraction_static
            if args.mem_fraction_static is not None
            else DEFAULT_MEM_FRACTION
        )
        self.metrics = Metrics(self.served, args.tp_size or 1, self.max_tokens, self.context_len)
        self.startup_time = {
            "load_weight": 8.0,
            "kv_cache_allocation": 1.0,
            "scheduler_e2e": 17.5,
            "cuda_graph": {
                p: (6.0 if p == "decode" else 0.6 if p == "prefill" else 0.0) for p in GRAPH_PHASES
            },
            "tokenizer_e2e": 18.5,
        }
        self.start_time = time.time()
        self.uvicorn_started = False
        self.warmup_done = threading.Event()
        self.shutdown_started = False
        excl = getattr(args, "uvicorn_access_log_exclude_prefixes", None) or []
        self.access_exclude = tuple(excl) if isinstance(excl, list) else (str(excl),)

    # --- timeline helpers

    def at(self, t: float) -> None:
        delay = self.t0 + scaled(t) - time.monotonic()
        if delay > 0:
            time.sleep(delay)

    def resolved(self) -> dict[str, Any]:
        out = dict(vars(self.args))
        out["served_model_name"] = self.served
        out["mem_fraction_static"] = self.mem_fraction
        out["attention_backend"] = self.args.attention_backend or "fa3"
        out["context_length"] = self.context_len
        return out

    def to_scheduler(self, cmd: dict[str, Any], ranks: list[int] | None = None) -> None:
        data = (json.dumps(cmd) + "\n").encode()
        for i, fd in enumerate(self.cmd_fds):
            if ranks is None or i in ranks:
                with contextlib.suppress(OSError):
                    os.write(fd, data)

    def sched_log(self, msg: str, level: int = 20) -> None:
        self.to_scheduler({"op": "log", "msg": msg, "level": level}, ranks=[0])

    # --- startup

    def run(self) -> int:
        signal.signal(signal.SIGQUIT, self.on_sigquit)
        died: str | None = None
        try:
            return self._run()
        except SchedulerDied as exc:
            died = str(exc)
            return 1
        finally:
            # launch_server.py: `finally: kill_process_tree(os.getpid(), include_parent=False)`;
            # a KeyboardInterrupt passes through here too, then exits by SIGINT. Python
            # prints an uncaught traceback only after the finally.
            self.kill_tree(include_parent=False)
            if died:
                _write(2, died + "\n")

    def _run(self) -> int:
        args = self.args
        self.at(0.4)
        if args.attention_backend is None:
            self.log.info("Attention backend not specified. Use fa3 backend by default.")
        self.at(0.5)
        self.log.info(f"server_args={self.resolved()}")
        self.spawn_children()
        try:
            self.wait_for_schedulers()
        except RuntimeError as exc:
            raise SchedulerDied(_fake_traceback(
                [("launch_server.py", 85, "<module>", "run_server(server_args)"),
                 ("srt/entrypoints/http_server.py", 3140, "launch_server",
                  "tokenizer_manager, template_manager, scheduler_infos, port_args = _launch_subprocesses("),
                 ("srt/entrypoints/engine.py", 1372, "_launch_subprocesses", "scheduler_init_result.wait_for_ready()"),
                 ("srt/entrypoints/engine.py", 2040, "_wait_for_scheduler_ready", "raise RuntimeError(")],
                f"RuntimeError: {exc}",
            )) from None  # fmt: skip
        self.at(18.5)
        cg = ", ".join(f"{p}={self.startup_time['cuda_graph'][p]:.2f}" for p in GRAPH_PHASES)
        self.log.info(
            "Engine startup timings (s): load_weight=8.00, kv_cache_allocation=1.00, scheduler_e2e=17.50, "
            f"cuda_graph={{{cg}}}, tokenizer_e2e=18.50"
        )
        self.at(18.6)
        self.uvicorn_started = True
        signal.signal(signal.SIGTERM, self.on_signal)
        signal.signal(signal.SIGINT, self.on_signal)
        self.log.uvicorn(f"Started server process [{self.pid}]")
        self.log.uvicorn("Waiting for application startup.")
        threading.Thread(target=self.warmup, daemon=True).start()
        self.log.uvicorn("Application startup complete.")
        host, port = args.host or "127.0.0.1", int(args.port or 30000)
        try:
            if SCENARIO == "port_in_use":
                raise OSError(98, "address already in use")
            self.httpd = _Server((host, port), _handler_for(self))
        except OSError as exc:
            self.log.uvicorn(
                f"[Errno {exc.errno}] error while attempting to bind on address ('{host}', {port}): "
                f"{exc.strerror or exc}".replace(
                    "Address already in use", "address already in use"
                ),
                level="ERROR",
            )
            self.log.uvicorn("Waiting for application shutdown.")
            # uvicorn's lifespan shutdown joins the warm-up thread, which gives up after
            # 120 polls and SIGKILLs the tree.
            while True:
                time.sleep(3600)
        threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        self.log.uvicorn(f"Uvicorn running on http://{host}:{port} (Press CTRL+C to quit)")
        threading.Thread(target=self.traffic, daemon=True).start()
        return self.main_loop()

    def spawn_children(self) -> None:
        args = self.args
        capture = os.environ.get("FAKE_SGLANG_CAPTURE_BS", "1,2,4,8,16,32")
        bs = [int(x) for x in capture.split(",") if x.strip()] or [1]
        prefill_backend = getattr(args, "cuda_graph_backend_prefill", None)
        decode_backend = getattr(args, "cuda_graph_backend_decode", None)
        disable_all = bool(getattr(args, "disable_cuda_graph", False))
        base = {
            "ppid": self.pid,
            "t0": self.t0,
            "tp_size": args.tp_size or 1,
            "log_level": args.log_level or "info",
            "mem_fraction_static": self.mem_fraction,
            "max_total_tokens": self.max_tokens,
            "capture_bs": sorted(bs),
            "prefill_graph": not disable_all and prefill_backend != "disabled",
            "decode_graph": not disable_all and decode_backend != "disabled",
            "chunked_prefill_size": args.chunked_prefill_size or 8192,
            "max_running_requests": args.max_running_requests or 2048,
            "context_len": self.context_len,
        }
        roles = [("scheduler", r) for r in range(args.tp_size or 1)] + [("detokenizer", 0)]
        for role, rank in roles:
            cmd_r, cmd_w = os.pipe()
            fds = [cmd_r]
            cfg = dict(base, cmd_fd=cmd_r)
            ready_r = -1
            if role == "scheduler":
                ready_r, ready_w = os.pipe()
                cfg["ready_fd"] = ready_w
                fds.append(ready_w)
            proc = subprocess.Popen(
                [sys.executable, __file__, f"{ROLE_FLAG}{role}", f"--_fake-rank={rank}",
                 "--_fake-config=" + json.dumps(cfg)],
                pass_fds=fds,
                stdin=subprocess.DEVNULL,
            )  # fmt: skip
            os.close(cmd_r)
            if role == "scheduler":
                os.close(cfg["ready_fd"])
                self.cmd_fds.append(cmd_w)
                self.ready_fds.append(ready_r)
                self.schedulers.append(proc)
            else:
                self.detok_fd = cmd_w
            self.children.append(proc)
        self.metrics.sched_pids = [p.pid for p in self.schedulers]

    def wait_for_schedulers(self) -> None:
        # engine.py _wait_for_scheduler_ready: block on each pipe, checking liveness every 5 s.
        for rank, (fd, proc) in enumerate(zip(self.ready_fds, self.schedulers, strict=True)):
            buf = b""
            while b"\n" not in buf:
                ready, _, _ = select.select([fd], [], [], max(scaled(5.0), 0.01))
                if ready:
                    chunk = os.read(fd, 4096)
                    if chunk:
                        buf += chunk
                        continue
                    proc.wait()
                if proc.poll() is not None:
                    raise RuntimeError(
                        f"Rank {rank} scheduler died during initialization (exit code: {proc.returncode}). "
                        "If exit code is -9 (SIGKILL), a common cause is the OS OOM killer. "
                        "Run `dmesg -T | grep -i oom` to check."
                    )
            os.close(fd)

    # --- warm-up (http_server.py _execute_server_warmup)

    def _url(self, path: str) -> str:
        host = self.args.host or "127.0.0.1"
        host = "127.0.0.1" if host in ("0.0.0.0", "") else host
        return f"http://{host}:{self.args.port or 30000}{path}"

    def _request(
        self, path: str, body: dict[str, Any] | None = None, timeout: float = 5.0
    ) -> tuple[int, bytes]:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(
            self._url(path),
            data=data,
            method="POST" if data is not None or path == "/freeze_gc" else "GET",
        )
        if data is not None:
            req.add_header("Content-Type", "application/json")
        key = (
            self.args.admin_api_key
            if path == "/freeze_gc" and self.args.admin_api_key
            else self.args.api_key
        )
        if key:
            req.add_header("Authorization", f"Bearer {key}")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as res:
                return res.status, res.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def warmup(self) -> None:
        if self.args.skip_server_warmup:
            self.state.status = ServerState.UP
        else:
            last = ""
            for _ in range(120):
                time.sleep(scaled(1.0))
                try:
                    code, _ = self._request("/model_info")
                    assert code == 200, f"res=<Response [{code}]>"
                    break
                except (AssertionError, OSError):
                    last = traceback.format_exc()
            else:
                self.warmup_failed(
                    "requests.exceptions.ConnectionError: HTTPConnectionPool(host='127.0.0.1', "
                    f"port={self.args.port}): Max retries exceeded with url: /model_info (Caused by "
                    "NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f3a2c1d5e50>: "
                    "Failed to establish a new connection: [Errno 111] Connection refused'))"
                    if "refused" in last or not last
                    else last.strip().splitlines()[-1]
                )
                return
            body = {
                "text": "The capital city of France is",
                "sampling_params": {"temperature": 0, "max_new_tokens": 8},
            }
            try:
                code, text = self._request("/generate", body, timeout=600)
                assert code == 200, text.decode(errors="replace")
            except (AssertionError, OSError) as exc:
                self.warmup_failed(f"AssertionError: {exc}")
                return
            self.state.status = ServerState.UP
        with contextlib.suppress(OSError):
            self._request("/freeze_gc", timeout=10)
        self.warmup_done.set()
        self.to_scheduler({"op": "up"})
        self.log.info("The server is fired up and ready to roll!")

    def warmup_failed(self, last: str) -> None:
        tb = _fake_traceback(
            [("srt/entrypoints/http_server.py", 2461, "_execute_server_warmup",
              "assert res.status_code == 200, f\"{res.text}\"")],
            last,
        )  # fmt: skip
        self.log.error(f"Initialization failed. warmup error: {tb}")
        self.kill_tree_and_self()

    # --- synthetic traffic

    def traffic(self) -> None:
        """Replay FAKE_SGLANG_LOAD_SCRIPT after warm-up: batch log lines and metrics."""
        raw = os.environ.get("FAKE_SGLANG_LOAD_SCRIPT")
        if not raw:
            return
        try:
            script = json.loads(raw if raw.lstrip().startswith("[") else Path(raw).read_text())
        except (OSError, ValueError):
            self.log.warning("FAKE_SGLANG_LOAD_SCRIPT is not a JSON list; no synthetic traffic")
            return
        self.warmup_done.wait()
        steps = sorted(script, key=lambda s: s.get("t", 0))
        st = self.state
        interval = self.args.decode_log_interval or 40
        tick = max(scaled(1.0), 0.01)
        start = time.monotonic()
        idx = 0
        while True:
            elapsed = time.monotonic() - start
            while idx < len(steps) and scaled(steps[idx].get("t", 0)) <= elapsed:
                self.apply_step(steps[idx])
                idx += 1
            with st.lock:
                if st.gracefully_exit and st.running + st.queue:
                    # draining: no new arrivals, half of the batch finishes per step
                    moved = min(st.queue, 4)
                    st.queue -= moved
                    st.running = max(st.running + moved - max(st.running // 2, 1), 0)
                    st.rids = st.rids[: st.running + st.queue]
                running, queue, gen, usage = st.running, st.queue, st.gen_tps, st.token_usage
            used = int(usage * self.max_tokens)
            if running:
                st.forward_iter += interval
                it = f" [{st.forward_iter}]" if FORWARD_ITERS else ""
                self.sched_log(
                    f"Decode batch{it}, #running-req: {running}, #token: {used}, token usage: {usage:.2f}, "
                    f"cuda graph: True, gen throughput (token/s): {gen:.2f}, #queue-req: {queue}"
                )
                self.metrics.set_batch(running, queue, used, gen, 0.0, True)
                itl = running / max(gen, 1.0)  # seconds between two tokens of one request
                with self.metrics.lock:
                    self.metrics.counters["generation_tokens_total"] += gen
                    self.metrics.realtime["decode"] += gen
                    for _ in range(max(int(gen / 64), 1)):
                        self.metrics.hists["itl"].observe(itl)
            elif idx >= len(steps):
                self.metrics.set_batch(0, 0, 0, 0.0, 0.0, True)
                return
            time.sleep(tick)

    def apply_step(self, step: dict[str, Any]) -> None:
        st = self.state
        with st.lock:
            if not st.gracefully_exit:
                st.running = int(step.get("running", 0))
                st.queue = int(step.get("queue", 0))
                st.rids = [uuid.uuid4().hex for _ in range(st.running + st.queue)]
            st.gen_tps = float(step.get("gen_tps", 0.0))
            st.token_usage = float(step.get("token_usage", 0.0))
        new = int(step.get("new_tokens", 0))
        if new:
            seqs = max(int(step.get("new_seq", 1)), 1)
            self.prefill_line(new_seq=seqs, new_tokens=new)
            for _ in range(seqs):
                self.metrics.request(new // seqs, 64, 0.05 + new / 20000, 0.012, 0.01)

    def prefill_line(self, new_seq: int, new_tokens: int) -> None:
        st = self.state
        st.forward_iter += 1
        it = f" [{st.forward_iter}]" if FORWARD_ITERS else ""
        self.sched_log(
            f"Prefill batch{it}, #new-seq: {new_seq}, #new-token: {new_tokens}, #cached-token: 0, "
            f"token usage: {st.token_usage:.2f}, #running-req: {st.running}, #queue-req: {st.queue}, "
            f"#pending-token: 0, cuda graph: False, input throughput (token/s): {new_tokens / 19.0:.2f}"
        )

    # --- signals (§7.6)

    def on_sigquit(self, signum: int, frame: Any) -> None:
        if self.state.first_generate:
            # the running-phase handler, installed at the first request
            self.pending_signal = signal.SIGQUIT
            self.wake.set()
            return
        self.log.error("Received sigquit from a child process. It usually means the child failed.")
        self.kill_tree_and_self()

    def on_signal(self, signum: int, frame: Any) -> None:
        self.pending_signal = signum
        self.wake.set()

    def main_loop(self) -> int:
        while True:
            self.wake.wait(0.2)
            self.wake.clear()
            sig = self.pending_signal
            self.pending_signal = None
            if sig == signal.SIGQUIT:
                self.crash_runtime()
            elif sig == signal.SIGTERM and not self.shutdown_started:
                self.shutdown_started = True
                if self.state.first_generate:
                    return self.drain_and_exit()
                self.uvicorn_stop(signal.SIGTERM)
            elif sig == signal.SIGINT and not self.shutdown_started:
                self.shutdown_started = True
                if self.state.first_generate:
                    self.uvicorn_quartet()
                    self.kill_tree(include_parent=False)
                    _write(
                        2,
                        "Traceback (most recent call last):\n"
                        f'  File "{SITE}/launch_server.py", line 85, in <module>\n'
                        "    run_server(server_args)\nKeyboardInterrupt\n",
                    )
                    self.die(signal.SIGINT)
                self.uvicorn_stop(signal.SIGINT)

    def uvicorn_quartet(self) -> None:
        self.log.uvicorn("Shutting down")
        if self.httpd is not None:
            threading.Thread(target=self.httpd.shutdown, daemon=True).start()
        self.log.uvicorn("Waiting for application shutdown.")
        self.log.uvicorn("Application shutdown complete.")
        self.log.uvicorn(f"Finished server process [{self.pid}]")

    def uvicorn_stop(self, signum: int) -> None:
        """uvicorn's own handler: shut down, then re-raise the signal with its default action."""
        if not self.warmup_done.is_set() and not self.args.skip_server_warmup:
            # The lifespan shutdown joins the warm-up thread, which still polls /model_info:
            # it gives up after 120 tries and SIGKILLs the tree (§7.0).
            self.log.uvicorn("Shutting down")
            if self.httpd is not None:
                self.httpd.shutdown()
                self.httpd.server_close()
            self.log.uvicorn("Waiting for application shutdown.")
            return
        self.uvicorn_quartet()
        if signum == signal.SIGINT:
            self.kill_tree(include_parent=False)
        self.die(signum)

    def drain_and_exit(self) -> int:
        st = self.state
        self.log.warning(
            "SIGTERM received. signum=None frame=None. Draining requests and shutting down..."
        )
        st.gracefully_exit = True
        time.sleep(scaled(5.0))
        while True:
            with st.lock:
                n = st.running + st.queue + st.inflight
                rids = list(st.rids[:n])
            self.log.info(
                f"Gracefully exiting... Remaining number of requests {n}. Remaining requests remaining_rids={rids}."
            )
            if n == 0:
                break
            time.sleep(scaled(5.0))
        self.to_scheduler({"op": "shutdown"})
        with contextlib.suppress(OSError):
            os.write(self.detok_fd, b'{"op": "shutdown"}\n')
        deadline = time.monotonic() + scaled(15.0)
        while time.monotonic() < deadline and any(p.poll() is None for p in self.schedulers):
            time.sleep(0.02)
        left = [p.pid for p in self.schedulers if p.poll() is None]
        if left:
            self.log.warning(
                f"Schedulers still alive 15s after ShutdownReq, killing them before they released: {left}"
            )
        self.kill_tree(include_parent=False)
        self.uvicorn_quartet()
        return 0  # run()'s finally logs kill_process_tree once more, as sglang does

    def crash_runtime(self) -> None:
        self.log.error(
            "SIGQUIT received. signum=None, frame=None. It usually means one child failed."
        )
        self.log.info("Sleeping 5 seconds before crash diagnostics to let GPU activity settle.")
        time.sleep(scaled(5.0))
        if not any(p.poll() is None for p in self.schedulers):
            self.log.info("No live scheduler processes found; skipping py-spy and CUDA coredump.")
        self.kill_tree_and_self()

    def kill_tree(self, include_parent: bool) -> None:
        self.log.info(
            f"kill_process_tree called: parent_pid={self.pid}, include_parent={include_parent}, pid={self.pid}"
        )
        self.kill_children()
        if include_parent:
            os.kill(os.getpid(), signal.SIGKILL)

    def kill_children(self) -> None:
        for proc in self.children:
            if proc.poll() is None:
                with contextlib.suppress(OSError):
                    proc.kill()
        for proc in self.children:
            with contextlib.suppress(Exception):
                proc.wait(timeout=5)

    def kill_tree_and_self(self) -> None:
        self.kill_tree(include_parent=True)

    def die(self, signum: int) -> None:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        time.sleep(1)
        os._exit(128 + signum)

    # --- HTTP payloads

    def model_info(self) -> dict[str, Any]:
        return {
            "model_path": self.args.model_path,
            "served_model_name": self.served,
            "tokenizer_path": self.args.tokenizer_path or self.args.model_path,
            "is_generation": True,
            "preferred_sampling_params": None,
            "weight_version": "default",
            "load_format": self.args.load_format or "auto",
            "reasoning_parser": None,
            "tool_call_parser": None,
            "disaggregation_mode": "null",
            "has_image_understanding": False,
            "has_audio_understanding": False,
            "model_type": "llama",
            "architectures": ["LlamaForCausalLM"],
        }

    def server_info(self) -> dict[str, Any]:
        st = self.state
        info = self.resolved()
        memory = {
            "weight": 15.1,
            "kvcache": 53.4,
            "startup_available": 8.8,
            "token_capacity": self.max_tokens,
            "token_capacity_swa": None,
            "graph": {p: (0.8 if p == "decode" else 0.0) for p in GRAPH_PHASES},
        }
        info.update(
            {
                "launch_command": "sglang serve " + " ".join(self.argv),
                "status": "ready",
                "max_total_num_tokens": self.max_tokens,
                "max_req_input_len": self.context_len - 5,
                "hicache_object_layout": None,
                "kv_events": None,
                "startup_time": self.startup_time,
                "internal_states": [
                    {
                        **self.resolved(),
                        "world_size": self.args.tp_size or 1,
                        "startup_time": self.startup_time,
                        "effective_max_running_requests_per_dp": self.args.max_running_requests
                        or 2048,
                        "last_gen_throughput": st.gen_tps,
                        "memory_usage": memory,
                        "disaggregation_mode": "null",
                        "decode_cuda_graph_bs": [1, 2, 4, 8, 16, 32],
                        "decode_cuda_graph_memory_gb": 0.8,
                    }
                ],
                "version": VERSION,
                "frontend": "python",
            }
        )
        return info

    def loads(self) -> dict[str, Any]:
        st = self.state
        used = int(st.token_usage * self.max_tokens)
        metrics_on = bool(self.args.enable_metrics)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + "Z"
        return {
            "timestamp": stamp,
            "version": VERSION,
            "accelerator": "cuda",
            "num_accelerators": self.args.tp_size or 1,
            "loads": [
                {
                    "timestamp": stamp,
                    "dp_rank": 0,
                    "num_running_reqs": st.running,
                    "num_waiting_reqs": st.queue,
                    "num_waiting_uncached_tokens": 0,
                    "num_used_tokens": used,
                    "num_total_tokens": self.max_tokens,
                    "num_active_tokens": used,
                    "num_prealloc_ready_tokens": 0,
                    "max_total_num_tokens": self.max_tokens,
                    "max_running_requests": self.args.max_running_requests or 2048,
                    "token_usage": round(st.token_usage, 4),
                    "gen_throughput": st.gen_tps if metrics_on else 0.0,
                    "cache_hit_rate": 0.0,
                    "utilization": 0.0,
                    "total_prefill_uncached_tokens": 0,
                    "total_prefill_busy_us": 0,
                    "decode_moments": None,
                    "memory": {
                        "weight_gb": 15.1,
                        "kv_cache_gb": 53.4,
                        "graph_gb": 0.8,
                        "token_capacity": self.max_tokens,
                    },
                    "disaggregation": {},
                    "queues": {
                        "waiting": st.queue,
                        "grammar": 0,
                        "paused": 0,
                        "retracted": 0,
                        "prealloc_ready": 0,
                    },
                }
            ],
        }

    def generate(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        st = self.state
        if SCENARIO == "warmup_fail" and not st.first_generate:
            return 500, {
                "object": "error",
                "message": "CUDA error: device-side assert triggered",
                "type": "InternalServerError",
                "param": None,
                "code": 500,
            }
        text = str(body.get("text", ""))
        params = body.get("sampling_params") or {}
        max_new = int(params.get("max_new_tokens", 128))
        prompt = max(len(text.split()) + 1, 1)
        with st.lock:
            st.inflight += 1
        try:
            self.prefill_line(new_seq=1, new_tokens=prompt)
            time.sleep(scaled(0.2))
            self.metrics.request(prompt, max_new, 0.05, 0.012, 0.001)
            self.metrics.set_batch(
                st.running, st.queue, int(st.token_usage * self.max_tokens), st.gen_tps, 0.0, False
            )
        finally:
            with st.lock:
                st.inflight -= 1
        st.first_generate = True
        out = {
            "text": " Paris" + " ." * max(max_new - 1, 0),
            "output_ids": list(range(max_new)),
            "meta_info": {
                "id": uuid.uuid4().hex,
                "finish_reason": {"type": "length", "length": max_new},
                "prompt_tokens": prompt,
                "weight_version": "default",
                "num_retractions": 0,
                "reasoning_tokens": 0,
                "completion_tokens": max_new,
                "cached_tokens": 0,
                "e2e_latency": 0.05 + 0.012 * max_new,
            },
        }
        return 200, out

    def health(self) -> int:
        st = self.state
        if st.gracefully_exit:
            self.log.warning("Health check request received during shutdown. Returning 503.")
            return 503
        if st.status == ServerState.STARTING:
            return 503
        if SCENARIO == "health_timeout":
            tic = time.strftime("%H:%M:%S")
            timeout = int(_env_float("SGLANG_HEALTH_CHECK_TIMEOUT", 20))
            time.sleep(scaled(timeout))
            self.log.error(
                f"Health check failed. Server couldn't get a response from detokenizer for last {timeout} seconds. "
                f"tic start time: {tic}. last_heartbeat time: {tic}"
            )
            st.status = ServerState.UNHEALTHY
            return 503
        time.sleep(scaled(1.0))
        if st.running == 0 and st.queue == 0:
            self.prefill_line(new_seq=1, new_tokens=1)
        if st.status == ServerState.UNHEALTHY:
            st.status = ServerState.UP
        return 200


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


ANY = ("GET", "POST", "PUT")
# path -> (handler method, methods it answers); anything else is a 404, as FastAPI's
ROUTES: dict[str, tuple[str, tuple[str, ...]]] = {
    "/health": ("r_health", ANY),
    "/health_generate": ("r_health", ANY),
    "/ready": ("r_ready", ANY),
    "/model_info": ("r_model_info", ANY),
    "/get_model_info": ("r_model_info", ANY),
    "/server_info": ("r_server_info", ANY),
    "/get_server_info": ("r_server_info", ANY),
    "/v1/models": ("r_models", ANY),
    "/v1/loads": ("r_loads", ANY),
    "/metrics": ("r_metrics", ANY),
    "/flush_cache": ("r_flush_cache", ("GET", "POST")),
    "/freeze_gc": ("r_freeze_gc", ("GET", "POST")),
    "/generate": ("r_generate", ("POST", "PUT")),
}


OPEN_PATHS = ("/health", "/ready", "/metrics")


class _Handler(BaseHTTPRequestHandler):
    fake: FakeServer  # set per server by _handler_for
    protocol_version = "HTTP/1.1"
    server_version = "uvicorn"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        pass  # uvicorn-style access lines are written in _send

    def _send(
        self,
        code: int,
        body: bytes | str | dict[str, Any] | None,
        ctype: str = "application/json",
    ) -> None:
        if isinstance(body, dict):
            payload = json.dumps(body).encode()
        elif isinstance(body, str):
            payload = body.encode()
        else:
            payload = body or b""
        self.send_response_only(code)
        self.send_header("date", self.date_time_string())
        self.send_header("server", "uvicorn")
        self.send_header("content-length", str(len(payload)))
        if payload:
            self.send_header("content-type", ctype)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)
        path = self.path.split("?", 1)[0]
        self.fake.metrics.count_http(path, self.command, code)
        if not (self.fake.access_exclude and path.startswith(self.fake.access_exclude)):
            host, port = self.client_address[:2]
            self.fake.log.uvicorn(
                f'{host}:{port} - "{self.command} {self.path} HTTP/1.1" {code} {STATUS_TEXT.get(code, "")}'.rstrip(),
                fd=1,
            )

    def _authorized(self, path: str) -> bool:
        key = self.fake.args.api_key
        if not key or path.startswith(OPEN_PATHS):
            return True
        return self.headers.get("Authorization", "") == f"Bearer {key}"

    def _body(self) -> dict[str, Any]:
        n = int(self.headers.get("Content-Length") or 0)
        if not n:
            return {}
        try:
            data = json.loads(self.rfile.read(n) or b"{}")
        except ValueError:
            return {}
        return data if isinstance(data, dict) else {}

    def do_GET(self) -> None:
        self._route()

    def do_POST(self) -> None:
        self._route()

    def do_PUT(self) -> None:
        self._route()

    def _route(self) -> None:
        path = self.path.split("?", 1)[0]
        self.fake.metrics.http_active(path, self.command, 1)
        try:
            self._dispatch(path)
        finally:
            self.fake.metrics.http_active(path, self.command, -1)

    def _dispatch(self, path: str) -> None:
        body = self._body() if self.command in ("POST", "PUT") else {}
        if not self._authorized(path):
            self._send(401, {"error": "Unauthorized"})
            return
        route = ROUTES.get(path)
        if route is None or self.command not in route[1]:
            self._send(404, {"detail": "Not Found"})
            return
        getattr(self, route[0])(path, body)

    # --- one method per endpoint (ROUTES maps paths to them) ---

    def r_health(self, path: str, body: dict[str, Any]) -> None:
        self._send(self.fake.health(), b"")

    def r_ready(self, path: str, body: dict[str, Any]) -> None:
        st = self.fake.state
        ok = st.status == ServerState.UP and not st.gracefully_exit
        if st.gracefully_exit:
            self.fake.log.warning("Health check request received during shutdown. Returning 503.")
        self._send(200 if ok else 503, b"")

    def _deprecated(self, path: str, new: str) -> None:
        self.fake.log.warning(
            f"Endpoint '{path}' is deprecated and will be removed in a future version. "
            f"Please use '{new}' instead."
        )

    def r_model_info(self, path: str, body: dict[str, Any]) -> None:
        if path == "/get_model_info":
            self._deprecated(path, "/model_info")
        self._send(200, self.fake.model_info())

    def r_server_info(self, path: str, body: dict[str, Any]) -> None:
        if path == "/get_server_info":
            self._deprecated(path, "/server_info")
        self._send(200, self.fake.server_info())

    def r_models(self, path: str, body: dict[str, Any]) -> None:
        card = {"id": self.fake.served, "object": "model", "created": int(self.fake.start_time),
                "owned_by": "sglang", "root": self.fake.served, "parent": None,
                "max_model_len": self.fake.context_len}  # fmt: skip
        self._send(200, {"object": "list", "data": [card]})

    def r_loads(self, path: str, body: dict[str, Any]) -> None:
        self._send(200, self.fake.loads())

    def r_metrics(self, path: str, body: dict[str, Any]) -> None:
        if not self.fake.args.enable_metrics:
            self._send(404, {"detail": "Not Found"})
            return
        self._send(
            200,
            self.fake.metrics.render(self.fake.startup_time),
            "text/plain; version=0.0.4; charset=utf-8",
        )

    def r_flush_cache(self, path: str, body: dict[str, Any]) -> None:
        st = self.fake.state
        if st.running or st.queue:
            self.fake.sched_log(
                f"Cache not flushed because there are pending requests. #queue-req: {st.queue}, "
                f"#running-req: {st.running}"
            )
            self._send(400, "Flush cache failed.\n", "text/plain; charset=utf-8")
            return
        self.fake.sched_log("Cache flushed successfully!")
        self._send(
            200,
            "Cache flushed.\nPlease check backend logs for more details. (When there are running or "
            "waiting requests, the operation will not be performed.)\n",
            "text/plain; charset=utf-8",
        )

    def r_freeze_gc(self, path: str, body: dict[str, Any]) -> None:
        self._send(200, "Garbage collection frozen.\n", "text/plain; charset=utf-8")

    def r_generate(self, path: str, body: dict[str, Any]) -> None:
        code, payload = self.fake.generate(body)
        self._send(code, payload)


def _handler_for(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    return type("Handler", (_Handler,), {"fake": server})


def main(argv: list[str]) -> int:
    if argv and argv[0].startswith(ROLE_FLAG):
        return _child_main(argv)
    if os.environ.get("FAKE_SGLANG_ENTRY", "launch_server") == "launch_server":
        _write(
            2,
            f"{SITE}/launch_server.py:71: UserWarning: 'python -m sglang.launch_server' is still supported, "
            "but 'sglang serve' is the recommended entrypoint.\n"
            "  Example: sglang serve --model-path <model> [options]\n"
            "  warnings.warn(\n",
        )
    if SCENARIO not in SCENARIOS:
        _write(2, f"FAKE_SGLANG_SCENARIO={SCENARIO!r} is not one of {', '.join(SCENARIOS)}\n")
        return 2
    args = parse_server_args(argv)
    return FakeServer(args, argv).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
