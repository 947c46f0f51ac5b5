"""The log parser on sglang 0.5.23's own lines (reference §1), and line splitting."""

from __future__ import annotations

import pytest

from sglaunch.runtime.lines import MAX_PARTIAL, LineSplitter
from sglaunch.runtime.logparse import Access, DecodeBatch, Kind, LoadEnd, batch_fields, parse_line


def test_prefix_tolerates_rank_tags_and_milliseconds() -> None:
    for line in (
        "[2025-06-01 12:00:00] Load weight begin. avail mem=78.50 GB",
        "[2025-06-01 12:00:00.123] Load weight begin. avail mem=78.50 GB",
        "[2025-06-01 12:00:00 TP1] Load weight begin. avail mem=78.50 GB",
        "[2025-06-01 12:00:00.123 DP0 PP1 ATTN_CP1 MOE_DP0 TP3 EP3] Load weight begin. avail mem=78.50 GB",
    ):
        ev = parse_line(line)
        assert ev is not None and ev.kind is Kind.LOAD_BEGIN
        assert ev.avail_mem_gb == 78.5
    assert parse_line("[2025-06-01 12:00:00 TP1] Init parallel begin.").tags == "TP1"


def test_load_weight_end_with_and_without_quantization() -> None:
    ev = parse_line(
        "[2025-06-01 12:00:10] Load weight end. elapsed=8.00 s, type=LlamaForCausalLM, "
        "avail mem=63.40 GB, mem usage=15.10 GB."
    )
    assert ev.kind is Kind.LOAD_END
    assert ev == LoadEnd(
        elapsed_s=8.0,
        model_class="LlamaForCausalLM",
        quant=None,
        avail_mem_gb=63.4,
        mem_usage_gb=15.1,
    )
    ev = parse_line(
        "[2025-06-01 12:00:10 TP0] Load weight end. elapsed=31.20 s, type=DeepseekV3ForCausalLM, "
        "quant=fp8, fmt=e4m3, avail mem=20.10 GB, mem usage=58.00 GB."
    )
    assert ev.quant == "quant=fp8, fmt=e4m3" and ev.mem_usage_gb == 58.0
    ev = parse_line(
        "[2025-06-01 12:00:10] Load weight end. Committed real weights after CUDA graph capture in 4.10 s "
        "(capture overlap window 3.00 s, startup overlap total 5.00 s)"
    )
    assert ev.kind is Kind.LOAD_END and ev.elapsed_s == 4.1


def test_kv_cache_lines_both_pool_shapes() -> None:
    ev = parse_line(
        "[2025-06-01 12:00:11] KV Cache is allocated. dtype: torch.bfloat16, #tokens: 500000, "
        "K size: 26.70 GB, V size: 26.70 GB"
    )
    assert ev.kind is Kind.KV_CACHE
    assert (ev.tokens, ev.dtype, ev.size_gb) == (
        500000,
        "torch.bfloat16",
        53.4,
    )
    ev = parse_line(
        "[2025-06-01 12:00:11] Draft KV Cache VA upper bound. dtype: torch.float8_e4m3fn, #tokens: 1200, KV size: 0.50 GB"
    )
    assert ev.label == "Draft" and ev.size_gb == 0.5


def test_cuda_graph_capture_begin_progress_end() -> None:
    begin = parse_line(
        "[2025-06-01 12:00:12] Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, avail mem=9.60 GB"
    )
    assert begin.kind is Kind.GRAPH_BEGIN
    assert (begin.what, begin.backend, begin.avail_mem_gb) == (
        "target decode",
        "full",
        9.6,
    )
    prefill = parse_line(
        "[2025-06-01 12:00:11] Capture target prefill CUDA graph begin. backend=breakable, "
        "num_tokens=[512, 1024, 2048], avail mem=9.70 GB"
    )
    assert prefill.what == "target prefill" and prefill.backend == "breakable"
    bar = parse_line(
        "Capturing batches (bs=16 avail_mem=9.45 GB):  33%|███       | 2/6 [00:02<00:04,  1.00s/it]"
    )
    assert bar.kind is Kind.GRAPH_PROGRESS
    assert (bar.bs, bar.done, bar.total) == (16, 2, 6)
    shape = parse_line(
        "Capturing prefill shape (num_tokens=8192 avail_mem=9.70 GB):   0%|          | 0/5 [00:00<?, ?it/s]"
    )
    assert shape.what == "prefill" and shape.num_tokens == 8192
    end = parse_line(
        "[2025-06-01 12:00:18] Capture target decode CUDA graph end. bs=[1, 2, 4, 8, 16, 32], elapsed=6.00 s, "
        "mem usage=0.80 GB, avail mem=8.80 GB."
    )
    assert end.kind is Kind.GRAPH_END
    assert end.bs == (1, 2, 4, 8, 16, 32) and end.elapsed_s == 6.0
    assert end.mem_usage_gb == 0.8 and end.avail_mem_gb == 8.8


