"""From free memory to max_total_num_tokens and max_running_requests (sglang 0.5.23).

Mirrors `KVCacheConfigurator._profile_available_bytes`, `_handle_max_mamba_cache`,
`config_from_budget`, `_apply_token_constraints` and `resolve_max_num_reqs`
(srt/mem_cache/kv_cache_configurator.py:2990-3409) and the pool configurators'
`calculate_pool_sizes` (srt/model_executor/pool_configurator.py:637-647, 853-917).
Memory is in GiB floats where sglang uses GiB floats, and in bytes where it uses bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sglaunch.validators.memory.cells import Cell

GIB = 1 << 30


class PoolError(Exception):
    """An error sglang raises while sizing the pool; `message` is sglang's exact text."""

    def __init__(self, kind: str, message: str, ref: str, **data: float) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.ref = ref
        self.data = data


def no_room_error(mfs: float, available_gib: float, pre_gib: float) -> PoolError:
    """The ValueError at kv_cache_configurator.py:3044-3058, with its minimum fraction."""
    minimum = 1 - available_gib / pre_gib if pre_gib > 0 else 1.0
    suggested = math.ceil(minimum * 1000) / 1000
    return PoolError(
        "no-room",
        f"Loaded weights leave no GPU memory for the KV cache under "
        f"--mem-fraction-static={mfs}. "
        f"Raise --mem-fraction-static above "
        f"{suggested:.3f} "
        f"(minimum viable = 1 - available/pre = "
        f"{minimum:.4f}). If using speculative "
        f"decoding, draft weights are now counted.",
        "srt/mem_cache/kv_cache_configurator.py:3044-3058",
        minimum=minimum,
        suggested=suggested,
    )


NOT_ENOUGH = "Not enough memory. Please try to increase --mem-fraction-static."
NOT_ENOUGH_REF = "srt/model_executor/pool_configurator.py:94-99"


@dataclass(frozen=True)
class MambaInputs:
    per_req_stage: int  # the largest PP stage's state bytes per request
    mamba_full_memory_ratio: float = 0.9
    max_mamba_cache_size: int | None = None
    max_running_requests: int | None = None
    disable_radix_cache: bool = False
    attn_dp_size: int = 1


@dataclass(frozen=True)
class MambaSplit:
    max_mamba_cache_size: int
    state_bytes: int  # (K + 1) slots, as sglang subtracts them
    rest_gib: float


