"""The multi-node mode: `--nnodes N --node-rank R --dist-init-addr HOST:PORT`.

It follows `reference/sglang-0.5.23-multinode.md` §4: every node logs `server_args=...`
and its schedulers' `Init parallel begin.`; the node-rank-0 process opens the rendezvous
store on the dist-init port (all addresses, as torch's TCPStore) and the others connect to
it, retrying until the dist timeout, as torch's store client does. Nothing loads before
every node has joined. Node 0 then waits until every node's schedulers are ready before it
serves the real API; nodes >= 1 run schedulers only (global TP numbers in their prefixes)
and, once loaded, the dummy health server on `--host:--port`. A node >= 1 only logs SIGTERM;
it stops when node 0's shutdown broadcast arrives or node 0's connection drops.

Where sglang would hang (two nodes with the same rank, a rank outside 0..N-1, a node 0 that
nobody joins) the stand-in fails with a message instead, so a test fails in bounded time:
torch's store timeout text for a rank 0 left alone, a RuntimeError naming the rank for the
others. Timeouts are scaled by FAKE_SGLANG_TIME_SCALE like every other wait.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from fake_sglang.common import Logger, _fake_traceback, scaled
from fake_sglang.endpoints import _Server
from fake_sglang.server import FakeServer

# torch's default store timeout, which sglang uses when --dist-timeout is not given
DEFAULT_DIST_TIMEOUT = 1800


class InitFailed(Exception):
    """A scheduler's start-up exception (the last line of its traceback)."""


def parse_addr(addr: str | None) -> tuple[str, int]:
    """sglang's NetworkAddress.parse messages (`srt/utils/network.py`)."""
    if not addr:
        raise InitFailed(
            "ValueError: --nnodes > 1 needs --dist-init-addr so all nodes rendezvous at the same endpoint."
        )
    if addr.startswith("["):
        host, sep, rest = addr[1:].partition("]")
        if not sep or not rest.startswith(":"):
            raise InitFailed(f"ValueError: Expected ':port' after closing bracket, got: {rest!r}")
        port_text = rest[1:]
    else:
        if addr.count(":") > 1:
            raise InitFailed(
                f"ValueError: Bare IPv6 address without brackets is ambiguous: {addr!r}. "
                f"Use [{addr.rsplit(':', 1)[0]}]:{addr.rsplit(':', 1)[1]} instead."
            )
        host, sep, port_text = addr.partition(":")
        if not sep:
            raise InitFailed(f"ValueError: Missing port in address (expected host:port): {addr!r}")
        if not host:
            raise InitFailed(f"ValueError: Empty host in address: {addr!r}")
    if not port_text.isdigit():
        raise InitFailed(f"ValueError: invalid port in address: {addr!r}")
    port = int(port_text)
    if port > 65535:
        raise InitFailed(f"ValueError: Port out of range (0-65535): {port}")
    return host, port


