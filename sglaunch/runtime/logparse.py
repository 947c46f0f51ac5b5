"""sglang 0.5.23's log lines, classified (reference/sglang-0.5.23-runtime.md §1).

One call per line, so a busy server (thousands of `Decode batch` lines a second) must
cost little: each line is tested against a few `startswith` checks before any regex
runs. Rank tags (` TP1`, ` DP0 TP3`) and `SGLANG_LOG_MS` milliseconds are tolerated.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar

_PREFIX = re.compile(
    r"^\[(?P<ts>\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:\.\d{3})?"
    r"(?P<tags>(?: (?:DP|PP|ATTN_CP|MOE_DP|TP|EP)\d+)*)\] (?P<msg>.*)$",
    re.DOTALL,
)
_LEVEL = re.compile(r"^(INFO|WARNING|ERROR|DEBUG|CRITICAL):\s+")
_LOAD_BEGIN = re.compile(r"Load weight begin\. avail mem=(?P<mem>[\d.]+) GB")
_LOAD_END = re.compile(
    r"Load weight end\. elapsed=(?P<t>[\d.]+) s, type=(?P<cls>\w+), "
    r"(?:(?P<quant>quant=[^,]+(?:, \w+=[^,]+)*), )?avail mem=(?P<avail>[\d.]+) GB, "
    r"mem usage=(?P<use>[\d.]+) GB\."
)
_LOAD_END_OVERLAP = re.compile(
    r"Load weight end\. Committed real weights after CUDA graph capture in (?P<t>[\d.]+) s"
)
_KV = re.compile(
    r"(?:(?P<label>\S+) )?KV Cache (?:is allocated|VA upper bound)\. dtype: (?P<dtype>\S+), "
    r"#tokens: (?P<tokens>\d+), (?:K size: (?P<k>[\d.]+) GB, V size: (?P<v>[\d.]+) GB|KV size: (?P<kv>[\d.]+) GB)"
)
_POOL_END = re.compile(r"Memory pool end\. avail mem=(?P<mem>[\d.]+) GB")
_CAPTURE = re.compile(
    r"Capture (?P<what>.+?) (?:CUDA|CPU|NPU|XPU) graph (?P<phase>begin|end)\.(?P<rest>.*)"
)
_BACKEND = re.compile(r"backend=(\w+)")
_BS_LIST = re.compile(r"bs=\[([\d, ]*)\]")
_ELAPSED = re.compile(r"elapsed=([\d.]+) s")
_MEM_USAGE = re.compile(r"mem usage=([\d.]+) GB")
_AVAIL = re.compile(r"avail mem=([\d.]+) GB")
_BATCHES = re.compile(r"Capturing batches \(bs=(?P<bs>\d+) avail_mem=(?P<mem>[\d.]+) GB\)")
_PREFILL_SHAPE = re.compile(
    r"Capturing prefill shape \(num_tokens=(?P<n>\d+) avail_mem=(?P<mem>[\d.]+) GB\)"
)
_BAR = re.compile(r"\|\s*(?P<n>\d+)/(?P<total>\d+) \[")
_SHARDS = re.compile(
    r"Loading safetensors checkpoint shards:\s+(?P<pct>\d+)% Completed \| (?P<n>\d+)/(?P<total>\d+)"
)
_SUMMARY = re.compile(
    r"max_total_num_tokens=(?P<max_total>\d+), chunked_prefill_size=(?P<chunk>-?\d+), "
    r"max_prefill_tokens=(?P<maxp>\d+), max_running_requests=(?P<maxr>\d+), context_len=(?P<ctx>\d+), "
    r"available_(?P<dev>gpu|cpu)_mem=(?P<mem>[\d.]+) GB"
)
_TIMING = re.compile(r"(\w+)=([\d.]+)")
_URL = re.compile(r"Uvicorn running on (?P<url>\S+) \(Press CTRL\+C to quit\)")
_ACCESS = re.compile(
    r'^(?P<client>\S+) - "(?P<method>[A-Z]+) (?P<path>\S+) HTTP/[\d.]+" (?P<status>\d{3})'
)

# Lines that mean something went wrong, in the order they are tested.
_ERROR_MARKS = (
    "Scheduler hit an exception",
    "DetokenizerManager hit an exception",
    "TokenizerManager hit an exception",
    "DataParallelController hit an exception",
    "Received sigquit from a child process",
    "SIGQUIT received.",
    "Initialization failed.",
    "error while attempting to bind",
    "crashed with exit code",
    "watchdog timeout",
    "Signal SIGTERM received while health check failed",
)


class Kind(StrEnum):
    SERVER_ARGS = "server_args"
    ATTENTION_BACKEND = "attention_backend"
    INIT = "init"
    LOAD_BEGIN = "load_begin"
    LOAD_PROGRESS = "load_progress"
    LOAD_END = "load_end"
    KV_CACHE = "kv_cache"
    POOL_END = "pool_end"
    GRAPH_BEGIN = "graph_begin"
    GRAPH_PROGRESS = "graph_progress"
    GRAPH_END = "graph_end"
    SUMMARY = "summary"
    STARTUP_TIMINGS = "startup_timings"
    SERVER_UP = "server_up"
    ACCESS = "access"
    READY = "ready"
    PREFILL = "prefill"
    DECODE = "decode"
    HEALTH_FAILED = "health_failed"
    ERROR = "error"
    TRACEBACK = "traceback"
    ARGPARSE = "argparse"


@dataclass(frozen=True, slots=True)
class _Event:
    """A classified log line; each kind its own type with its own fields."""

    kind: ClassVar[Kind]
    tags: str = ""  # the rank tags (`TP1`, `DP0 TP3`)


@dataclass(frozen=True, slots=True)
class ServerArgs(_Event):
    kind: ClassVar[Kind] = Kind.SERVER_ARGS
    text: str = ""


@dataclass(frozen=True, slots=True)
class AttentionBackend(_Event):
    kind: ClassVar[Kind] = Kind.ATTENTION_BACKEND
    backend: str | None = None
    msg: str = ""


@dataclass(frozen=True, slots=True)
class InitParallel(_Event):
    kind: ClassVar[Kind] = Kind.INIT


@dataclass(frozen=True, slots=True)
class LoadBegin(_Event):
    kind: ClassVar[Kind] = Kind.LOAD_BEGIN
    avail_mem_gb: float | None = None


@dataclass(frozen=True, slots=True)
class LoadProgress(_Event):
    kind: ClassVar[Kind] = Kind.LOAD_PROGRESS
    done: int = 0
    total: int = 0


@dataclass(frozen=True, slots=True)
class LoadEnd(_Event):
    kind: ClassVar[Kind] = Kind.LOAD_END
    elapsed_s: float | None = None
    model_class: str | None = None
    quant: str | None = None
    avail_mem_gb: float | None = None
    mem_usage_gb: float | None = None


@dataclass(frozen=True, slots=True)
class KvCacheAllocated(_Event):
    kind: ClassVar[Kind] = Kind.KV_CACHE
    label: str | None = None
    dtype: str = ""
    tokens: int = 0
    k_gb: float | None = None
    v_gb: float | None = None
    size_gb: float = 0.0


@dataclass(frozen=True, slots=True)
class PoolEnd(_Event):
    kind: ClassVar[Kind] = Kind.POOL_END
    avail_mem_gb: float | None = None


@dataclass(frozen=True, slots=True)
class _Capture(_Event):
    what: str = ""
    backend: str | None = None
    bs: tuple[int, ...] | None = None
    elapsed_s: float | None = None
    mem_usage_gb: float | None = None
    avail_mem_gb: float | None = None


@dataclass(frozen=True, slots=True)
class GraphBegin(_Capture):
    kind: ClassVar[Kind] = Kind.GRAPH_BEGIN


@dataclass(frozen=True, slots=True)
class GraphEnd(_Capture):
    kind: ClassVar[Kind] = Kind.GRAPH_END


@dataclass(frozen=True, slots=True)
class GraphProgress(_Event):
    kind: ClassVar[Kind] = Kind.GRAPH_PROGRESS
    what: str = ""  # "decode" or "prefill"
    bs: int | None = None
    num_tokens: int | None = None
    avail_mem_gb: float | None = None
    done: int | None = None
    total: int | None = None


@dataclass(frozen=True, slots=True)
class Summary(_Event):
    """scheduler.py's start-up line: the capacity sglang settled on."""

    kind: ClassVar[Kind] = Kind.SUMMARY
    max_total_num_tokens: int = 0
    chunked_prefill_size: int = 0
    max_prefill_tokens: int = 0
    max_running_requests: int = 0
    context_len: int = 0
    available_mem_gb: float = 0.0
    device: str = "gpu"


