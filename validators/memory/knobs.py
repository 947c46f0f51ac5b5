"""sglang's resolution-time memory defaults: tiers, CUDA-graph batch sizes, the default fraction.

Every function mirrors `srt/arg_groups/memory_hook.py` and
`srt/arg_groups/cuda_graph_hook.py` of sglang 0.5.23 (line numbers in the
docstrings); `release` selects the older values where a release differs
(validators/release_spans.py names each change). All memory here is in MiB, as sglang
computes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sglaunch.validators.release_spans import MEMORY_TIERS_0_5_20, MLA_PREFILL_BS_8192, memory_since

GIB_MIB = 1024

# (upper bound in MiB, chunked_prefill_size, decode max_bs with tp < 4, with tp >= 4, example GPUs)
# memory_hook.py:89-170
TIERS: tuple[tuple[float, int, int, int, str], ...] = (
    (20 * GIB_MIB, 2048, 8, 8, "< 20 GiB (T4, 4080)"),
    (35 * GIB_MIB, 4096, 48, 160, "< 35 GiB (A10, 4090, 5090)"),
    (60 * GIB_MIB, 4096, 32, 160, "< 60 GiB (A100 40GB, L40)"),
    (90 * GIB_MIB, 8192, 256, 512, "< 90 GiB (H100, A100 80GB)"),
    (160 * GIB_MIB, 8192, 256, 512, "< 160 GiB (H20, H200)"),
    (float("inf"), 16384, 512, 512, ">= 160 GiB (B200, MI300)"),
)
UNKNOWN_TIER = (4096, 160, "GPU memory unknown")  # memory_hook.py:171-180


@dataclass(frozen=True)
class Tier:
    chunked_prefill_size: int
    decode_max_bs: int
    label: str


# 0.5.19's 20-35 GiB tier (its memory_hook.py:76-87)
TIER_35_GIB_0_5_19 = (2048, 24, 80)


def gpu_tier(gpu_mem_mib: float | None, tp_size: int, release: str | None = None) -> Tier:
    """chunked_prefill_size and decode CUDA-graph max_bs defaults (memory_hook.py:89-180)."""
    if gpu_mem_mib is None:
        return Tier(UNKNOWN_TIER[0], UNKNOWN_TIER[1], UNKNOWN_TIER[2])
    for bound, chunk, small, large, label in TIERS:
        if gpu_mem_mib < bound:
            if bound == 35 * GIB_MIB and not memory_since(release, MEMORY_TIERS_0_5_20):
                chunk, small, large = TIER_35_GIB_0_5_19
            return Tier(chunk, small if tp_size < 4 else large, label)
    raise AssertionError("unreachable: the last tier is unbounded")


def decode_graph_batch_sizes(
    max_bs: int, *, speculative: bool = False, no_padding: bool = False
) -> list[int]:
    """generate_decode_cuda_graph_batch_sizes (cuda_graph_hook.py:500-532)."""
    max_bs = max(int(max_bs), 0)
    if no_padding:
        sizes = list(range(1, max_bs + 1))
    elif not speculative:
        sizes = [
            1,
            2,
            4,
            8,
            12,
            *list(range(16, 257, 8)),
            *list(range(272, 512, 16)),
            *list(range(512, max_bs + 1, 32)),
        ]
    else:
        sizes = (
            list(range(1, 9))
            + list(range(10, 33, 2))
            + list(range(40, 65, 4))
            + list(range(72, 257, 8))
            + list(range(272, max_bs + 1, 16))
        )
    sizes = [s for s in sizes if s <= max_bs]
    if max_bs not in sizes:
        sizes.append(max_bs)
    return sizes


def prefill_graph_batch_sizes(max_bs: int) -> list[int]:
    """generate_prefill_cuda_graph_batch_sizes (cuda_graph_hook.py:480-497)."""
    max_bs = int(max_bs)
    # bounded: the last range is the only open one and stops at max_bs
    top = min(max_bs, 1 << 24)
    sizes = (
        list(range(4, 33, 4))
        + list(range(48, 257, 16))
        + list(range(288, 513, 32))
        + list(range(576, 1024 + 1, 64))
        + list(range(1280, 4096 + 1, 256))
        + list(range(4608, top + 1, 512))
    )
    return [s for s in sizes if s <= max_bs]


def prefill_graph_max_bs(
    chunked_prefill_size: int,
    *,
    mla: bool,
    max_total_tokens: int | None,
    model_path: str,
    release: str | None = None,
) -> int:
    """The prefill graph's max_bs when unset (memory_hook.py:233-263; PP breakable cap aside)."""
    if not mla:
        max_bs = chunked_prefill_size
    elif memory_since(release, MLA_PREFILL_BS_8192):
        max_bs = min(8192, chunked_prefill_size)
    else:
        max_bs = 2048  # 0.5.22's memory_hook.py:233-240
    if max_total_tokens is not None:
        max_bs = min(max_bs, max_total_tokens)
    if "llama-2" in model_path.lower():
        max_bs = min(max_bs, 4096)
    return max_bs


