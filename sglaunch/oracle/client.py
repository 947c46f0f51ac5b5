"""The oracle client: a warm sglang worker process, asked one launch line at a time.

Runs in the sglaunch process and never imports torch, sglang or transformers:
the worker (`in_sglang/oracle_worker.py`, run by path under the sglang interpreter) does. Every
fault is a one-line status or answer, never a traceback: sglang missing or of
another version, an environment that cannot import it, a resolution that
hangs (the worker kills that child and stays up), a worker that dies (the
next request starts a new one).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from sglaunch.oracle.answer import OracleAnswer, OracleStatus
from sglaunch.oracle.interpreter import NOT_INSTALLED, find_sglang_python
from sglaunch.oracle.ipc import gpu_payload
from sglaunch.release_range import oracle_refusal
from sglaunch.validators.facts import GpuFacts

WORKER = Path(__file__).resolve().parent.parent / "in_sglang" / "oracle_worker.py"
# the worker enforces the per-request timeout itself; this is how much longer
# the client waits before it decides the worker is stuck and kills it
_BACKSTOP_S = 10.0
_LIVE: weakref.WeakSet[Oracle] = weakref.WeakSet()


@dataclass(frozen=True)
class OracleQuery:
    """One launch to ask sglang about: what `Oracle.resolve` takes, as a value."""

    argv: Sequence[str]
    env: Mapping[str, str] | None
    gpu: GpuFacts
    memory: Mapping[str, Any] | None = None
    cwd: str | None = None


def _request_body(q: OracleQuery) -> dict[str, Any]:
    """The worker's request for one launch (without the id and the timeout)."""
    body: dict[str, Any] = {
        "argv": [str(a) for a in q.argv],
        "env": {str(k): str(v) for k, v in (q.env or {}).items()},
        "gpu": gpu_payload(q.gpu),
    }
    if q.memory is not None:
        body["memory"] = dict(q.memory)
    if q.cwd:
        body["cwd"] = q.cwd
    return body


class _WorkerGone(Exception):
    """The worker closed its stream or missed its deadline."""