@dataclass(frozen=True, slots=True)
class StartupTimings(_Event):
    kind: ClassVar[Kind] = Kind.STARTUP_TIMINGS
    timings: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ServerUp(_Event):
    kind: ClassVar[Kind] = Kind.SERVER_UP
    url: str | None = None


@dataclass(frozen=True, slots=True)
class Access(_Event):
    kind: ClassVar[Kind] = Kind.ACCESS
    method: str = ""
    path: str = ""
    status: int = 0


@dataclass(frozen=True, slots=True)
class Ready(_Event):
    kind: ClassVar[Kind] = Kind.READY


@dataclass(frozen=True, slots=True)
class PrefillBatch(_Event):
    kind: ClassVar[Kind] = Kind.PREFILL
    new_seq: int | None = None
    new_tokens: int | None = None
    cached_tokens: int | None = None
    running: int | None = None
    queued: int | None = None
    token_usage: float | None = None


@dataclass(frozen=True, slots=True)
class DecodeBatch(_Event):
    kind: ClassVar[Kind] = Kind.DECODE
    running: int | None = None
    queued: int | None = None
    tokens: int | None = None
    token_usage: float | None = None
    gen_throughput: float | None = None


@dataclass(frozen=True, slots=True)
class HealthFailed(_Event):
    kind: ClassVar[Kind] = Kind.HEALTH_FAILED
    msg: str = ""


