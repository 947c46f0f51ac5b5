"""Golden tests of the memory arithmetic, each case citing the sglang 0.5.23 line it mirrors.

Paths are relative to sglang/srt/ in the 0.5.23 wheel; the expected numbers are worked
out by hand from those lines in the comments. The differential test
(test_memory_differential.py) checks the same functions against sglang's own code.
"""

from __future__ import annotations

import pytest

from sglaunch.validators.memory.cells import (
    KvDtype,
    cell_size,
    kv_heads_per_rank,
    resolve_kv_dtype,
    sala_reserve,
    state_bytes_per_request,
)
from sglaunch.validators.memory.knobs import (
    GraphSettings,
    ReserveInputs,
    default_reserve,
    gpu_tier,
    prefill_graph_batch_sizes,
    vlm_factor,
)
from sglaunch.validators.memory.pool import (
    PoolError,
    finalize_tokens,
    kv_budget,
    mamba_ratio,
    max_running_requests,
    tokens_from_budget,
)
from sglaunch.validators.memory.shapes import (
    LINEAR,
    MHA,
    MLA,
    SWA,
    LinearState,
    ModelShapes,
    pp_layer_range,
)

H100, H200, A100_40, L40S, RTX5090, B200 = 81559, 143771, 40960, 46068, 32607, 183359

# arg_groups/memory_hook.py:89-180: (MiB, tp) -> (chunked_prefill_size, decode max_bs)
TIERS = [
    (16 * 1024, 1, 2048, 8),  # l.90-100
    (20 * 1024, 1, 4096, 48),  # the bound is strict: 20 GiB is the next tier (l.101)
    (RTX5090, 1, 4096, 48),  # l.113-117
    (RTX5090, 4, 4096, 160),
    (A100_40, 2, 4096, 32),  # l.118-131
    (L40S, 4, 4096, 160),
    (H100, 1, 8192, 256),  # l.132-145
    (H100, 8, 8192, 512),
    (H200, 2, 8192, 256),  # l.146-159
    (B200, 1, 16384, 512),  # l.160-170
    (None, 1, 4096, 160),  # l.171-180
]


@pytest.mark.parametrize(("mib", "tp", "chunk", "bs"), TIERS)
def test_tiers(mib: float | None, tp: int, chunk: int, bs: int) -> None:
    tier = gpu_tier(mib, tp)
    assert (tier.chunked_prefill_size, tier.decode_max_bs) == (chunk, bs)


def test_prefill_graph_sizes() -> None:
    # cuda_graph_hook.py:480-497: 8 + 14 + 8 + 8 + 12 sizes up to 4096, then 512 apart
    assert len(prefill_graph_batch_sizes(8192)) == 8 + 14 + 8 + 8 + 12 + 8
    assert prefill_graph_batch_sizes(16) == [4, 8, 12, 16]
    assert prefill_graph_batch_sizes(0) == []


def _reserve(
    mib: float, tp: int, *, attn_dp: int = 1, chunk: int | None = None, pp: int = 1
) -> tuple[float, float]:
    tier = gpu_tier(mib, tp)
    c = tier.chunked_prefill_size if chunk is None else chunk
    r = default_reserve(
        ReserveInputs(
            gpu_mem_mib=mib,
            tp_size=tp,
            pp_size=pp,
            chunked_prefill_size=c,
            max_prefill_tokens=16384,
            graphs=GraphSettings(True, tier.decode_max_bs, True, len(prefill_graph_batch_sizes(c))),
            attn_dp_enabled=attn_dp > 1,
            attn_dp_size=attn_dp,
        )
    )
    return r.total_mib, r.mem_fraction_static


