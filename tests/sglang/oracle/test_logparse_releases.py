"""The runtime's log patterns against each release's own format strings.

`sglaunch/runtime/logparse.py` was written from sglang 0.5.23's log lines. Each
row below names the f-string sglang logs (as its syntax tree reads: every
`{...}` a `{}`), the file it is in, a line rendered from it, and the first
release that has it. The first test proves the pattern reads the rendered line;
the second reads each installed release's source (the CPU environments `make
test` builds) and proves the format string is there exactly from that release
on. Where the releases differ (checked on 0.5.19–0.5.23): "Init parallel begin."
and "Capturing prefill shape (...)" first appear in 0.5.21 (0.5.19 and 0.5.20
print neither, so the start-up view has no such phase or progress there); every
other line below is the same in all five.
"""

from __future__ import annotations

import ast
import subprocess
from functools import cache
from pathlib import Path

import pytest

from sglaunch.runtime.logparse import Kind, parse_line
from sglaunch.validators.release_spans import at_least
from tests.releases import release_pythons

T = "[2026-01-01 12:00:00 TP0] "
MR = "srt/model_executor/model_runner.py"
# (kind, file under sglang/, format string, a line rendered from it, first release)
ROWS = [
    (
        Kind.LOAD_BEGIN,
        MR,
        "Load weight begin. avail mem={} GB",
        "Load weight begin. avail mem=78.50 GB",
        "0.5.19",
    ),
    (
        Kind.LOAD_END,
        MR,
        "Load weight end. elapsed={} s, type={}, {}avail mem={} GB, mem usage={} GB.",
        "Load weight end. elapsed=12.34 s, type=LlamaForCausalLM, avail mem=63.10 GB, mem usage=15.40 GB.",
        "0.5.19",
    ),
    (
        Kind.LOAD_END,
        "srt/model_executor/model_runner_components/startup_weight_load.py",
        "Load weight end. Committed real weights after CUDA graph capture in %.2f s "
        "(capture overlap window %.2f s, startup overlap total %.2f s)",
        "Load weight end. Committed real weights after CUDA graph capture in 3.21 s "
        "(capture overlap window 1.00 s, startup overlap total 4.00 s)",
        "0.5.19",
    ),
    (
        Kind.KV_CACHE,
        "srt/mem_cache/memory_pool.py",
        "{} {}. dtype: {}, #tokens: {}, K size: {} GB, V size: {} GB",
        "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 401234, K size: 24.50 GB, V size: 24.50 GB",
        "0.5.19",
    ),
    (
        Kind.POOL_END,
        "srt/mem_cache/kv_cache_configurator.py",
        "Memory pool end. avail mem={} GB",
        "Memory pool end. avail mem=12.00 GB",
        "0.5.19",
    ),
    (
        Kind.GRAPH_BEGIN,
        "srt/model_executor/model_runner_components/cuda_graph_setup.py",
        "Capture {} CUDA graph begin. backend={}, num_tokens={}, avail mem={} GB",
        "Capture decode CUDA graph begin. backend=full, num_tokens=[1, 2, 4], avail mem=11.50 GB",
        "0.5.19",
    ),
    (
        Kind.GRAPH_END,
        "srt/model_executor/model_runner_components/cuda_graph_setup.py",
        "Capture {} CUDA graph end. elapsed={} s, mem usage={} GB, avail mem={} GB.",
        "Capture decode CUDA graph end. elapsed=8.20 s, mem usage=0.80 GB, avail mem=10.70 GB.",
        "0.5.19",
    ),
    (
        Kind.GRAPH_PROGRESS,
        "srt/model_executor/runner/decode_cuda_graph_runner.py",
        "Capturing batches (bs={} avail_mem={} GB)",
        "Capturing batches (bs=16 avail_mem=11.20 GB):  33%|###       | 2/6 [00:02<00:04,  1.00s/it]",
        "0.5.19",
    ),
    (
        Kind.GRAPH_PROGRESS,
        "srt/model_executor/runner/prefill_cuda_graph_runner.py",
        "Capturing prefill shape (num_tokens={} avail_mem={} GB)",
        "Capturing prefill shape (num_tokens=512 avail_mem=11.00 GB):  50%|#####     | 1/2 [00:01<00:01,  1.00s/it]",
        "0.5.21",
    ),
    (
        Kind.SUMMARY,
        "srt/managers/scheduler.py",
        "max_total_num_tokens={}, chunked_prefill_size={}, max_prefill_tokens={}, "
        "max_running_requests={}, context_len={}, {}={} GB",
        "max_total_num_tokens=401234, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        "max_running_requests=2048, context_len=131072, available_gpu_mem=10.50 GB",
        "0.5.19",
    ),
    (
        Kind.INIT,
        "srt/distributed/bootstrap.py",
        "Init parallel begin.",
        "Init parallel begin.",
        "0.5.21",
    ),
    (
        Kind.READY,
        "srt/entrypoints/http_server.py",
        "The server is fired up and ready to roll!",
        "The server is fired up and ready to roll!",
        "0.5.19",
    ),
    (
        Kind.ATTENTION_BACKEND,
        "srt/arg_groups/overrides.py",
        "Attention backend not specified. Use {} backend by default.",
        "Attention backend not specified. Use fa3 backend by default.",
        "0.5.19",
    ),
    (
        Kind.PREFILL,
        "srt/managers/scheduler_components/metrics_reporter.py",
        "Prefill batch{}, #new-seq: {}, #new-token: {}, #cached-token: {}, {}#running-req: {}, "
        "#queue-req: {}, #pending-token: {}, ",
        "Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, "
        "#running-req: 0, #queue-req: 0, #pending-token: 0, ",
        "0.5.19",
    ),
    (
        Kind.DECODE,
        "srt/managers/scheduler_components/metrics_reporter.py",
        "Decode batch{}, #running-req: {}, {}",
        "Decode batch, #running-req: 1, #token: 38, token usage: 0.00, gen throughput (token/s): 9.87, #queue-req: 0",
        "0.5.19",
    ),
]
IDS = [f"{kind}:{fmt[:40]}" for kind, _file, fmt, _line, _since in ROWS]


