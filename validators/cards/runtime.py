"""Cards for the server's own failures at run time, and the flag changes that fix them.

The patterns are sglang 0.5.23's exact texts (reference/sglang-0.5.23-runtime.md §4), so a
log line or an exception from a real launch finds its card. The order of declaration is
the order of precedence when a log holds several matches: the specific cause (a port in
use, out of memory at KV allocation or during graph capture) before the generic
consequence (a scheduler that died, a failed warm-up).

The two memory failures pull `--mem-fraction-static` in opposite directions, which is
the point of telling them apart: at KV-cache allocation the static pool is too small for
the weights plus any KV cache, so it must grow; during CUDA graph capture (and while
serving) the memory outside the static pool is too small, so the pool must shrink.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from sglaunch.validators.cards import CARDS, Card, card
from sglaunch.validators.findings import Fix

# The highest fraction worth suggesting: above it the CUDA context, NCCL buffers and
# activations have under 5% of the card, which fails on every GPU size.
MAX_FRACTION = 0.95
# The lowest: below it the KV pool of a model that fits is mostly gone anyway.
MIN_FRACTION = 0.5
# sglang's own capture-failure text suggests these (runner_backend_utils/__init__.py:14-21).
SGLANG_SUGGESTED_FRACTION = 0.8
SGLANG_SUGGESTED_MAX_BS = 16

SRC_MEM = "srt/model_executor/pool_configurator.py:94"

PORT_IN_USE = "runtime-port-in-use"
ARGPARSE = "runtime-argparse-error"
KV_OOM = "runtime-kv-cache-oom"
GRAPH_OOM = "runtime-cuda-graph-oom"
SCHEDULER_KILLED = "runtime-scheduler-killed"
WARMUP = "runtime-warmup-failed"
HEALTH = "runtime-health-check-timeout"
SERVING_OOM = "runtime-serving-oom"
CRASH = "runtime-crash-after-ready"
SCHEDULER_EXCEPTION = "runtime-scheduler-exception"
STARTUP_EXIT = "runtime-exited-during-startup"
STARTUP_TIMEOUT = "runtime-startup-timeout"
HEADROOM_LOW = "runtime-gpu-headroom-low"
HEADROOM_HIGH = "runtime-gpu-headroom-high"
METRICS_OFF = "runtime-metrics-off"
NOT_INSTALLED = "runtime-sglang-not-installed"
NO_GPU_RUNTIME = "runtime-no-gpu-runtime"

LAUNCH = "sglang serve --model-path meta-llama/Llama-3.1-8B-Instruct"

card(
    PORT_IN_USE,
    "The server's port is already in use",
    what=(
        "uvicorn could not bind the HTTP port: another process — often an earlier sglang server "
        "that is still running — listens on it. sglang has no pre-check in single-node mode, so "
        "the model loads completely first; then the bind fails and the warm-up thread keeps "
        "polling for about 120 s before the server kills itself."
    ),
    when=(
        "Relaunching while the previous server is still up (a detached run, another terminal, a "
        "container publishing the same port), or two profiles sharing the default port 30000."
    ),
    solutions=(
        "Stop the process that holds the port (sglaunch names it when it can), then launch again.",
        "Or launch on another port: --port N.",
    ),
    before=f"{LAUNCH} --port 30000",
    after=f"{LAUNCH} --port 30001",
    related=(STARTUP_EXIT,),
    patterns=(r"address already in use", r"\[Errno 98\]"),
    ref="uvicorn server.py (bind), sglang srt/entrypoints/http_server.py:467",
    stage="runtime",
)

card(
    ARGPARSE,
    "sglang rejected the command line",
    what=(
        "sglang's argument parser stopped before anything loaded: a flag it does not know, a "
        "missing --model-path, or a value of the wrong type. It exits with status 2 and prints its "
        "usage line."
    ),
    when=(
        "A flag from another sglang version or from vLLM (e.g. --gpu-memory-utilization), a typo, "
        "or a config file whose keys use underscores (tp_size) instead of dashes (tp-size)."
    ),
    solutions=(
        "Read the last line: `sglang serve: error: ...` names the argument.",
        "Run `sglaunch check` on the same flags: it reports every unknown flag with a suggestion.",
        "In --config YAML files, spell keys with dashes, exactly like the flag without `--`.",
    ),
    before=f"{LAUNCH} --gpu-memory-utilization 0.9",
    after=f"{LAUNCH} --mem-fraction-static 0.9",
    related=("unknown-flag",),
    patterns=(r"sglang serve: error:",),
    ref="srt/server_args.py:679",
    stage="runtime",
)

card(
    KV_OOM,
    "Not enough GPU memory for the KV cache",
    what=(
        "After the weights loaded, the static memory pool (--mem-fraction-static of the GPU) had "
        "no room left for the KV cache, so sglang could not size any token slots. The pool must "
        "grow — a HIGHER --mem-fraction-static — or the weights per GPU must shrink."
    ),
    when=(
        "A model that barely fits one GPU, a low --mem-fraction-static copied from a "
        "shared-GPU setup, other processes already using the GPU, or draft weights of "
        "speculative decoding that now count against the same pool."
    ),
    solutions=(
        "Raise --mem-fraction-static (sglaunch computes a value from the message).",
        "Split the weights over more GPUs with a larger --tp-size.",
        "Use a quantized checkpoint or --quantization fp8 to shrink the weights.",
        "Free the GPU: stop other processes that hold memory on it.",
    ),
    before=f"{LAUNCH} --mem-fraction-static 0.5",
    after=f"{LAUNCH} --mem-fraction-static 0.6",
    related=(GRAPH_OOM, SERVING_OOM),
    patterns=(
        r"Not enough memory\. Please try to increase --mem-fraction-static",
        r"Loaded weights leave no GPU memory for the KV cache",
        r"leaves no room for the full KV pool",
    ),
    ref=f"{SRC_MEM}; srt/mem_cache/kv_cache_configurator.py:3043",
    stage="runtime",
)

card(
    GRAPH_OOM,
    "Out of memory while capturing CUDA graphs",
    what=(
        "CUDA graphs are captured after the KV cache is allocated, in the memory OUTSIDE the "
        "static pool. That space ran out: the pool leaves too little, or the largest captured "
        "batch is too big. Unlike an out-of-memory at KV allocation, the fix is a LOWER "
        "--mem-fraction-static, or fewer/smaller graphs."
    ),
    when=(
        "A --mem-fraction-static raised by hand for a bigger KV cache, a large "
        "--cuda-graph-max-bs-decode, or a GPU shared with another process."
    ),
    solutions=(
        "Lower --mem-fraction-static a little (sglang suggests 0.8 or 0.7).",
        "Capture fewer batch sizes: a smaller --cuda-graph-max-bs-decode (e.g. 16).",
        "As a last resort disable decode graphs: --cuda-graph-backend-decode disabled "
        "(a large decode slowdown).",
    ),
    before=f"{LAUNCH} --mem-fraction-static 0.92",
    after=f"{LAUNCH} --mem-fraction-static 0.87",
    related=(KV_OOM, SERVING_OOM),
    patterns=(r"Capture cuda graph failed",),
    ref="srt/model_executor/runner/decode_cuda_graph_runner.py:598",
    stage="runtime",
)

card(
    SCHEDULER_KILLED,
    "A scheduler process was killed during start-up",
    what=(
        "A scheduler (one per GPU rank) died without reporting an error, so the main process "
        "gave up waiting for it. Exit code -9 means SIGKILL — on Linux most often the kernel's "
        "out-of-memory killer, because host RAM ran out while weights were read; a segfault "
        "shows -11 and a faulthandler dump above."
    ),
    when=(
        "Loading a large checkpoint on a host with little RAM, several ranks loading at once, "
        "a container memory limit, or weights read without mmap (--weight-loader-disable-mmap)."
    ),
    solutions=(
        "Check the kernel log: `dmesg -T | grep -i oom` names the killed process.",
        "Free host memory or raise the container's memory limit.",
        "Read weights through mmap (drop --weight-loader-disable-mmap) so pages can be evicted.",
    ),
    before=f"{LAUNCH} --weight-loader-disable-mmap",
    after=LAUNCH,
    related=(SCHEDULER_EXCEPTION,),
    patterns=(r"scheduler died during initialization",),
    ref="srt/entrypoints/engine.py:2002-2040",
    stage="runtime",
)

card(
    WARMUP,
    "The server's warm-up request failed",
    what=(
        "The model loaded and the HTTP server started, but sglang's own first request (GET "
        "/model_info, then one POST /generate) failed, so the server killed itself. The first "
        "real generation broke: usually a kernel or attention-backend problem on this GPU, or "
        "an out-of-memory in the first forward pass."
    ),
    when=(
        "An attention backend or quantization kernel the GPU does not support, a CUDA graph "
        "that replays badly, or a proxy/firewall that blocks the server's call to itself."
    ),
    solutions=(
        "Read the traceback after `warmup error:`: it holds the first request's real error.",
        "Try another attention backend (e.g. --attention-backend triton).",
        "Rule out CUDA graphs with --cuda-graph-backend-decode disabled "
        "--cuda-graph-backend-prefill disabled.",
        "--skip-server-warmup brings the server up for debugging; real requests may fail the same way.",
    ),
    before=f"{LAUNCH} --attention-backend fa4",
    after=f"{LAUNCH} --attention-backend triton",
    related=(SERVING_OOM, PORT_IN_USE),
    patterns=(r"Initialization failed\. warmup error",),
    ref="srt/entrypoints/http_server.py:2384, 2533",
    stage="runtime",
)

card(
    HEALTH,
    "Health checks time out",
    what=(
        "/health sends a one-token generation and waits up to SGLANG_HEALTH_CHECK_TIMEOUT "
        "(20 s) for the detokenizer. It got no answer, so sglang marked itself UnHealthy and "
        "/ready answers 503 until a later health check succeeds. The server is alive but its "
        "scheduler is stuck or saturated."
    ),
    when=(
        "A very long prefill or a full queue starving the health request, a hung collective "
        "between tensor-parallel ranks, or a GPU fault that froze the scheduler."
    ),
    solutions=(
        "Look at the load: many queued requests and full token usage mean saturation; "
        "admit fewer requests with a lower --max-running-requests.",
        "If nothing is running, the scheduler is hung: restart the server and keep the log.",
        "Raise SGLANG_HEALTH_CHECK_TIMEOUT only if long prefills are expected.",
    ),
    before=f"{LAUNCH} --max-running-requests 1024",
    after=f"{LAUNCH} --max-running-requests 512",
    related=(CRASH,),
    patterns=(r"Health check failed\. Server couldn't get a response from detokenizer",),
    ref="srt/entrypoints/http_server.py:792-796",
    stage="runtime",
)

card(
    SERVING_OOM,
    "Out of GPU memory while serving",
    what=(
        "A forward pass needed more memory than was left outside the static pool. Activations "
        "grow with the prefill chunk and the batch, so a pool sized with too little headroom "
        "fails under load. The fix is a LOWER --mem-fraction-static or smaller batches."
    ),
    when=(
        "Long prompts arriving together, a raised --chunked-prefill-size, or "
        "--mem-fraction-static raised until start-up barely succeeded."
    ),
    solutions=(
        "Lower --mem-fraction-static (keep 5–8 GB free after start-up on an 80 GB GPU).",
        "Halve --chunked-prefill-size to cut the activation peak of long prompts.",
        "Admit fewer requests: a lower --max-running-requests.",
    ),
    before=f"{LAUNCH} --mem-fraction-static 0.93",
    after=f"{LAUNCH} --mem-fraction-static 0.88",
    related=(GRAPH_OOM, KV_OOM, HEADROOM_LOW),
    patterns=(r"CUDA out of memory", r"torch\.OutOfMemoryError", r"OutOfMemoryError"),
    ref="torch; sglang srt/managers/scheduler.py:6370",
    stage="runtime",
)

card(
    CRASH,
    "The server crashed after it was ready",
    what=(
        "A child process (a scheduler or the detokenizer) hit an exception while serving and "
        "told the main process, which waited 5 s for diagnostics and then killed the whole tree "
        "(exit -9). The traceback above the SIGQUIT line holds the cause."
    ),
    when=(
        "A kernel fault (illegal memory access), a request that triggers a model bug, or a GPU "
        "error (Xid) under load."
    ),
    solutions=(
        "Read the scheduler traceback: its last line is the real error.",
        "For CUDA errors, rerun with CUDA_LAUNCH_BLOCKING=1 to find the failing kernel.",
        "Restart the server; if the same request crashes it again, report it to sglang with the log.",
    ),
    related=(SERVING_OOM, HEALTH),
    patterns=(r"SIGQUIT received\. signum=None, frame=None\. It usually means one child failed",),
    ref="srt/managers/tokenizer_manager.py:2451-2459, 3392-3506",
    stage="runtime",
)

card(
    SCHEDULER_EXCEPTION,
    "A scheduler raised an error during start-up",
    what=(
        "A scheduler process raised while it loaded the model, sized memory or captured graphs, "
        "and asked the main process to stop; the main process then killed the tree (exit -9). "
        "The last line of the scheduler's traceback is the error."
    ),
    when=(
        "Corrupt or incomplete weights, a model the installed sglang cannot load, or a "
        "configuration problem only the model code detects."
    ),
    solutions=(
        "Read the last line of the traceback: it is sglang's error.",
        "Check the checkpoint files (sizes, a complete download) and the model's sglang support.",
    ),
    related=(SCHEDULER_KILLED, KV_OOM, GRAPH_OOM),
    patterns=(r"Scheduler hit an exception",),
    ref="srt/managers/scheduler.py:6370-6373",
    stage="runtime",
)

card(
    STARTUP_EXIT,
    "The server exited before it was ready",
    what=(
        "The server process ended during start-up with no error sglaunch recognises. The last "
        "traceback of the log, shown with this card, is the best evidence."
    ),
    when="Any start-up failure sglaunch has no specific card for yet.",
    solutions=(
        "Read the last traceback and error lines of server.log in the run directory.",
        "Search sglang's issues for the exact last line.",
    ),
    related=(SCHEDULER_EXCEPTION, ARGPARSE),
    stage="runtime",
)

card(
    STARTUP_TIMEOUT,
    "The server did not become ready in time",
    what=(
        "sglaunch waited the start-up timeout and the server never answered /ready, so it "
        "stopped the server. The log shows the last phase reached: a hang while loading weights "
        "usually means slow storage or a download, one during graph capture a stuck GPU."
    ),
    when=(
        "Weights on a network file system or still downloading from the Hub, a huge checkpoint, "
        "or a process stuck waiting for a GPU another job holds."
    ),
    solutions=(
        "Look at the last phase and progress line: it says where start-up stopped.",
        "Make the weights local (pre-download them, or set HF_HUB_OFFLINE=1 with a full cache).",
        "If start-up is simply slow, allow more time: a longer --startup-timeout for sglaunch.",
    ),
    related=(SCHEDULER_KILLED,),
    patterns=(r"did not become ready within",),
    stage="runtime",
)

card(
    HEADROOM_LOW,
    "Little GPU memory left after start-up",
    what=(
        "available_gpu_mem — the memory left once the weights, the KV pool and the CUDA graphs "
        "are in place — is below the working space a forward pass needs for activations, "
        "sampling and communication buffers. The server runs, but long prompts or large batches "
        "may fail with CUDA out of memory."
    ),
    when="--mem-fraction-static raised by hand, or a large --chunked-prefill-size.",
    solutions=(
        "Lower --mem-fraction-static so about 5–8 GB (on an 80 GB GPU) stay free.",
        "Or lower --chunked-prefill-size to shrink the activation peak.",
    ),
    related=(SERVING_OOM, HEADROOM_HIGH),
    stage="runtime",
)

card(
    HEADROOM_HIGH,
    "GPU memory left idle after start-up",
    what=(
        "available_gpu_mem is well above what serving needs outside the static pool. That memory "
        "could hold more KV cache: more tokens in flight, more concurrent requests."
    ),
    when="A conservative --mem-fraction-static, or one copied from a GPU with less memory.",
    solutions=("Raise --mem-fraction-static a little; keep about 5–8 GB free on an 80 GB GPU.",),
    related=(HEADROOM_LOW, KV_OOM),
    stage="runtime",
)

card(
    METRICS_OFF,
    "Metrics are off: no latency percentiles",
    what=(
        "Without --enable-metrics sglang serves no /metrics, so the monitor reads only /v1/loads "
        "(running and queued requests, token usage). Throughput, cache hit rate and the TTFT and "
        "inter-token latency percentiles need --enable-metrics."
    ),
    when="Always, unless the launch line has --enable-metrics.",
    solutions=("Add --enable-metrics (cheap: counters and histograms in shared memory).",),
    before=LAUNCH,
    after=f"{LAUNCH} --enable-metrics",
    stage="runtime",
)


card(
    NOT_INSTALLED,
    "sglang is not installed for this Python",
    what=(
        "The interpreter sglaunch started the server with cannot import sglang, so the server "
        "exited at once. sglaunch runs `PYTHON -m sglang.launch_server`, with the profile's "
        "interpreter, the one given by --sglang-python or SGLAUNCH_SGLANG_PYTHON, or the current one."
    ),
    when=(
        "sglang lives in another virtual environment or conda env than the one sglaunch runs in, "
        "or only the CPU-only environment of `sglaunch oracle setup` (which checks flags but cannot "
        "serve) is installed."
    ),
    solutions=(
        "Point sglaunch at the Python that has sglang: --sglang-python /path/to/env/bin/python "
        "(or set it in the profile).",
        "Or install sglang into this environment (pip install sglang).",
    ),
    before="sglaunch --profile p --apply",
    after="sglaunch --profile p --apply --sglang-python ~/sglang-env/bin/python",
    related=(STARTUP_EXIT,),
    patterns=(r"No module named '?sglang", r"No module named sglang"),
    ref="python -m sglang.launch_server",
    stage="runtime",
)

card(
    NO_GPU_RUNTIME,
    "This Python has sglang, but not what it needs to serve on a GPU",
    what=(
        "The server stopped while importing: its Python lacks the GPU half of sglang's stack "
        "(triton, a CUDA build of PyTorch) or sees no NVIDIA driver. The CPU-only environment "
        "sglaunch builds for checking flags (`sglaunch oracle setup`, .venv-sglang) is like "
        "this on purpose: it resolves arguments, it cannot serve."
    ),
    when=(
        "Launching with the checking environment, or with an environment where PyTorch was "
        "installed without CUDA, or on a machine with no NVIDIA GPU or driver."
    ),
    solutions=(
        "Launch with the Python of a full sglang install: --sglang-python /path/to/env/bin/python.",
        "On a GPU machine, install sglang with its dependencies there (pip install sglang).",
        "Without a GPU, plan and check only: `sglaunch check` and the editor need no server.",
    ),
    before="SGLAUNCH_SGLANG_PYTHON=.venv-sglang/bin/python sglaunch --profile p --apply",
    after="sglaunch --profile p --apply --sglang-python ~/sglang-env/bin/python",
    related=(NOT_INSTALLED, STARTUP_EXIT),
    patterns=(
        r"No module named '?triton",
        r"Torch not compiled with CUDA enabled",
        r"Found no NVIDIA driver on your system",
        r"No CUDA GPUs are available",
    ),
    ref="sglang/srt/utils/common.py:91 (import triton)",
    stage="runtime",
)


def runtime_cards() -> list[Card]:
    """The runtime cards in order of precedence."""
    # every runtime card is declared above, so they are all registered by now
    return [c for c in CARDS.values() if c.stage == "runtime"]


# --- fixes: flag changes computed from the message and the flags in effect -----------


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def _round_up(value: float) -> float:
    return math.ceil(value * 100 - 1e-9) / 100


def _round_down(value: float) -> float:
    return math.floor(value * 100 + 1e-9) / 100


def current_fraction(message: str, flags: Mapping[str, Any]) -> float | None:
    """The mem_fraction_static in effect: the message's, else the resolved or given one."""
    m = re.search(r"mem[-_]fraction[-_]static[=: ]+([\d.]+)", message)
    if m:
        value = _number(m.group(1).rstrip("."))
        if value is not None:
            return value
    return _number(flags.get("mem_fraction_static"))