class Oracle:
    """sglang's own resolution as a warm, GPU-free dry run.

    One caller at a time (a lock serialises requests). Use as a context
    manager, or call `close()`: the worker's whole process group is killed.
    """

    def __init__(
        self, python: str | None = None, *, timeout: float = 20.0, start_timeout: float = 120.0
    ) -> None:
        self.timeout = timeout
        self.start_timeout = start_timeout
        self._explicit_python = python
        self._lock = threading.RLock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._buf = b""
        self._next_id = 0
        self._status = OracleStatus(available=False, reason="the oracle has not been started")
        self._started_once = False
        _LIVE.add(self)

    # -- lifecycle ---------------------------------------------------------

    @property
    def status(self) -> OracleStatus:
        return self._status

    @property
    def worker_pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def start(self) -> OracleStatus:
        """Start the worker (if it is not running) and run the canary; returns the status."""
        with self._lock:
            return self._ensure_started(retry_failed=True)

    def _ensure_started(self, *, retry_failed: bool) -> OracleStatus:
        """The running worker's status, or a new worker's; the caller holds the lock.

        A worker that died is replaced. One that never came up is retried only
        with `retry_failed` (start()): resolve() runs on every keystroke, and a
        failed start costs seconds.
        """
        if self._proc is not None and self._proc.poll() is None and self._status.available:
            return self._status
        if self._started_once and not self._status.available and not retry_failed:
            return self._status
        self._stop()
        self._started_once = True
        self._status = self._launch()
        if not self._status.available:
            self._stop()
        return self._status

    def close(self) -> None:
        """Kill the worker's process group; safe from any thread, even mid-request."""
        proc = self._proc
        if proc is not None:
            # before the lock: a request in flight holds it until its answer,
            # and killing the worker is what ends that request now
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        with self._lock:
            self._stop()
            if self._status.available:
                self._status = OracleStatus(
                    available=False,
                    reason="the oracle was closed",
                    sglang_version=self._status.sglang_version,
                    python=self._status.python,
                )

    def __enter__(self) -> Oracle:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self._stop()

    # -- asking ------------------------------------------------------------

    def resolve(
        self,
        argv: Sequence[str],
        env: Mapping[str, str] | None,
        gpu: GpuFacts,
        *,
        memory: Mapping[str, Any] | None = None,
        cwd: str | None = None,
    ) -> OracleAnswer:
        """sglang's verdict on `argv` (sglang's server flags) with `env` on `gpu`; relative
        paths in `argv` from `cwd` (default: the worker's own).

        `memory` ({"pre_gib", "weights_bytes", "kv_cache_quant_algo"}) also asks for
        sglang's own KV-pool sizing under that emulated memory (in_sglang/memory_probe.py).
        """
        with self._lock:
            status = self._ensure_started(retry_failed=False)
            if not status.available:
                return OracleAnswer.failed(status.reason, sglang_version=status.sglang_version)
            self._next_id += 1
            request = {
                "id": self._next_id,
                **_request_body(OracleQuery(argv, env, gpu, memory, cwd)),
                "timeout": self.timeout,
            }
            version = self._status.sglang_version
            t0 = time.perf_counter()
            try:
                self._send(request)
                while True:
                    reply = self._read(time.monotonic() + self.timeout + _BACKSTOP_S)
                    if reply.get("id") == request["id"]:
                        break
            except _WorkerGone as gone:
                self._stop()
                return OracleAnswer.failed(
                    f"the oracle worker {gone}; it restarts on the next request",
                    sglang_version=version,
                    worker_died=True,
                )
            return OracleAnswer.from_json(
                reply, sglang_version=version, elapsed_s=round(time.perf_counter() - t0, 4)
            )

    def resolve_many(
        self, queries: Sequence[OracleQuery], *, batch: int = 64
    ) -> list[OracleAnswer]:
        """`resolve` for each query, in order, `batch` launches to a child: one fork for many
        answers, each launch isolated as in a child of its own (the worker's
        `resolve_isolated`). A batch that gets no answer (a launch that hangs or kills its
        process) is asked again one launch at a time, so each answer is what `resolve` gives."""
        out: list[OracleAnswer] = []
        for start in range(0, len(queries), max(1, batch)):
            chunk = queries[start : start + max(1, batch)]
            answers = self._resolve_batch(chunk)
            if answers is None:
                answers = [
                    self.resolve(q.argv, q.env, q.gpu, memory=q.memory, cwd=q.cwd) for q in chunk
                ]
            out.extend(answers)
        return out

    def _resolve_batch(self, chunk: Sequence[OracleQuery]) -> list[OracleAnswer] | None:
        with self._lock:
            status = self._ensure_started(retry_failed=False)
            if not status.available:
                failed = OracleAnswer.failed(status.reason, sglang_version=status.sglang_version)
                return [failed] * len(chunk)
            self._next_id += 1
            request = {
                "id": self._next_id,
                "batch": [_request_body(q) for q in chunk],
                "timeout": self.timeout,
            }
            version = self._status.sglang_version
            t0 = time.perf_counter()
            try:
                self._send(request)
                deadline = time.monotonic() + self.timeout * len(chunk) + _BACKSTOP_S
                while True:
                    reply = self._read(deadline)
                    if reply.get("id") == request["id"]:
                        break
            except _WorkerGone:
                self._stop()
                return None
        answers = reply.get("answers")
        if not isinstance(answers, list) or len(answers) != len(chunk):
            return None
        elapsed = round((time.perf_counter() - t0) / len(chunk), 4)
        return [
            OracleAnswer.from_json(a, sglang_version=version, elapsed_s=elapsed) for a in answers
        ]

    # -- the worker process --------------------------------------------------

    def _launch(self) -> OracleStatus:
        t0 = time.perf_counter()
        found = find_sglang_python(self._explicit_python)
        if found.path is None:
            return OracleStatus(available=False, reason=found.reason or NOT_INSTALLED)
        python = found.path
        args = [python, str(WORKER)]
        if threading.current_thread() is threading.main_thread():
            # PR_SET_PDEATHSIG fires when the *thread* that forked exits, so only
            # the main thread asks for it; stdin EOF and a parent-pid watch cover the rest.
            args.append("--pdeathsig")
        # the worker's stderr: its last line explains a failed start; it lives as
        # long as the worker, so no context manager
        self._stderr = tempfile.TemporaryFile(prefix="sglaunch-oracle-")  # noqa: SIM115
        try:
            self._proc = subprocess.Popen(
                args,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            return OracleStatus(
                available=False, reason=f"cannot run {python}: {exc.strerror or exc}", python=python
            )
        self._buf = b""
        deadline = time.monotonic() + self.start_timeout
        try:
            hello = self._read(deadline)
        except _WorkerGone:
            return OracleStatus(available=False, reason=self._exit_reason(python), python=python)
        if hello.get("event") != "hello":
            return OracleStatus(
                available=False,
                reason=f"{python} did not start the oracle worker (unexpected: {_short(hello)})",
                python=python,
            )
        version = hello.get("sglang_version")
        if not version or not isinstance(version, str):
            return OracleStatus(
                available=False,
                reason=f"sglang is not installed in {python}; run `sglaunch oracle setup`",
                python=python,
            )
        refusal = oracle_refusal(version)
        if refusal:
            return OracleStatus(
                available=False, reason=refusal, sglang_version=version, python=python
            )
        try:
            ready = self._read(deadline)
        except _WorkerGone as gone:
            reason = (
                f"sglang did not import within {self.start_timeout:g} s"
                if "did not answer" in str(gone)
                else self._exit_reason(python)
            )
            return OracleStatus(
                available=False, reason=reason, sglang_version=version, python=python
            )
        if ready.get("event") == "failed":
            return OracleStatus(
                available=False,
                reason=str(ready.get("reason") or "the oracle worker failed to start"),
                sglang_version=version,
                python=python,
            )
        canary = ready.get("canary") or {}
        if not canary.get("canary_ok"):
            return OracleStatus(
                available=False,
                reason=str(canary.get("canary_reason") or "the oracle's canary failed"),
                sglang_version=version,
                python=python,
            )
        return OracleStatus(
            available=True,
            sglang_version=version,
            python=python,
            import_s=ready.get("import_s"),
            start_s=round(time.perf_counter() - t0, 3),
        )

    def _exit_reason(self, python: str) -> str:
        proc = self._proc
        code = None
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = proc.wait(timeout=2)
        tail = ""
        if self._stderr is not None:
            with contextlib.suppress(OSError):
                self._stderr.seek(0)
                lines = [
                    ln
                    for ln in self._stderr.read().decode(errors="replace").splitlines()
                    if ln.strip()
                ]
                tail = lines[-1].strip() if lines else ""
        if code is None:
            return f"{python} did not start the oracle worker within {self.start_timeout:g} s"
        detail = f": {tail}" if tail else ""
        return f"{python} exited before the oracle was ready (status {code}){detail}"[:400]

    def _send(self, obj: Mapping[str, Any]) -> None:
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise _WorkerGone("is not running")
        try:
            proc.stdin.write((json.dumps(obj) + "\n").encode())
            proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise _WorkerGone("is gone") from exc

    def _read(self, deadline: float) -> dict[str, Any]:
        """The worker's next JSON line, by `deadline` (time.monotonic())."""
        proc = self._proc
        if proc is None or proc.stdout is None:
            raise _WorkerGone("is not running")
        fd = proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _WorkerGone("did not answer in time and was stopped")
            try:
                ready, _, _ = select.select([fd], [], [], left)
                chunk = os.read(fd, 1 << 20) if ready else None
            except (OSError, ValueError) as exc:  # the stream was closed under us
                raise _WorkerGone("died") from exc
            if chunk is None:
                continue
            if not chunk:
                raise _WorkerGone("died")
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        try:
            data = json.loads(line)
        except ValueError:
            data = {"event": "garbage", "text": line[:200].decode(errors="replace")}
        return data if isinstance(data, dict) else {"event": "garbage", "text": str(data)[:200]}

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            # EOF on stdin ends the worker cleanly; the group kill makes sure of it
            with contextlib.suppress(OSError):
                if proc.stdin is not None:
                    proc.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.5)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                proc.wait(timeout=5)
            with contextlib.suppress(OSError):
                if proc.stdout is not None:
                    proc.stdout.close()
        if self._stderr is not None:
            with contextlib.suppress(OSError):
                self._stderr.close()
            self._stderr = None
        self._buf = b""


def _short(obj: Any) -> str:
    text = json.dumps(obj) if not isinstance(obj, str) else obj
    return text if len(text) <= 120 else text[:119] + "…"


@atexit.register
def _close_all() -> None:
    for oracle in list(_LIVE):
        with contextlib.suppress(Exception):
            oracle._stop()
