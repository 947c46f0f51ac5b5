"""sglang's resolving view of the flags: the few early steps the rules depend on.

sglang 0.5.23 runs step 1 (`handle_deprecated_dp_attention`,
srt/arg_groups/parallel_hook.py:39) before any rule reads the parallel layout:
`--enable-dp-attention --dp-size N` becomes `attn_dp_size=N, dp_size=1`.
These helpers compute that view from the raw flags without changing them.
"""

from __future__ import annotations

from typing import Any

from sglaunch.validators.facts import CheckInput

BACKEND_FIELDS = ("attention_backend", "prefill_attention_backend", "decode_attention_backend")


def _int(value: Any, default: int = 1) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def translates_deprecated_dp(inp: CheckInput) -> bool:
    """True when step 1 turns --enable-dp-attention --dp-size N into attention DP."""
    return bool(inp.value("enable_dp_attention")) and _int(inp.value("attn_dp_size")) == 1


def attn_dp_size(inp: CheckInput) -> int:
    if translates_deprecated_dp(inp):
        return _int(inp.value("dp_size"))
    return _int(inp.value("attn_dp_size"))


def dp_size(inp: CheckInput) -> int:
    """Data-parallel replicas after step 1."""
    if translates_deprecated_dp(inp):
        return 1
    return _int(inp.value("dp_size"))


def tp_size(inp: CheckInput) -> int:
    return _int(inp.value("tp_size"))


def pp_size(inp: CheckInput) -> int:
    return _int(inp.value("pp_size"))


def ep_scale_joiner(inp: CheckInput) -> bool:
    # srt/arg_groups/model_override_base.py:250
    return bool(inp.value("ep_join_mode") == "scale")


def attn_dp_enabled(inp: CheckInput) -> bool:
    # srt/runtime_context.py:191 attn_dp_enabled_of
    return attn_dp_size(inp) > 1 or ep_scale_joiner(inp)


def attention_backend_not_set(inp: CheckInput) -> bool:
    # srt/arg_groups/model_override_base.py:176
    return all(inp.value(f) is None for f in BACKEND_FIELDS)