def split_mamba(rest_gib: float, m: MambaInputs) -> MambaSplit:
    """_handle_max_mamba_cache without speculative decoding (kv_cache_configurator.py:3229-3409)."""
    per_slot = m.per_req_stage
    if m.max_mamba_cache_size is not None:
        k = m.max_mamba_cache_size // max(m.attn_dp_size, 1)
    elif m.disable_radix_cache and m.max_running_requests is not None:
        k = max(1, m.max_running_requests // max(m.attn_dp_size, 1))
    else:
        if per_slot <= 0:
            raise PoolError(
                "state",
                "the linear-attention state has no bytes per request (check the config)",
                "srt/mem_cache/kv_cache_configurator.py:3345",
            )
        ratio = m.mamba_full_memory_ratio
        budget_bytes = rest_gib * ratio / (1 + ratio) * GIB
        k = int((budget_bytes - 0 - per_slot) // per_slot)
    if k <= 0:
        raise PoolError(
            "state",
            f"Not enough GPU memory for hybrid (mamba/linear-attention) state cache. "
            f"Computed max_mamba_cache_size={k} "
            f"(total_rest_memory={rest_gib:.2f} GB, "
            f"mamba_cache_per_req={per_slot / (1 << 20):.2f} MB). "
            f"Try: (1) reduce --max-running-requests, "
            f"(2) increase --mem-fraction-static, "
            f"(3) reduce --speculative-num-draft-tokens, or "
            f"(4) use GPUs with more memory.",
            "srt/mem_cache/kv_cache_configurator.py:3392-3402",
            max_mamba_cache_size=k,
        )
    state = (k + 1) * per_slot
    return MambaSplit(k, state, rest_gib - state / GIB)


def kv_budget(
    *,
    pre_gib: float,
    weights_bytes: int,
    mfs: float,
    mm_reservation_gib: float = 0.0,
    mamba: MambaInputs | None = None,
) -> tuple[int, float, MambaSplit | None]:
    """(budget bytes, free GiB after the weights, the mamba split) — _profile_available_bytes."""
    available = pre_gib - weights_bytes / GIB
    slack = pre_gib * (1 - mfs)
    rest = available - slack - mm_reservation_gib
    split = None
    if mamba is not None:
        split = split_mamba(rest, mamba)
        rest = split.rest_gib
    if rest <= 0:
        raise no_room_error(mfs, available, pre_gib)
    return int(rest * GIB), available, split


@dataclass(frozen=True)
class Tokens:
    total: int  # max_total_num_tokens (full-attention tokens for an SWA hybrid)
    swa: int | None = None
    capped_by_user: bool = False


def swa_tokens(full: int, ratio: float, page: int) -> int:
    return int(full * ratio) // page * page


def validate_swa(swa: int, window: int | None, page: int) -> None:
    """validate_swa_pool_size (pool_configurator.py:196-216)."""
    if window is None:
        return
    if window + page >= swa:
        raise PoolError(
            "swa",
            f"SWA pool ({swa} tokens) cannot hold even one request: "
            f"the prefill admission floor is sliding_window_size "
            f"({window}) + page_size ({page}). "
            f"Increase --swa-full-tokens-ratio or the total KV budget.",
            "srt/model_executor/pool_configurator.py:208-216",
        )


def tokens_from_budget(
    budget_bytes: int,
    cell: Cell,
    *,
    page_size: int,
    zero_cell_tokens: int,
) -> int:
    """calculate_pool_sizes (pool_configurator.py:637-647, 907-917), before any cap."""
    page = max(page_size, 1)
    if cell.bytes_per_token <= 0:
        return zero_cell_tokens // page * page
    if isinstance(cell.bytes_per_token, float) and not cell.bytes_per_token.is_integer():
        raw = int(budget_bytes // cell.bytes_per_token)
    else:
        raw = max(budget_bytes, 0) // int(cell.bytes_per_token)
    return raw // page * page


def finalize_tokens(
    per_stage: list[int],
    *,
    page_size: int,
    max_total_tokens: int | None,
    swa_ratio: float | None = None,
    sliding_window: int | None = None,
    swa_full_layers: bool = True,
) -> Tokens:
    """User cap and PP minimum (_apply_token_constraints, l.3090-3117), re-paged, SWA checked."""
    page = max(page_size, 1)
    capped = False
    stage_totals = []
    for t in per_stage:
        if max_total_tokens is not None and max_total_tokens < t:
            capped = True
            t = max_total_tokens
        stage_totals.append(t)
    total = min(stage_totals) // page * page
    if total <= 0:
        raise PoolError("empty", NOT_ENOUGH, NOT_ENOUGH_REF)
    swa = None
    if swa_ratio is not None:
        if swa_full_layers:
            swa = swa_tokens(total, swa_ratio, page)
            validate_swa(swa, sliding_window, page)
        else:
            swa = total
    return Tokens(total=total, swa=swa, capped_by_user=capped)


def max_running_requests(
    tokens: int,
    *,
    context_len: int,
    user: int | None,
    attn_dp_size: int,
    mamba_cache_size: int | None = None,
    ratio: int = 1,
) -> int:
    """resolve_max_num_reqs (kv_cache_configurator.py:3119-3172), per DP worker."""
    estimated = int(tokens / max(context_len, 1) * 512)
    estimated = max(min(estimated, 4096), 2048)
    if user is not None:
        mrr = min(max(1, user // max(attn_dp_size, 1)), tokens // 2)
    else:
        mrr = min(estimated, tokens // 2)
    if mamba_cache_size is not None:
        mrr = min(mrr, mamba_cache_size // max(ratio, 1))
        if mrr <= 0:
            raise PoolError(
                "state",
                "Hybrid (mamba/linear-attention) state cache is too small to serve "
                f"any requests. max_mamba_cache_size={mamba_cache_size}, "
                f"mamba_ratio={ratio}, resulting max_num_reqs={mrr}. "
                "Try: (1) reduce --max-running-requests, "
                "(2) increase --mem-fraction-static, or "
                "(3) use GPUs with more memory.",
                "srt/mem_cache/kv_cache_configurator.py:3158-3166",
            )
    return mrr


def mamba_ratio(disable_radix_cache: bool, extra_buffer: bool, overlap: bool, lazy: bool) -> int:
    """_calculate_mamba_ratio (kv_cache_configurator.py:3062-3088), without the skip-decode-lock env."""
    if disable_radix_cache:
        return 1
    extra = 0
    if extra_buffer:
        extra = 1 if lazy else (2 if overlap else 1)  # get_mamba_tracking_slots
    return 3 + extra
