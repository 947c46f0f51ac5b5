"""How the flag editor groups sglang's ~530 flags: the common ones first, then sglang's own sections."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sglaunch.flags.schema import FlagSchema, FlagSpec

# The flags people set most, in the order a launch is usually thought through.
COMMON_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "Model",
        (
            "trust_remote_code",
            "context_length",
            "dtype",
            "quantization",
            "load_format",
            "revision",
            "tokenizer_path",
            "served_model_name",
            "json_model_override_args",
        ),
    ),
    (
        "Parallelism",
        (
            "tp_size",
            "pp_size",
            "dp_size",
            "attn_dp_size",
            "enable_dp_attention",
            "ep_size",
            "ep_join_mode",
            "nnodes",
            "node_rank",
            "dist_init_addr",
            "base_gpu_id",
        ),
    ),
    (
        "Memory",
        (
            "mem_fraction_static",
            "max_running_requests",
            "max_total_tokens",
            "chunked_prefill_size",
            "max_prefill_tokens",
            "kv_cache_dtype",
            "page_size",
            "cuda_graph_max_bs",
        ),
    ),
    (
        "Attention and backends",
        (
            "attention_backend",
            "prefill_attention_backend",
            "decode_attention_backend",
            "sampling_backend",
            "grammar_backend",
            "mm_attention_backend",
            "moe_runner_backend",
            "moe_a2a_backend",
        ),
    ),
    (
        "Cache",
        (
            "disable_radix_cache",
            "enable_hierarchical_cache",
            "hicache_ratio",
            "hicache_size",
            "hicache_write_policy",
            "radix_eviction_policy",
        ),
    ),
    (
        "Disaggregation",
        (
            "disaggregation_mode",
            "disaggregation_transfer_backend",
            "disaggregation_bootstrap_port",
            "disaggregation_ib_device",
        ),
    ),
    (
        "Serving",
        (
            "host",
            "port",
            "api_key",
            "log_level",
            "enable_metrics",
            "skip_server_warmup",
            "chat_template",
            "reasoning_parser",
            "tool_call_parser",
        ),
    ),
)

# Shown in the model panel, not the editor.
HIDDEN = frozenset({"model_path"})


@dataclass(frozen=True)
class Group:
    title: str
    flags: tuple[FlagSpec, ...]
    common: bool


def build_groups(schema: FlagSchema) -> list[Group]:
    """Every flag exactly once: the common groups, then the rest by sglang's own sections."""
    seen: set[str] = set(HIDDEN)
    groups: list[Group] = []
    for title, dests in COMMON_GROUPS:
        specs = tuple(schema.by_dest[d] for d in dests if d in schema.by_dest and d not in seen)
        seen.update(s.dest for s in specs)
        if specs:
            groups.append(Group(title, specs, True))
    rest: dict[str, list[FlagSpec]] = {}
    for spec in schema.primary_flags():
        if spec.dest in seen:
            continue
        title = spec.section or _namespace_title(spec.namespace)
        rest.setdefault(title, []).append(spec)
    common_titles = {g.title for g in groups}
    for title in sorted(rest):
        shown = f"{title} (more)" if title in common_titles else title
        groups.append(Group(shown, tuple(rest[title]), False))
    return groups


def _namespace_title(ns: str) -> str:
    if not ns:
        return "Other"
    return ns.replace("exec.", "").replace("_", " ").capitalize()
