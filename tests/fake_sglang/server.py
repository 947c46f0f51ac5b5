"""The main process: children, readiness, warm-up, traffic, signals and shutdown."""

from __future__ import annotations

import argparse
import contextlib
import json
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
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

from fake_sglang.common import (
    DEFAULT_MEM_FRACTION,
    ENTRY,
    FORWARD_ITERS,
    GRAPH_PHASES,
    ROLE_FLAG,
    SCENARIO,
    SITE,
    Logger,
    _env_float,
    _fake_traceback,
    _write,
    scaled,
)
from fake_sglang.endpoints import Endpoints, _handler_for, _Server
from fake_sglang.metrics import Metrics
from fake_sglang.state import SchedulerDied, ServerState

# --- the main process ----------------------------------------------------------------------


class FakeServer(Endpoints):
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
        # what the multi-node mode adds to every child's configuration
        self.child_extra: dict[str, Any] = {}

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
        base.update(self.child_extra)
        for role, rank in self.local_roles():
            cmd_r, cmd_w = os.pipe()
            fds = [cmd_r]
            cfg = dict(base, cmd_fd=cmd_r)
            ready_r = -1
            if role == "scheduler":
                ready_r, ready_w = os.pipe()
                cfg["ready_fd"] = ready_w
                fds.append(ready_w)
            proc = subprocess.Popen(
                [sys.executable, str(ENTRY), f"{ROLE_FLAG}{role}", f"--_fake-rank={rank}",
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

    def local_roles(self) -> list[tuple[str, int]]:
        """The children of this node: one scheduler per TP rank, then the detokenizer."""
        return [("scheduler", r) for r in range(self.args.tp_size or 1)] + [("detokenizer", 0)]

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