# memory_hook.py:309-328 and reserve_for_graph_mb l.357-399:
# reserved = 512 + 1.5·max(chunk, 2048) + tp·pp/8·1024 + 2·max_bs + 8·len(prefill bs); max(·, 10 GiB) above 60 GiB
RESERVES = [
    # H100 tp1: 512 + 12288 + 128 + 512 + 464 = 13904; round((81559-13904)/81559, 3) = 0.83
    (H100, 1, 1, None, 13904, 0.83),
    # tp2: parallel 256 -> 14032 -> 0.828 (0.82795)
    (H100, 2, 1, None, 14032, 0.828),
    # tp4: max_bs 512 (decode 1024), parallel 512 -> 14800 -> 0.819 (0.81853)
    (H100, 4, 1, None, 14800, 0.819),
    # tp8: parallel 1024 -> 15312 -> 0.812 (0.81226)
    (H100, 8, 1, None, 15312, 0.812),
    # DP attention 4 at tp4 (l.370-378): + 512·4·3 + (512 > 300) 512·4·1.5 = 9216 -> 24016 -> 0.706
    (H100, 4, 4, None, 24016, 0.706),
    # the 10 GiB floor (l.314-315): chunk 2048 -> 512 + 3072 + 128 + 512 + 8·42 = 4560 < 10240
    (H100, 1, 1, 2048, 10240, 0.874),
    # below 60 GiB no floor: A100 40GB tp1 chunk 4096 max_bs 32: 512 + 6144 + 128 + 64 + 8·50 = 7248 -> 0.823
    (A100_40, 1, 1, None, 7248, 0.823),
    # B200 tp8: chunk 16384 (74 prefill sizes) -> 512 + 24576 + 1024 + 1024 + 8·74 = 27728 -> 0.849
    (B200, 8, 1, None, 27728, 0.849),
]


@pytest.mark.parametrize(("mib", "tp", "adp", "chunk", "total", "mfs"), RESERVES)
def test_reserve_and_default_fraction(
    mib: float, tp: int, adp: int, chunk: int | None, total: float, mfs: float
) -> None:
    got_total, got_mfs = _reserve(mib, tp, attn_dp=adp, chunk=chunk)
    assert got_total == pytest.approx(total)
    assert got_mfs == mfs


def test_unknown_gpu_memory_gives_095() -> None:
    # memory_hook.py:324-328: 0.95 when get_device_memory_capacity() is None
    assert _reserve_none() == 0.95


def _reserve_none() -> float:
    r = default_reserve(ReserveInputs(None, 1, 1, 4096, 16384, GraphSettings(True, 160, True, 50)))
    return r.mem_fraction_static


def test_vlm_factor() -> None:
    # memory_hook.py:432-462: ViT-L/14 (24 × 1024²) -> 0.95 × 1.0
    assert vlm_factor(24, 1024) == pytest.approx(0.95)
    # MiniCPM-V 4.6's SigLIP (27 × 1152²): ratio 1.4238 -> 1 - 0.0424 -> 0.95 × 0.95762
    assert vlm_factor(27, 1152) == pytest.approx(
        0.95 * (1 - 0.1 * (27 * 1152**2 / (24 * 1024**2) - 1))
    )
    # clamped to [0.8, 1.05]
    assert vlm_factor(80, 4096) == pytest.approx(0.95 * 0.8)
    assert vlm_factor(1, 64) == pytest.approx(0.95 * 1.05)


LLAMA8B = ModelShapes(family=MHA, num_layers=32, num_kv_heads=8, head_dim=128, v_head_dim=128)
BF16 = KvDtype("bfloat16", 2, "auto")
FP8 = KvDtype("float8_e4m3fn", 1, "--kv-cache-dtype fp8_e4m3")


# pool_configurator.py:472-476 with get_num_kv_heads (configs/model_config.py:1700-1711):
# n = max(1, kv // attn_tp); cell = n · (head_dim + v_head_dim) · layers · bytes
@pytest.mark.parametrize(
    ("tp", "kv", "cell"),
    [
        (1, BF16, 8 * 256 * 32 * 2),  # 131072
        (2, BF16, 4 * 256 * 32 * 2),  # 65536
        (8, BF16, 1 * 256 * 32 * 2),  # 16384
        (16, BF16, 1 * 256 * 32 * 2),  # KV heads replicated past TP 8
        (2, FP8, 4 * 256 * 32 * 1),  # fp8 KV: one byte (kv_cache_dtype.py:67-71)
    ],
)
def test_gqa_cell(tp: int, kv: KvDtype, cell: int) -> None:
    flag = "fp8_e4m3" if kv.size == 1 else "auto"
    got = cell_size(LLAMA8B, kv, kv_flag=flag, attn_tp=tp, layer_range=(0, 32))
    assert got.bytes_per_token == cell


def test_mxfp8_adds_scales() -> None:
    # pool_configurator.py:515-520: + n · (hd + vhd) · L // 32
    got = cell_size(LLAMA8B, FP8, kv_flag="mxfp8", attn_tp=1, layer_range=(0, 32))
    assert got.bytes_per_token == 8 * 256 * 32 + 8 * 256 * 32 // 32


