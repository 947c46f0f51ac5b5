"""The parallel layouts (tp × dp × pp, attention DP) that fit a set of GPUs, each with its plan.

Pure: one `plan_memory` and one rule-engine run per layout, on the user's flags
with the parallel sizes replaced. A layout that another rule rejects (heads that
do not divide, DP attention on a model that refuses it) is listed as not fitting,
with the codes that reject it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sglaunch.validators.engine import validate
from sglaunch.validators.facts import CheckInput
from sglaunch.validators.findings import Severity
from sglaunch.validators.memory.plan import MemoryPlan, plan_memory
from sglaunch.validators.release_spans import has_attn_dp_size
from sglaunch.validators.resolving import attn_dp_size, dp_size, pp_size, tp_size
from sglaunch.validators.rules.general.multinode import ADDRESSING_CODES, layout_maps

PARALLEL_FLAGS = ("tp_size", "dp_size", "pp_size", "attn_dp_size", "enable_dp_attention")
# a layout decides how many nodes one server spans: the line's own count and rank do not carry
NODE_FLAGS = ("nnodes", "node_rank")
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
    # the machines one server spans (--nnodes): tp inside a node, pp across nodes
    nodes: int = 1
    # separate servers behind sglang's router, one per node group: sglang refuses
    # --dp-size replicas across nodes (validation_hook.py:199), so replicas are servers
    servers: int = 1

    @property
    def gpus(self) -> int:
        return self.tp * self.dp * self.pp * self.servers

    @property
    def machines(self) -> int:
        """The nodes the layout uses in all."""
        return self.nodes * self.servers

    @property
    def shape(self) -> str:
        """How the layout spreads over nodes, for the nodes column."""
        if self.servers > 1:
            return f"{self.servers} servers + router"
        if self.nodes > 1:
            return f"1 server on {self.nodes} nodes"
        return ""

    @property
    def verdict(self) -> str:
        return "does-not-fit" if self.blocking else self.plan.verdict

    @property
    def replicas(self) -> int:
        """KV pools that serve requests side by side: each DP replica and each attention-DP
        rank has a scheduler and a pool of its own; PP stages and TP ranks share one."""
        return self.dp * self.attn_dp * self.servers

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
        flags = layout_flags(
            self.tp, self.dp, self.pp, self.attn_dp, old_spelling=self.old_spelling
        )
        if self.nodes > 1:
            flags["nnodes"] = self.nodes
        return flags

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
            nodes=self.nodes,
            servers=self.servers,
            router=self.servers > 1,
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


def multinode_candidates(
    per_node: int, nodes: int, *, dp_attention: bool
) -> list[tuple[int, int, int, int]]:
    """(tp, dp, pp, attn_dp) of ONE server over all `nodes`, every GPU used: tp inside a
    node, pp across nodes (or tp across them), stages that map onto the nodes (engine.py:2045)."""
    world = per_node * nodes
    tps = sorted(set(_powers(world)) | {per_node, world}, reverse=True)
    out = []
    for tp in tps:
        if world % tp or not layout_maps(tp, world // tp, nodes):
            continue
        pp = world // tp
        out.append((tp, 1, pp, 1))
        if dp_attention and tp > 1:
            out.extend((tp, 1, pp, adp) for adp in _powers(tp)[1:] if tp % adp == 0)
    return out


def plan_layouts(inp: CheckInput, *, include_blocked: bool = True) -> list[Layout]:
    """Every candidate layout on the GPUs (of every node), planned and checked.

    On several nodes: one server over all of them, and one server per node behind sglang's
    router; the line's own layout is listed too, whatever it is.
    """
    model = inp.model
    dp_attention = model is not None and model.architecture not in NO_DP_ATTENTION
    # attention DP is written --attn-dp-size from 0.5.22; before, --enable-dp-attention --dp-size
    old_spelling = not has_attn_dp_size(inp.sglang_version)
    nodes = max(inp.gpu.nodes, 1)
    per_node = inp.gpu.count
    if nodes == 1:
        rows = [(c, 1, 1) for c in candidate_layouts(per_node, dp_attention=dp_attention)]
    else:
        rows = [
            (c, nodes, 1) for c in multinode_candidates(per_node, nodes, dp_attention=dp_attention)
        ]
        asked = _asked(inp)
        if asked is not None and (asked, nodes, 1) not in rows:
            rows.insert(0, (asked, nodes, 1))
        # one server per node, replicated: only those that fill a node
        rows += [
            (c, 1, nodes)
            for c in candidate_layouts(per_node, dp_attention=dp_attention)
            if c[0] * c[1] * c[2] == per_node
        ]
    out = []
    for (tp, dp, pp, adp), span, servers in rows:
        layout = _planned(inp, tp, dp, pp, adp, span, servers, old_spelling)
        if include_blocked or not layout.blocking:
            out.append(layout)
    return out


def _asked(inp: CheckInput) -> tuple[int, int, int, int] | None:
    """The line's own (tp, dp, pp, attn_dp) when it sets a parallel size."""
    if not any(inp.is_set(f) for f in PARALLEL_FLAGS):
        return None
    tp, dp, pp, adp = tp_size(inp), dp_size(inp), pp_size(inp), attn_dp_size(inp)
    if min(tp, dp, pp, adp) < 1 or tp * dp * pp > MAX_GPUS * 64:
        return None
    return tp, dp, pp, adp


def _planned(
    inp: CheckInput,
    tp: int,
    dp: int,
    pp: int,
    adp: int,
    nodes: int,
    servers: int,
    old_spelling: bool,
) -> Layout:
    base = {k: v for k, v in inp.flags.items() if k not in PARALLEL_FLAGS + NODE_FLAGS}
    flags = layout_flags(tp, dp, pp, adp, old_spelling=old_spelling)
    if nodes > 1:
        flags["nnodes"] = nodes
    # each server of a replicated layout is a one-node server of its own
    variant = replace(inp, flags={**base, **flags}, gpu=inp.gpu.on_nodes(nodes))
    plan = plan_memory(variant)
    # only the blocking codes matter here: fixes are not offered, so not vetted
    report = validate(variant, vet=False)
    blocking = tuple(
        dict.fromkeys(
            f.code
            for f in report.findings
            if f.severity is Severity.ERROR
            and not f.code.startswith("memory-")
            # how the nodes find each other is the line's business, not the layout's
            and f.code not in ADDRESSING_CODES
        )
    )
    return Layout(tp, dp, pp, adp, plan, blocking, old_spelling, nodes, servers)