@pytest.mark.parametrize(("kind", "file", "fmt", "line", "since"), ROWS, ids=IDS)
def test_the_pattern_reads_the_line_the_format_string_prints(
    kind: Kind, file: str, fmt: str, line: str, since: str
) -> None:
    # tqdm's progress bars (the "Capturing ..." lines) print without sglang's log prefix
    event = parse_line(line if line.startswith("Capturing") else T + line)
    assert event is not None and event.kind is kind, (line, event)


@cache
def _sglang_dir(python: str) -> Path:
    code = "import importlib.util as u, os; print(os.path.dirname(u.find_spec('sglang').origin))"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return Path(done.stdout.strip())


@cache
def _formats(path: Path) -> frozenset[str]:
    """Every string and f-string in a file, `{...}` written as `{}`."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.JoinedStr):
            out.add("".join(p.value if isinstance(p, ast.Constant) else "{}" for p in node.values))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.add(node.value)
    return frozenset(out)


@pytest.mark.oracle
@pytest.mark.parametrize("release", list(release_pythons()) or ["none"])
def test_each_release_prints_exactly_these_lines(release: str) -> None:
    pythons = release_pythons()
    assert release in pythons, (
        f"no sglang interpreter for {release} (see tests/sglang/oracle/conftest.py)"
    )
    root = _sglang_dir(pythons[release])
    wrong = []
    for kind, file, fmt, _line, since in ROWS:
        path = root / file
        has = path.exists() and fmt in _formats(path)
        if has != at_least(release, since):
            wrong.append(
                f"{kind} {fmt!r} in {file}: {'present' if has else 'absent'}, expected from {since}"
            )
    assert not wrong, f"sglang {release}'s log lines differ from the table:\n  " + "\n  ".join(
        wrong
    )
