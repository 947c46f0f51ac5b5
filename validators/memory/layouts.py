"""The parallel layouts (tp × dp × pp, attention DP) that fit a set of GPUs, each with its plan.

Pure: one `plan_memory` and one rule-engine run per layout, on the user's flags
with the parallel sizes replaced. A layout that another rule rejects (heads that
do not divide, DP attention on a model that refuses it) is listed as not fitting,
with the codes that reject it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sglaunch.validators.facts import CheckInput
from sglaunch.validators.findings import Severity
from sglaunch.validators.memory.plan import MemoryPlan, plan_memory

PARALLEL_FLAGS = ("tp_size", "dp_size", "pp_size", "attn_dp_size", "enable_dp_attention")
# archs whose resolution rejects DP attention (arg_groups/model_overrides/minicpm.py:17-18)
NO_DP_ATTENTION = frozenset({"MiniCPMForCausalLM", "MiniCPMSALAForCausalLM"})
MAX_GPUS = 64


@dataclass(frozen=True)
class Layout:
    tp: int
    dp: int
    pp: int
    attn_dp: int
    plan: MemoryPlan
    blocking: tuple[str, ...]  # codes of the rules that reject this layout
    # before 0.5.22 there is no --attn-dp-size: attention DP is --enable-dp-attention
    # --dp-size N (parallel_hook.py:39 later translates the same line to --attn-dp-size N)
    old_spelling: bool = False

    @property
    def gpus(self) -> int:
        return self.tp * self.dp * self.pp

    @property
    def verdict(self) -> str:
        return "does-not-fit" if self.blocking else self.plan.verdict

    @property
    def replicas(self) -> int:
        """KV pools that serve requests side by side: each DP replica and each attention-DP
        rank has a scheduler and a pool of its own; PP stages and TP ranks share one."""
        return self.dp * self.attn_dp

    @property
    def kv_tokens_per_replica(self) -> int | None:
        """sglang's max_total_num_tokens: what one replica's pool holds."""
        return self.plan.max_total_num_tokens

    @property
    def kv_tokens_total(self) -> int | None:
        tokens = self.plan.max_total_num_tokens
        return None if tokens is None else tokens * self.replicas

    @property
    def full_context_requests(self) -> int | None:
        """Requests of full context length the pool holds at once (per replica)."""
        tokens = self.plan.usable_tokens
        mrr = self.plan.max_running_requests
        if tokens is None or mrr is None:
            return None
        return min(mrr, tokens // max(self.plan.knobs.context_len, 1))

    @property
    def full_context_requests_total(self) -> int | None:
        reqs = self.full_context_requests
        return None if reqs is None else reqs * self.replicas

    def flags(self) -> dict[str, Any]:
        """The parallel flags of this layout, spelled as its release spells them."""
        return layout_flags(self.tp, self.dp, self.pp, self.attn_dp, old_spelling=self.old_spelling)

    def to_json(self) -> dict[str, Any]:
        data = self.plan.to_json()
        data["verdict"] = self.verdict
        data.update(
            tp=self.tp,
            dp=self.dp,
            pp=self.pp,
            attn_dp=self.attn_dp,
            replicas=self.replicas,
            kv_tokens_per_replica=self.kv_tokens_per_replica,
            kv_tokens_total=self.kv_tokens_total,
            full_context_requests=self.full_context_requests,
            full_context_requests_total=self.full_context_requests_total,
            blocking=list(self.blocking),
            flags=self.flags(),
        )
        return data


def layout_flags(tp: int, dp: int, pp: int, attn_dp: int, *, old_spelling: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"tp_size": tp, "dp_size": dp, "pp_size": pp}
    if attn_dp > 1:
        if old_spelling:
            out.update(dp_size=attn_dp, enable_dp_attention=True)
        else:
            out["attn_dp_size"] = attn_dp
    return out


def _powers(limit: int) -> list[int]:
    out, p = [], 1
    while p <= limit:
        out.append(p)
        p *= 2
    return out


def candidate_layouts(gpus: int, *, dp_attention: bool) -> list[tuple[int, int, int, int]]:
    """(tp, dp, pp, attn_dp) with tp × dp × pp ≤ gpus, powers of two, most GPUs first."""
    gpus = max(1, min(gpus, MAX_GPUS))
    out = []
    for tp in _powers(gpus):
        for pp in _powers(gpus // tp):
            for dp in _powers(gpus // (tp * pp)):
                out.append((tp, dp, pp, 1))
            if dp_attention and tp > 1:
                out.extend((tp, 1, pp, adp) for adp in _powers(tp)[1:])
    out.sort(key=lambda c: (-(c[0] * c[1] * c[2]), -c[0], c[2], -c[3]))
    return out


def plan_layouts(inp: CheckInput, *, include_blocked: bool = True) -> list[Layout]:
    """Every candidate layout on the visible GPUs, planned and checked."""
    from sglaunch.validators.engine import validate
    from sglaunch.validators.versions import has_attn_dp_size

    model = inp.model
    dp_attention = model is not None and model.architecture not in NO_DP_ATTENTION
    # attention DP is written --attn-dp-size from 0.5.22; before, --enable-dp-attention --dp-size
    old_spelling = not has_attn_dp_size(inp.sglang_version)
    base = {k: v for k, v in inp.flags.items() if k not in PARALLEL_FLAGS}
    out = []
    for tp, dp, pp, adp in candidate_layouts(inp.gpu.count, dp_attention=dp_attention):
        flags = layout_flags(tp, dp, pp, adp, old_spelling=old_spelling)
        variant = replace(inp, flags={**base, **flags})
        plan = plan_memory(variant)
        # only the blocking codes matter here: fixes are not offered, so not vetted
        report = validate(variant, vet=False)
        blocking = tuple(
            dict.fromkeys(
                f.code
                for f in report.findings
                if f.severity is Severity.ERROR and not f.code.startswith("memory-")
            )
        )
        layout = Layout(tp, dp, pp, adp, plan, blocking, old_spelling)
        if include_blocked or not blocking:
            out.append(layout)
    return out
