"""The scheduler and detokenizer children: the start-up transcript and the serving loop."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import threading
import time
from typing import Any

from fake_sglang.common import (
    LOG_MS,
    ROLE_FLAG,
    SCENARIO,
    Logger,
    _env_float,
    _fake_traceback,
    _set_pdeathsig,
    _stamp,
    _write,
    scaled,
)

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
        # a real scheduler fails seconds in, never in its first milliseconds: the whole tree
        # lives long enough to be seen (and then seen gone) on a busy machine too
        time.sleep(1.0)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.cfg["ppid"], signal.SIGQUIT)
        return 0

    def run(self) -> int:
        cfg, log = self.cfg, self.log
        mf = cfg["mem_fraction_static"]
        self.at(1.0)
        if not cfg.get("init_begun"):  # the multi-node main logs it before the rendezvous
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
                # a real scheduler dies seconds into loading, never in the first milliseconds:
                # the whole tree lives long enough to be seen on a busy machine too
                time.sleep(1.0)
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