@dataclass(frozen=True, slots=True)
class ErrorLine(_Event):
    kind: ClassVar[Kind] = Kind.ERROR
    mark: str = ""
    msg: str = ""


@dataclass(frozen=True, slots=True)
class TracebackStart(_Event):
    kind: ClassVar[Kind] = Kind.TRACEBACK
    msg: str = ""


@dataclass(frozen=True, slots=True)
class ArgparseError(_Event):
    kind: ClassVar[Kind] = Kind.ARGPARSE
    msg: str = ""


LogEvent = (
    ServerArgs
    | AttentionBackend
    | InitParallel
    | LoadBegin
    | LoadProgress
    | LoadEnd
    | KvCacheAllocated
    | PoolEnd
    | GraphBegin
    | GraphEnd
    | GraphProgress
    | Summary
    | StartupTimings
    | ServerUp
    | Access
    | Ready
    | PrefillBatch
    | DecodeBatch
    | HealthFailed
    | ErrorLine
    | TracebackStart
    | ArgparseError
)


def _f(text: str | None) -> float | None:
    return float(text) if text not in (None, "") else None


def batch_fields(msg: str) -> dict[str, str]:
    """`Decode batch, #running-req: 3, token usage: 0.01, ...` as a dict of its fields."""
    out: dict[str, str] = {}
    for part in msg.split(", "):
        key, sep, value = part.partition(": ")
        if sep:
            out[key] = value
    return out