def _send(sock: socket.socket, msg: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        sock.sendall((json.dumps(msg) + "\n").encode())


def _recv_line(sock: socket.socket, timeout: float | None) -> dict[str, Any] | None:
    """One JSON line, or None when the peer closed or said nothing in time."""
    sock.settimeout(timeout)
    buf = b""
    try:
        while b"\n" not in buf:
            chunk = sock.recv(4096)
            if not chunk:
                return None
            buf += chunk
    except OSError:
        return None
    finally:
        sock.settimeout(None)
    try:
        value = json.loads(buf.split(b"\n", 1)[0])
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class MultiNodeServer(FakeServer):
    def __init__(self, args: Any, argv: list[str]) -> None:
        super().__init__(args, argv)
        self.nnodes = int(args.nnodes)
        self.node_rank = int(args.node_rank or 0)
        self.world = int(args.tp_size or 1) * int(args.pp_size or 1)
        self.per_node = max(self.world // self.nnodes, 1)
        self.first_rank = self.node_rank * self.per_node
        self.timeout = int(args.dist_timeout or DEFAULT_DIST_TIMEOUT)
        self.peers: dict[int, socket.socket] = {}  # node 0: node rank -> connection
        self.store: socket.socket | None = None  # node 0: the listening store
        self.leader: socket.socket | None = None  # nodes >= 1: the connection to node 0
        self.child_extra = {"init_begun": True}
        tp = int(args.tp_size or 1)
        self.sched_logger = Logger(
            args.log_level or "info", f" TP{self.first_rank}" if tp > 1 else ""
        )

    def local_roles(self) -> list[tuple[str, int]]:
        ranks = range(self.first_rank, self.first_rank + self.per_node)
        schedulers = [("scheduler", r) for r in ranks]
        # "Non-zero-rank nodes do not run tokenizer processes" (engine.py): no detokenizer either
        return schedulers + ([("detokenizer", 0)] if self.node_rank == 0 else [])

    # --- start-up

    def fail_init(self, last: str) -> None:
        frames = [
            ("srt/managers/scheduler.py", 6362, "run_scheduler_process",
             "scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, attn_cp_rank, moe_dp_rank, dp_rank)"),
            ("srt/managers/scheduler.py", 536, "init_parallel_runtime", "init_distributed_environment("),
        ]  # fmt: skip
        self.sched_logger.error("Scheduler hit an exception: " + _fake_traceback(frames, last))
        self.log.error("Received sigquit from a child process. It usually means the child failed.")
        self.kill_tree_and_self()

    def spawn_children(self) -> None:
        self.at(1.0)
        self.sched_logger.info("Init parallel begin.")
        try:
            if self.node_rank == 0:
                self.open_store()
            else:
                self.join_store()
        except InitFailed as exc:
            self.fail_init(str(exc))
        super().spawn_children()

    def open_store(self) -> None:
        _, port = parse_addr(self.args.dist_init_addr)
        store = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        store.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            store.bind(("", port))
        except OSError as exc:
            raise InitFailed(
                "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
                f"network address. port: {port}, useIpv6: false, code: -{exc.errno}, name: EADDRINUSE, "
                "message: address already in use"
            ) from None
        store.listen(16)
        self.store = store
        deadline = time.monotonic() + scaled(self.timeout)
        while len(self.peers) < self.nnodes - 1:
            left = deadline - time.monotonic()
            if left <= 0:
                joined = self.per_node * (1 + len(self.peers))
                raise InitFailed(
                    f"torch.distributed.DistStoreError: Timed out after {self.timeout + 1} seconds waiting "
                    f"for clients. {joined}/{self.world} clients joined."
                )
            store.settimeout(min(left, 0.5))
            try:
                conn, _ = store.accept()
            except TimeoutError:
                continue
            self.admit(conn, deadline)
        store.settimeout(None)
        # the store stays open: a node that comes late is refused, as it would break the group
        threading.Thread(target=self.refuse_late, daemon=True).start()

    def admit(self, conn: socket.socket, deadline: float) -> None:
        hello = _recv_line(conn, max(deadline - time.monotonic(), 0.1))
        if hello is None:
            conn.close()
            return
        rank, nnodes = int(hello.get("node_rank", -1)), int(hello.get("nnodes", -1))
        error = self.rank_error(rank, nnodes)
        if error:
            _send(conn, {"error": error})
            conn.close()
            raise InitFailed(f"RuntimeError: {error}")
        _send(conn, {"ok": True})
        self.peers[rank] = conn

    def rank_error(self, rank: int, nnodes: int) -> str | None:
        addr = self.args.dist_init_addr
        if nnodes != self.nnodes:
            return f"a node joined the rendezvous at {addr} with --nnodes {nnodes}; this one has --nnodes {self.nnodes}"
        if not 0 < rank < self.nnodes:
            first = rank * self.per_node
            return (
                f"node_rank {rank} is out of range for --nnodes {self.nnodes}: its global ranks "
                f"{first}-{first + self.per_node - 1} exceed the world size {self.world}"
            )
        if rank in self.peers:
            return f"node_rank {rank} joined the rendezvous at {addr} twice: two nodes were given the same --node-rank"
        return None

    def refuse_late(self) -> None:
        assert self.store is not None
        while True:
            try:
                conn, _ = self.store.accept()
            except OSError:
                return
            hello = _recv_line(conn, 5.0) or {}
            rank = int(hello.get("node_rank", -1))
            error = self.rank_error(rank, int(hello.get("nnodes", self.nnodes))) or (
                f"node_rank {rank} joined the rendezvous at {self.args.dist_init_addr} twice: "
                "two nodes were given the same --node-rank"
            )
            self.sched_logger.error(f"Rendezvous refused a late node: {error}")
            _send(conn, {"error": error})
            conn.close()

    def join_store(self) -> None:
        host, port = parse_addr(self.args.dist_init_addr)
        deadline = time.monotonic() + scaled(self.timeout)
        while True:
            try:
                sock = socket.create_connection((host, port), timeout=1.0)
            except OSError:
                if time.monotonic() >= deadline:
                    raise InitFailed(
                        "torch.distributed.DistNetworkError: The client socket has timed out after "
                        f"{self.timeout}s while trying to connect to ({host}, {port})."
                    ) from None
                time.sleep(max(scaled(1.0), 0.05))
                continue
            _send(sock, {"node_rank": self.node_rank, "nnodes": self.nnodes})
            reply = _recv_line(sock, max(deadline - time.monotonic(), 1.0))
            if reply is None:
                raise InitFailed(
                    f"RuntimeError: Connection closed by peer [{host}]:{port} during the rendezvous"
                )
            if "error" in reply:
                raise InitFailed(f"RuntimeError: {reply['error']}")
            self.leader = sock
            return

    def wait_for_schedulers(self) -> None:
        super().wait_for_schedulers()
        if self.node_rank != 0:
            assert self.leader is not None
            _send(self.leader, {"op": "ready"})
            return
        # node 0's schedulers finish only when every rank has: collectives span all nodes
        for rank, conn in sorted(self.peers.items()):
            msg = _recv_line(conn, scaled(self.timeout))
            if msg is None or msg.get("op") != "ready":
                raise RuntimeError(
                    f"Initialization failed: node_rank {rank} left the process group before it was ready "
                    f"(connection closed by peer, or no word within {self.timeout} s)."
                )

    # --- nodes >= 1

    def _run(self) -> int:
        if self.node_rank == 0:
            return super()._run()
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
            self.log.error(str(exc))
            return 1
        signal.signal(signal.SIGTERM, self.on_follower_sigterm)
        host, port = args.host or "127.0.0.1", int(args.port or 30000)
        self.httpd = _Server((host, port), _health_handler())
        threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        self.log.info(f"Dummy health check server started in background thread at {host}:{port}")
        return self.block_until_leader_stops()

    def on_follower_sigterm(self, signum: int, frame: Any) -> None:
        self.log.info(
            f"SIGTERM received on node_rank {self.node_rank}; waiting for the rank-0 ShutdownReq "
            "broadcast to stop the schedulers."
        )

    def block_until_leader_stops(self) -> int:
        assert self.leader is not None
        while True:
            msg = _recv_line(self.leader, None)
            if msg is not None and msg.get("op") == "shutdown":
                return 0
            if msg is not None and msg.get("op") == "abort":
                self.sched_logger.error(
                    "RuntimeError: node_rank 0 failed during initialization; the process group cannot continue."
                )
                return 1
            if msg is None:
                self.sched_logger.error(
                    "RuntimeError: Connection closed by peer: node_rank 0 is gone; "
                    "the process group cannot continue."
                )
                return 1

    # --- node 0: the shutdown broadcast reaches every node

    def kill_tree(self, include_parent: bool) -> None:
        # past start-up this is ShutdownReq; before it, the group fails with node 0
        op = "shutdown" if self.uvicorn_started else "abort"
        for conn in self.peers.values():
            _send(conn, {"op": op})
        super().kill_tree(include_parent)


def _health_handler() -> type[BaseHTTPRequestHandler]:
    class Health(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "uvicorn"
        sys_version = ""

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _answer(self) -> None:
            path = self.path.split("?", 1)[0]
            code = 200 if path in ("/health", "/health_generate", "/ping") else 404
            body = b"" if code == 200 else b'{"detail":"Not Found"}'
            self.send_response(code)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = _answer

    return Health