def higher_fraction(message: str, flags: Mapping[str, Any]) -> float | None:
    """A fraction that leaves the KV cache room: +0.05, or past sglang's stated minimum.

    None when no sensible fraction is: sglang's minimum itself above `MAX_FRACTION` (a
    capped value would fail again, the same way), or nothing above the current one.
    """
    cur = current_fraction(message, flags)
    m = re.search(r"above ([\d.]+)", message)
    floor = _number(m.group(1).rstrip(".")) if m else None
    candidates = [
        x for x in (cur + 0.05 if cur is not None else None, floor + 0.02 if floor else None) if x
    ]
    if not candidates:
        return None
    target = _round_up(max(candidates))
    if target > MAX_FRACTION:
        # past the cap only sglang's minimum counts: the cap itself, if it is above it
        target = MAX_FRACTION if floor is not None and floor < MAX_FRACTION else 0.0
    if floor is not None and target <= floor:
        return None
    return target if cur is None or target > cur else None


def lower_fraction(message: str, flags: Mapping[str, Any], step: float = 0.05) -> float | None:
    """A fraction that leaves more room outside the pool: -0.05, or sglang's 0.8 when unknown."""
    cur = current_fraction(message, flags)
    if cur is None:
        return SGLANG_SUGGESTED_FRACTION
    target = max(_round_down(cur - step), MIN_FRACTION)
    return target if target < cur else None