def _usage(fields: dict[str, str]) -> float | None:
    # hybrid pools print several usages; sglang's own gauge reports the largest
    values = [float(v) for k, v in fields.items() if k.endswith("usage") and _is_number(v)]
    return max(values) if values else None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _int(fields: dict[str, str], key: str) -> int | None:
    value = fields.get(key)
    return int(value) if value is not None and value.isdigit() else None


def _bar_progress(line: str) -> tuple[int, int] | None:
    m = _BAR.search(line)
    return (int(m.group("n")), int(m.group("total"))) if m else None


def strip_prefix(line: str) -> str:
    """A log line's message: without sglang's `[time TAGS] ` prefix and uvicorn's `LEVEL:`."""
    m = _PREFIX.match(line) if line.startswith("[") else None
    if m is None:
        return line
    msg = m.group("msg")
    level = _LEVEL.match(msg)
    return msg[level.end() :] if level else msg


def parse_line(line: str) -> LogEvent | None:
    """The meaning of one log line, or None for a line the monitor has no use for."""
    m = _PREFIX.match(line) if line.startswith("[") else None
    if m is None:
        return _parse_raw(line)
    tags = m.group("tags").strip()
    msg = m.group("msg")
    level = _LEVEL.match(msg)
    if level is not None:
        return _parse_uvicorn(msg[level.end() :], level.group(1), tags)
    return _parse_sglang(msg, tags)


def _parse_sglang(msg: str, tags: str) -> LogEvent | None:
    c = msg[:1]
    if c == "D" and msg.startswith("Decode batch"):
        fields = batch_fields(msg)
        gen = fields.get("gen throughput (token/s)")
        return DecodeBatch(
            tags,
            running=_int(fields, "#running-req"),
            queued=_int(fields, "#queue-req"),
            tokens=_int(fields, "#token"),
            token_usage=_usage(fields),
            gen_throughput=float(gen) if gen and _is_number(gen) else None,
        )
    if c == "P" and msg.startswith("Prefill batch"):
        fields = batch_fields(msg)
        return PrefillBatch(
            tags,
            new_seq=_int(fields, "#new-seq"),
            new_tokens=_int(fields, "#new-token"),
            cached_tokens=_int(fields, "#cached-token"),
            running=_int(fields, "#running-req"),
            queued=_int(fields, "#queue-req"),
            token_usage=_usage(fields),
        )
    if msg.startswith("The server is fired up and ready to roll!"):
        return Ready(tags)
    if msg.startswith("server_args="):
        return ServerArgs(tags, text=msg[len("server_args=") :])
    if msg.startswith("Attention backend not specified."):
        m = re.search(r"Use (\S+) backend by default", msg)
        return AttentionBackend(tags, backend=m.group(1) if m else None, msg=msg)
    if msg.startswith("Init parallel begin") or msg.startswith("Init parallel ends"):
        return InitParallel(tags)
    if msg.startswith("Load weight begin"):
        m = _LOAD_BEGIN.match(msg)
        return LoadBegin(tags, avail_mem_gb=_f(m.group("mem")) if m else None)
    if msg.startswith("Load weight end"):
        m = _LOAD_END.match(msg)
        if m:
            return LoadEnd(
                tags,
                elapsed_s=float(m.group("t")),
                model_class=m.group("cls"),
                quant=m.group("quant"),
                avail_mem_gb=float(m.group("avail")),
                mem_usage_gb=float(m.group("use")),
            )
        o = _LOAD_END_OVERLAP.match(msg)
        return LoadEnd(tags, elapsed_s=_f(o.group("t")) if o else None)
    if "KV Cache " in msg and "#tokens:" in msg:
        m = _KV.search(msg)
        if m:
            k, v, kv = _f(m.group("k")), _f(m.group("v")), _f(m.group("kv"))
            return KvCacheAllocated(
                tags,
                label=m.group("label"),
                dtype=m.group("dtype"),
                tokens=int(m.group("tokens")),
                k_gb=k,
                v_gb=v,
                size_gb=kv if kv is not None else (k or 0.0) + (v or 0.0),
            )
    if msg.startswith("Memory pool end"):
        m = _POOL_END.match(msg)
        return PoolEnd(tags, avail_mem_gb=_f(m.group("mem")) if m else None)
    if c == "C" and msg.startswith("Capture "):
        m = _CAPTURE.match(msg)
        if m:
            rest = m.group("rest")
            backend = _BACKEND.search(rest)
            bs = _BS_LIST.search(rest)
            elapsed = _ELAPSED.search(rest)
            usage = _MEM_USAGE.search(rest)
            avail = _AVAIL.search(rest)
            cls = GraphBegin if m.group("phase") == "begin" else GraphEnd
            return cls(
                tags,
                what=m.group("what"),
                backend=backend.group(1) if backend else None,
                bs=tuple(int(x) for x in bs.group(1).split(",") if x.strip()) if bs else None,
                elapsed_s=float(elapsed.group(1)) if elapsed else None,
                mem_usage_gb=float(usage.group(1)) if usage else None,
                avail_mem_gb=float(avail.group(1)) if avail else None,
            )
    if msg.startswith("max_total_num_tokens="):
        m = _SUMMARY.match(msg)
        if m:
            return Summary(
                tags,
                max_total_num_tokens=int(m.group("max_total")),
                chunked_prefill_size=int(m.group("chunk")),
                max_prefill_tokens=int(m.group("maxp")),
                max_running_requests=int(m.group("maxr")),
                context_len=int(m.group("ctx")),
                available_mem_gb=float(m.group("mem")),
                device=m.group("dev"),
            )
    if msg.startswith("Engine startup timings"):
        return StartupTimings(tags, timings={k: float(v) for k, v in _TIMING.findall(msg)})
    if msg.startswith("Health check failed."):
        return HealthFailed(tags, msg=msg)
    for mark in _ERROR_MARKS:
        if mark in msg:
            return ErrorLine(tags, mark=mark, msg=msg)
    return None


