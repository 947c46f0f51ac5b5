"""The memory defaults that differ between the supported releases, each case citing the
release's own line (paths relative to sglang/srt/ in that release's wheel). The
differential test runs the whole matrix against each release's code where its CPU
environment is built (make test: 0.5.19, 0.5.21 and 0.5.23)."""

from __future__ import annotations

import pytest

from sglaunch.validators.memory.knobs import (
    GraphSettings,
    ReserveInputs,
    default_reserve,
    gpu_tier,
    prefill_graph_max_bs,
)
from sglaunch.validators.memory.plan import plan_memory
from sglaunch.validators.memory.resolve import resolve_knobs
from tests.conftest import make_input

RTX5090 = 32607


@pytest.mark.parametrize(
    ("release", "tp", "chunk", "bs"),
    [
        # 0.5.19 arg_groups/memory_hook.py:76-87: the 20-35 GiB tier was chunk 2048, max_bs 24/80
        ("0.5.19", 1, 2048, 24),
        ("0.5.19", 4, 2048, 80),
        # 0.5.20 memory_hook.py:102-117 raised it to 4096, 48/160 (kept through 0.5.23)
        ("0.5.20", 1, 4096, 48),
        ("0.5.23", 4, 4096, 160),
    ],
)
def test_the_rtx5090_tier_per_release(release: str, tp: int, chunk: int, bs: int) -> None:
    tier = gpu_tier(RTX5090, tp, release)
    assert (tier.chunked_prefill_size, tier.decode_max_bs) == (chunk, bs)


@pytest.mark.parametrize(("release", "mfs"), [("0.5.19", 0.88), ("0.5.20", 0.95), (None, 0.95)])
def test_unknown_gpu_memory_default_per_release(release: str | None, mfs: float) -> None:
    # 0.5.19 memory_hook.py:263-267 (else 0.88); 0.5.20 memory_hook.py:330-334 (else 0.95)
    inputs = ReserveInputs(None, 1, 1, 4096, 16384, GraphSettings(True, 160, True, 50))
    got = default_reserve(ReserveInputs(**{**inputs.__dict__, "release": release}))
    assert got.mem_fraction_static == mfs


@pytest.mark.parametrize(
    ("release", "chunk", "bs"),
    [
        ("0.5.22", 16384, 2048),  # 0.5.22 memory_hook.py:233-240: MLA prefill max_bs 2048
        ("0.5.22", 1024, 2048),  # whatever the chunk
        ("0.5.23", 16384, 8192),  # 0.5.23 memory_hook.py:234-238: min(8192, chunk)
        ("0.5.23", 1024, 1024),
    ],
)
def test_mla_prefill_graph_default_per_release(release: str, chunk: int, bs: int) -> None:
    got = prefill_graph_max_bs(
        chunk, mla=True, max_total_tokens=None, model_path="x", release=release
    )
    assert got == bs
    # not MLA: the chunk, in every release
    assert prefill_graph_max_bs(chunk, mla=False, max_total_tokens=None, model_path="x") == chunk


@pytest.mark.parametrize(("release", "bs"), [("0.5.21", 256), ("0.5.22", 100), ("0.5.23", 100)])
def test_decode_graph_capped_by_max_running_requests_from_0_5_22(release: str, bs: int) -> None:
    # 0.5.22 memory_hook.py:182-188 caps an unset decode max_bs by --max-running-requests
    inp = make_input(
        "example:llama-3.1-8b", ["--max-running-requests", "100"], "H100x8", version=release
    )
    assert resolve_knobs(inp).graphs.decode_max_bs == bs


@pytest.mark.parametrize(
    ("release", "vit", "page", "mfs"),
    [
        # 0.5.21 has no config class of its own for minicpmv4_7: transformers' builds the
        # vision config (12 × 768 -> factor 0.95 × 1.05), and without the 0.5.23 override
        # B200 gets trtllm_mha, whose pages are 64 (arg_groups/overrides.py:1174-1199)
        ("0.5.21", (12, 768), 64, 0.855),
        # 0.5.23 configs/minicpmv4_7.py: its default vision config (27 × 1152), and
        # arg_groups/model_overrides/minicpmv.py:12-17 registers 4.7 for triton on SM100
        ("0.5.23", (27, 1152), 1, 0.780),
    ],
)
def test_minicpmv_4_7_gets_sglangs_config_class_and_override_from_0_5_23(
    release: str, vit: tuple[int, int], page: int, mfs: float
) -> None:
    inp = make_input("minicpmv-4.7", [], "B200x8", version=release)
    assert inp.model is not None and inp.model.shapes is not None
    assert (inp.model.shapes.vision_layers, inp.model.shapes.vision_hidden) == vit
    k = resolve_knobs(inp)
    assert k.page_size == page
    assert round(k.mem_fraction_static, 3) == mfs


@pytest.mark.parametrize(("release", "tokens"), [("0.5.20", 2615315), ("0.5.21", 5230630)])
def test_a_hybrid_swa_pool_under_pp_per_release(release: str, tokens: int) -> None:
    # sglang's own numbers for gpt-oss-20b (tests/sglang/memory/test_memory_differential.py's case):
    # 0.5.20 sizes each stage's pool for every layer, 0.5.21 for the stage's own, so twice
    # the tokens at PP 2 (model_executor/pool_configurator.py, HybridSWAPoolConfigurator)
    inp = make_input(
        "gpt-oss-20b-bf16", ["--tp-size", "2", "--pp-size", "2"], "H100x8", version=release
    )
    assert plan_memory(inp).max_total_num_tokens == tokens