def _lower_fraction_fix(message: str, flags: Mapping[str, Any]) -> list[Fix]:
    target = lower_fraction(message, flags)
    if target is None:
        return []
    return [
        Fix(f"Lower --mem-fraction-static to {target:.2f}", set={"mem_fraction_static": target})
    ]


def _int(value: Any) -> int | None:
    number = _number(value)
    return int(number) if number is not None and number > 0 else None


def _fewer_requests_fix(flags: Mapping[str, Any]) -> list[Fix]:
    running = _int(flags.get("max_running_requests"))
    if not running or running <= 1:
        return []
    return [
        Fix(
            f"Admit fewer requests: --max-running-requests {running // 2}",
            set={"max_running_requests": running // 2},
        )
    ]


def runtime_fixes(
    code: str,
    message: str,
    flags: Mapping[str, Any],
    *,
    free_port: int | None = None,
) -> tuple[Fix, ...]:
    """The fixes for a runtime card, in the card's order of solutions.

    `flags` maps sglang dest names to the values in effect (resolved ones where known,
    plus `cuda_graph_max_bs_decode` as observed during capture); `free_port` is a port
    the caller found free, for a port clash.
    """
    fixes: list[Fix] = []
    if code == PORT_IN_USE and free_port:
        fixes.append(Fix(f"Launch on free port {free_port}", set={"port": free_port}))
    elif code == KV_OOM:
        tp = _int(flags.get("tp_size")) or 1
        more_gpus = Fix(
            f"Split the weights over {2 * tp} GPUs (--tp-size {2 * tp})",
            set={"tp_size": 2 * tp},
        )
        target = higher_fraction(message, flags)
        if target is not None:
            fixes.append(
                Fix(
                    f"Raise --mem-fraction-static to {target:.2f}",
                    set={"mem_fraction_static": target},
                )
            )
        # without a fraction that satisfies sglang's minimum, more GPUs come first
        fixes.append(more_gpus)
    elif code == GRAPH_OOM:
        fixes += _lower_fraction_fix(message, flags)
        max_bs = _int(flags.get("cuda_graph_max_bs_decode"))
        smaller = max(max_bs // 2, 1) if max_bs else SGLANG_SUGGESTED_MAX_BS
        if max_bs is None or smaller < max_bs:
            fixes.append(
                Fix(
                    f"Capture decode graphs up to batch {smaller} (--cuda-graph-max-bs-decode {smaller})",
                    set={"cuda_graph_max_bs_decode": smaller},
                )
            )
        fixes.append(
            Fix(
                "Disable decode CUDA graphs (slow decode; last resort)",
                set={"cuda_graph_backend_decode": "disabled"},
            )
        )
    elif code == SERVING_OOM:
        fixes += _lower_fraction_fix(message, flags)
        chunk = _int(flags.get("chunked_prefill_size"))
        if chunk and chunk > 512:
            fixes.append(
                Fix(
                    f"Halve --chunked-prefill-size to {chunk // 2}",
                    set={"chunked_prefill_size": chunk // 2},
                )
            )
        fixes += _fewer_requests_fix(flags)
    elif code == HEALTH:
        fixes += _fewer_requests_fix(flags)
    elif code == SCHEDULER_KILLED:
        if flags.get("weight_loader_disable_mmap"):
            fixes.append(
                Fix("Read weights through mmap again", unset=("weight_loader_disable_mmap",))
            )
    elif code == WARMUP:
        if flags.get("attention_backend") != "triton":
            fixes.append(
                Fix("Try the triton attention backend", set={"attention_backend": "triton"})
            )
        graphs_off = {
            "cuda_graph_backend_decode": "disabled",
            "cuda_graph_backend_prefill": "disabled",
        }
        if any(flags.get(k) != v for k, v in graphs_off.items()):
            # sglang 0.5.23's spelling; --disable-cuda-graph is deprecated
            fixes.append(Fix("Rule out CUDA graphs (decode and prefill)", set=graphs_off))
    return tuple(fixes)