def _parse_uvicorn(msg: str, level: str, tags: str) -> LogEvent | None:
    if msg[:1].isdigit() or msg.startswith("["):
        m = _ACCESS.match(msg)
        if m:
            return Access(
                tags,
                method=m.group("method"),
                path=m.group("path"),
                status=int(m.group("status")),
            )
    if msg.startswith("Uvicorn running on"):
        m = _URL.match(msg)
        return ServerUp(tags, url=m.group("url") if m else None)
    if level == "ERROR":
        return ErrorLine(tags, mark="uvicorn", msg=msg)
    return None


def _parse_raw(line: str) -> LogEvent | None:
    """Lines without sglang's prefix: tqdm bars, tracebacks, argparse."""
    c = line[:1]
    if c == "L" and line.startswith("Loading safetensors checkpoint shards"):
        m = _SHARDS.match(line)
        if m:
            return LoadProgress(done=int(m.group("n")), total=int(m.group("total")))
    elif c == "C" and line.startswith("Capturing batches"):
        m = _BATCHES.match(line)
        bar = _bar_progress(line)
        if m:
            return GraphProgress(
                what="decode",
                bs=int(m.group("bs")),
                avail_mem_gb=float(m.group("mem")),
                done=bar[0] if bar else None,
                total=bar[1] if bar else None,
            )
    elif c == "C" and line.startswith("Capturing prefill shape"):
        m = _PREFILL_SHAPE.match(line)
        bar = _bar_progress(line)
        if m:
            return GraphProgress(
                what="prefill",
                num_tokens=int(m.group("n")),
                avail_mem_gb=float(m.group("mem")),
                done=bar[0] if bar else None,
                total=bar[1] if bar else None,
            )
    elif c == "T" and line.startswith("Traceback (most recent call last):"):
        return TracebackStart(msg=line)
    elif c == "s" and line.startswith("sglang serve: error:"):
        return ArgparseError(msg=line)
    return None