def test_mla_cell_is_not_divided_by_tp() -> None:
    # pool_configurator.py:374-383 + calculate_mla_kv_cache_dim (kv_cache_configurator.py:3412-3423):
    # DeepSeek-V2-Lite (512 + 64) · 27 layers · 2 B = 31104 at any TP
    mla = ModelShapes(family=MLA, num_layers=27, kv_lora_rank=512, qk_rope_head_dim=64)
    for tp in (1, 2, 8):
        assert (
            cell_size(mla, BF16, kv_flag="auto", attn_tp=tp, layer_range=(0, 27)).bytes_per_token
            == 31104
        )
    assert (
        cell_size(mla, FP8, kv_flag="fp8_e4m3", attn_tp=1, layer_range=(0, 27)).bytes_per_token
        == 15552
    )


GPT_OSS = ModelShapes(
    family=SWA,
    num_layers=24,
    num_kv_heads=8,
    head_dim=64,
    v_head_dim=64,
    full_layer_ids=tuple(range(1, 24, 2)),
    swa_layer_ids=tuple(range(0, 24, 2)),
    sliding_window=127,
)


def test_sliding_window_hybrid_cell() -> None:
    # pool_configurator.py:701-713, 802-817: full 8·128·2 = 2048 B per layer; 12 full + 0.8 · 12 SWA
    got = cell_size(
        GPT_OSS, BF16, kv_flag="auto", attn_tp=1, layer_range=(0, 24), swa_full_tokens_ratio=0.8
    )
    assert got.bytes_per_token == pytest.approx(2048 * 12 + 0.8 * 2048 * 12)
    # the float cell floors the tokens (l.907-914): 1 GiB / 44236.8
    assert tokens_from_budget(1 << 30, got, page_size=1, zero_cell_tokens=0) == int(
        (1 << 30) // 44236.8
    )


def test_swa_pool_too_small_is_sglangs_error() -> None:
    # pool_configurator.py:196-216: window + page >= swa tokens
    with pytest.raises(PoolError) as exc:
        finalize_tokens(
            [100], page_size=1, max_total_tokens=None, swa_ratio=0.8, sliding_window=127
        )
    assert exc.value.message.startswith("SWA pool (80 tokens) cannot hold even one request")


SALA = ModelShapes(
    family=LINEAR,
    num_layers=32,
    num_kv_heads=2,
    head_dim=128,
    v_head_dim=128,
    full_layer_ids=tuple(range(0, 32, 4)),
    linear=LinearState(
        kind="lightning",
        layers=tuple(i for i in range(32) if i % 4),
        num_heads=32,
        head_dim=128,
        state_size=128,
    ),
    sparse_kernel_stride=16,
)


def test_sala_cell_counts_only_the_minicpm4_layers() -> None:
    # pool_configurator.py:230-237 (mambaish: full_attention_layer_ids), configs/minicpm.py:171-176
    got = cell_size(SALA, BF16, kv_flag="auto", attn_tp=1, layer_range=(0, 32))
    assert got.bytes_per_token == 2 * 256 * 8 * 2


def test_lightning_state_per_request() -> None:
    # configs/minicpm.py:159-169 -> Mamba2StateShape.create (mamba_utils.py:196-242):
    # temporal (32/tp, 128, 128) fp32, conv (0, 0): 2 MiB per layer per request at tp1, 24 layers
    per_req, stage = state_bytes_per_request(SALA, 1, 4, 1)
    assert per_req == stage == 24 * 32 * 128 * 128 * 4
    assert state_bytes_per_request(SALA, 2, 4, 1)[0] == 24 * 16 * 128 * 128 * 4


def test_gdn_state_per_request() -> None:
    # Qwen3-Next (configs/qwen3_next.py:288-313) at attention TP 4:
    # conv_dim = 4096 + 2·16·128 = 8192 -> (2048, 3) bf16; temporal (8, 128, 128) fp32
    gdn = ModelShapes(
        family=LINEAR,
        num_layers=48,
        num_kv_heads=2,
        head_dim=256,
        v_head_dim=256,
        full_layer_ids=tuple(i for i in range(48) if (i + 1) % 4 == 0),
        linear=LinearState(
            kind="gdn",
            layers=tuple(i for i in range(48) if (i + 1) % 4),
            num_heads=32,
            head_dim=128,
            state_size=128,
            n_groups=16,
            intermediate_size=4096,
            conv_kernel=4,
        ),
    )
    per_layer = 2048 * 3 * 2 + 8 * 128 * 128 * 4
    assert state_bytes_per_request(gdn, 4, 4, 1)[0] == per_layer * 36
    # the KV cell: max(1, 2 // 4) = 1 head · 512 · 12 full layers · 2 B
    assert (
        cell_size(gdn, BF16, kv_flag="auto", attn_tp=4, layer_range=(0, 48)).bytes_per_token
        == 12288
    )