@pytest.mark.parametrize(
    ("device", "key"), [("gpu", "available_gpu_mem"), ("cpu", "available_cpu_mem")]
)
def test_startup_summary(device: str, key: str) -> None:
    ev = parse_line(
        "[2025-06-01 12:00:18 TP0] max_total_num_tokens=500000, chunked_prefill_size=-1, max_prefill_tokens=16384, "
        f"max_running_requests=2048, context_len=32768, {key}=8.80 GB"
    )
    assert ev.kind is Kind.SUMMARY
    assert ev.max_total_num_tokens == 500000 and ev.chunked_prefill_size == -1
    assert ev.available_mem_gb == 8.8 and ev.device == device


def test_batch_lines_plain_hybrid_and_forward_iters() -> None:
    ev = parse_line(
        "[2025-06-01 12:01:00] Decode batch, #running-req: 3, #token: 1234, token usage: 0.01, cuda graph: True, "
        "gen throughput (token/s): 456.78, #queue-req: 0"
    )
    assert ev.kind is Kind.DECODE
    assert ev == DecodeBatch(
        running=3, queued=0, tokens=1234, token_usage=0.01, gen_throughput=456.78
    )
    ev = parse_line(
        "[2025-06-01 12:01:00 DP1 TP0] Decode batch [4040], #running-req: 7, #full token: 900, full token usage: 0.20, "
        "#swa token: 300, swa token usage: 0.45, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 2"
    )
    assert ev.token_usage == 0.45 and ev.queued == 2 and ev.tokens is None
    ev = parse_line(
        "[2025-06-01 12:00:09] Prefill batch, #new-seq: 1, #new-token: 7, #cached-token: 0, token usage: 0.00, "
        "#running-req: 0, #queue-req: 0, #pending-token: 0, cuda graph: False, input throughput (token/s): 0.25"
    )
    assert ev.kind is Kind.PREFILL
    assert (ev.new_seq, ev.new_tokens, ev.running) == (1, 7, 0)
    assert batch_fields("Decode batch, a: 1, b: x")["b"] == "x"


def test_uvicorn_lines_ready_and_errors() -> None:
    up = parse_line(
        "[2025-06-01 12:00:19] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)"
    )
    assert up.kind is Kind.SERVER_UP and up.url == "http://127.0.0.1:30000"
    access = parse_line(
        '[2025-06-01 12:00:19] INFO:     127.0.0.1:54321 - "POST /generate HTTP/1.1" 200 OK'
    )
    assert access == Access(method="POST", path="/generate", status=200)
    assert (
        parse_line("[2025-06-01 12:00:20] The server is fired up and ready to roll!").kind
        is Kind.READY
    )
    bind = parse_line(
        "[2025-06-01 12:00:19] ERROR:    [Errno 98] error while attempting to bind on address "
        "('127.0.0.1', 30000): address already in use"
    )
    assert bind.kind is Kind.ERROR
    assert (
        parse_line(
            "[2025-06-01 12:00:02] Scheduler hit an exception: Traceback (most recent call last):"
        ).kind
        is Kind.ERROR
    )
    assert parse_line("Traceback (most recent call last):").kind is Kind.TRACEBACK
    assert parse_line("sglang serve: error: unrecognized arguments: --foo").kind is Kind.ARGPARSE
    health = parse_line(
        "[2025-06-01 12:05:00] Health check failed. Server couldn't get a response from detokenizer for last 20 "
        "seconds. tic start time: 12:04:40. last_heartbeat time: 12:04:40"
    )
    assert health.kind is Kind.HEALTH_FAILED
    assert parse_line("[2025-06-01 12:00:00] something else entirely") is None
    assert parse_line('  File "x.py", line 1, in <module>') is None


def test_splitter_breaks_on_carriage_returns_and_across_reads() -> None:
    s = LineSplitter()
    bar = "\rLoading safetensors checkpoint shards:   0% Completed | 0/4 [00:00<?, ?it/s]\rLoading safe"
    assert s.feed(bar.encode()) == [
        "Loading safetensors checkpoint shards:   0% Completed | 0/4 [00:00<?, ?it/s]"
    ]
    assert s.feed(b"tensors checkpoint shards:  25% Completed | 1/4\n[ts] next\r") == [
        "Loading safetensors checkpoint shards:  25% Completed | 1/4",
        "[ts] next",
    ]
    assert s.feed(b"\nlast") == []  # "\r" then "\n" across two reads: one break, no empty line
    assert s.flush() == ["last"]


def test_splitter_keeps_multibyte_characters_whole() -> None:
    s = LineSplitter()
    data = "█▋ done\n".encode()
    assert s.feed(data[:1]) == []
    assert s.feed(data[1:]) == ["█▋ done"]


def test_splitter_bounds_a_line_without_breaks() -> None:
    s = LineSplitter()
    out = s.feed(b"x" * (MAX_PARTIAL + 10))
    assert len(out) == 1 and len(out[0]) == MAX_PARTIAL + 10
    assert s.flush() == []