@dataclass(frozen=True)
class GraphSettings:
    """The resolved CUDA-graph settings the reserve depends on."""

    decode_enabled: bool
    decode_max_bs: int
    prefill_enabled: bool
    prefill_bs_count: int
    prefill_breakable: bool = False


@dataclass(frozen=True)
class ReserveInputs:
    gpu_mem_mib: float | None
    tp_size: int
    pp_size: int
    chunked_prefill_size: int
    max_prefill_tokens: int
    graphs: GraphSettings
    attn_dp_enabled: bool = False
    attn_dp_size: int = 1
    mla: bool = False
    disaggregation_mode: str = "null"
    max_running_requests: int | None = None
    speculative_num_draft_tokens: int | None = None
    deepep: bool = False
    post_capture_sizing: bool = False
    release: str | None = None


@dataclass(frozen=True)
class Reserve:
    """The MiB sglang keeps out of the static pool, part by part, and the fraction it gives."""

    parts: dict[str, float] = field(default_factory=dict)
    total_mib: float = 0.0
    floor_applied: bool = False
    mem_fraction_static: float = 0.95
    vlm_factor: float | None = None

    def rounded_parts(self) -> dict[str, float]:
        return {k: round(v, 1) for k, v in self.parts.items()}


def reserve_for_graph_mb(r: ReserveInputs) -> dict[str, float]:
    """reserve_for_graph_mb (memory_hook.py:357-399), as named parts."""
    parts: dict[str, float] = {}
    g = r.graphs
    if r.disaggregation_mode != "prefill" and g.decode_enabled:
        parts["decode_cuda_graph"] = g.decode_max_bs * 2.0
    if r.attn_dp_enabled and r.disaggregation_mode != "prefill":
        dp = g.decode_max_bs * r.attn_dp_size * 3.0
        if g.decode_max_bs > 300:
            dp += g.decode_max_bs * r.attn_dp_size * 1.5
        parts["dp_attention_padding"] = dp
    if r.disaggregation_mode != "decode" and g.prefill_enabled:
        parts["prefill_cuda_graph"] = 1.5 * 1024 if r.mla else g.prefill_bs_count * 8.0
        if g.prefill_breakable and r.deepep:
            parts["prefill_graph_deepep"] = 1024.0
    return parts


def activation_tokens(r: ReserveInputs) -> int:
    """The tokens the activation reserve scales with (memory_hook.py:298-307)."""
    if r.disaggregation_mode == "decode":
        running = r.max_running_requests or r.graphs.decode_max_bs or 1
        draft = r.speculative_num_draft_tokens or 1
        return max(running * draft, 2048)
    if r.chunked_prefill_size > 0:
        return max(r.chunked_prefill_size, 2048)
    return max(r.max_prefill_tokens, 2048)


def default_reserve(r: ReserveInputs) -> Reserve:
    """reserved_mem and the default mem_fraction_static (memory_hook.py:281-328)."""
    parts: dict[str, float] = {}
    floor = False
    if r.post_capture_sizing:
        parts["floor"] = 1536.0
        parts["parallel"] = r.tp_size * r.pp_size / 8 * 1024
        total = sum(parts.values())
    else:
        parts["constant"] = 512.0
        parts["activations"] = activation_tokens(r) * 1.5
        parts["parallel"] = r.tp_size * r.pp_size / 8 * 1024
        parts.update(reserve_for_graph_mb(r))
        total = sum(parts.values())
        if r.gpu_mem_mib is not None and r.gpu_mem_mib > 60 * 1024 and total < 10 * 1024:
            parts["floor_top_up"] = 10 * 1024 - total
            total = 10 * 1024.0
            floor = True
        if r.deepep and r.disaggregation_mode != "prefill" and r.graphs.decode_enabled:
            parts["deepep_a2a"] = 2048.0  # reserve_for_deepep_a2a_mb, l.402-414
            total += 2048.0
    unknown = 0.95 if memory_since(r.release, MEMORY_TIERS_0_5_20) else 0.88
    mfs = unknown if r.gpu_mem_mib is None else round((r.gpu_mem_mib - total) / r.gpu_mem_mib, 3)
    return Reserve(parts=parts, total_mib=total, floor_applied=floor, mem_fraction_static=mfs)


def vlm_factor(vision_layers: int | None, vision_hidden: int | None) -> float:
    """adjust_mem_fraction_for_vlm's factor (memory_hook.py:432-462); getattr defaults 24 / 1024."""
    layers = 24 if vision_layers is None else vision_layers
    hidden = 1024 if vision_hidden is None else vision_hidden
    ratio = layers * hidden**2 / (24 * 1024**2)
    dynamic = max(0.8, min(1.05, 1.0 - 0.1 * (ratio - 1.0)))
    return 0.95 * dynamic