def test_kv_dtype_auto_follows_the_checkpoint() -> None:
    # kv_cache_dtype.py:49-59: auto is the model dtype, FP8 when kv_cache_quant_algo is FP8
    assert resolve_kv_dtype("auto", LLAMA8B).size == 2
    fp8_ckpt = ModelShapes(family=MHA, num_layers=1, kv_cache_quant_algo="FP8")
    assert resolve_kv_dtype("auto", fp8_ckpt).name == "float8_e4m3fn"
    assert resolve_kv_dtype("fp8_e5m2", LLAMA8B).size == 1


def test_page_rounding_and_caps() -> None:
    # pool_configurator.py:637-647: (budget // cell) // page · page
    cell = cell_size(LLAMA8B, BF16, kv_flag="auto", attn_tp=1, layer_range=(0, 32))
    budget = 1000 * 131072 + 5
    assert tokens_from_budget(budget, cell, page_size=1, zero_cell_tokens=0) == 1000
    assert tokens_from_budget(budget, cell, page_size=64, zero_cell_tokens=0) == 960
    # kv_cache_configurator.py:3090-3117: the user cap, then the PP MIN, re-paged
    assert finalize_tokens([960], page_size=64, max_total_tokens=500).total == 448
    assert finalize_tokens([960], page_size=64, max_total_tokens=5000).total == 960
    assert finalize_tokens([960, 900], page_size=1, max_total_tokens=None).total == 900
    # 0 tokens: MemoryPoolConfig.__post_init__ (pool_configurator.py:94-99)
    with pytest.raises(PoolError) as exc:
        finalize_tokens([0], page_size=1, max_total_tokens=None)
    assert exc.value.message == "Not enough memory. Please try to increase --mem-fraction-static."


def test_budget_and_the_minimum_fraction() -> None:
    # kv_cache_configurator.py:3031-3058: rest = F - P·(1 - mfs); F = P - W
    budget, available, _ = kv_budget(pre_gib=70.0, weights_bytes=20 << 30, mfs=0.8)
    assert available == 50.0
    assert budget == int((50.0 - 70.0 * 0.2) * (1 << 30))
    with pytest.raises(PoolError) as exc:
        kv_budget(pre_gib=70.0, weights_bytes=60 << 30, mfs=0.8)
    # minimum = 1 - 10/70 = 0.857142..., suggested ceil(857.14)/1000 = 0.858
    assert exc.value.message.startswith(
        "Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.8. "
        "Raise --mem-fraction-static above 0.858 (minimum viable = 1 - available/pre = 0.8571)."
    )


def test_max_running_requests() -> None:
    # kv_cache_configurator.py:3119-3172
    assert max_running_requests(915903, context_len=131072, user=None, attn_dp_size=1) == 3577
    assert (
        max_running_requests(1000, context_len=131072, user=None, attn_dp_size=1) == 500
    )  # T // 2
    assert (
        max_running_requests(10**8, context_len=1024, user=None, attn_dp_size=1) == 4096
    )  # the clamp
    assert (
        max_running_requests(10**6, context_len=4096, user=100, attn_dp_size=4) == 25
    )  # per DP worker
    # mamba: min(mrr, K // ratio); ratio 5 with the extra buffer and overlap (l.3062-3088)
    assert mamba_ratio(False, True, True, False) == 5
    assert mamba_ratio(True, True, True, False) == 1
    assert (
        max_running_requests(
            1176947, context_len=262144, user=None, attn_dp_size=1, mamba_cache_size=671, ratio=5
        )
        == 134
    )


def test_sala_compressed_reserve() -> None:
    # layers/attention/minicpm/cache.py:59-62: ceil(5T / (4s + 5))
    assert sala_reserve(3347143, 16) == -(-5 * 3347143 // 69) == 242547


def test_pp_layer_split() -> None:
    # distributed/utils.py:137-148: the last `remainder` stages take one more layer
    assert [pp_layer_range(10, r, 4) for r in range(4)] == [(0, 2), (2, 4), (4, 7), (7, 10)]
    assert kv_heads_per_rank(8, 4) == 2
