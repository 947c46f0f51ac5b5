"""sglang's own KV-pool arithmetic, run in the oracle's forked child after resolution.

Runs under the *sglang* interpreter, loaded by path from `oracle_worker.py` (standard
library and sglang only). Given the resolved ServerArgs and an emulated
baseline P and weights W, it calls the installed sglang's (0.5.19 to 0.5.23) own
`KVCacheConfigurator._resolve_memory_pool_config` — the budget check
(`_profile_available_bytes`, with `get_available_gpu_memory` answering P − W),
the mamba/state split, `create_memory_pool_configurator(...).calculate_pool_sizes`,
the user cap and `resolve_max_num_reqs` — on a stub configurator that carries
what the real one would (model config, layer slice, dtypes), so no tensor is
allocated and no CUDA call is made. PP stages are sized one by one; their
all-reduce MIN is replayed in Python.

Request: {"pre_gib": P, "weights_bytes": W, "kv_cache_quant_algo": str|None}
Answer:  {"ok": bool, "max_total_num_tokens", "max_running_requests",
          "swa_tokens", "max_mamba_cache_size", "cell_bytes": [per stage],
          "error": {"type", "message", "fault"?} | None}   (fault: the stub, not sglang)
"""

from __future__ import annotations

import types
from typing import Any

# what a stub that does not fit the release's code raises (a name, a field, a signature
# it lacks); sglang's own verdicts are ValueError / RuntimeError with its message
PROBE_FAULTS = (AttributeError, ImportError, NameError, TypeError)


def _layer_info(model_config: Any, rank: int, pp: int) -> Any:
    from sglang.srt.distributed.utils import get_pp_indices

    start, end = get_pp_indices(model_config.num_hidden_layers, rank, pp)
    owned = range(start, end)
    swa = full = None
    if getattr(model_config, "swa_attention_layer_ids", None) is not None:
        swa = [i for i in model_config.swa_attention_layer_ids if i in owned]
        full = [i for i in model_config.full_attention_layer_ids if i in owned]
    return types.SimpleNamespace(
        start_layer=start,
        end_layer=end,
        num_effective_layers=end - start,
        swa_attention_layer_ids=swa,
        full_attention_layer_ids=full,
        is_hybrid_swa_mtp_draft=False,
    )


def _sliding_window(model_config: Any) -> Any:
    """resolve_sliding_window_size (load_model_utils.py:144-157) without a loaded model.

    The model classes that define get_attention_sliding_window_size are not imported
    here (they pull in GPU kernels); gpt-oss's is `config.sliding_window - 1`
    (models/gpt_oss.py:131-132).
    """
    from sglang.srt.model_executor.model_runner_components import load_model_utils

    hf = model_config.hf_config
    model = types.SimpleNamespace()
    if "GptOssForCausalLM" in (hf.architectures or []):
        model.get_attention_sliding_window_size = lambda: hf.sliding_window - 1
    return load_model_utils.resolve_sliding_window_size(model, model_config)


WARM_MODULES = (
    "sglang.srt.mem_cache.kv_cache_configurator",
    "sglang.srt.model_executor.pool_configurator",
    "sglang.srt.model_executor.model_runner_components.load_model_utils",
    "sglang.srt.mem_cache.kv_cache_dtype",
    "sglang.srt.configs.hybrid_arch",
    "sglang.srt.speculative.spec_info",
)


def warm() -> None:
    """Import what pool_answer needs while the process still looks CPU-only (see worker.warm_up)."""
    import importlib

    for name in WARM_MODULES:
        importlib.import_module(name)


def _stub(server_args: Any, model_config: Any, rank: int, quant_algo: str | None) -> Any:
    """A KVCacheConfigurator stand-in with the fields the pool arithmetic reads."""
    from sglang.srt.arg_groups.overrides import resolved_view, use_mla_backend
    from sglang.srt.configs import hybrid_arch
    from sglang.srt.mem_cache.kv_cache_configurator import KVCacheConfigurator
    from sglang.srt.mem_cache.kv_cache_dtype import configure_kv_cache_dtype
    from sglang.srt.runtime_context import get_parallel
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    view = resolved_view(server_args)
    quant = types.SimpleNamespace(kv_cache_quant_algo=quant_algo)
    kv_str, kv_dtype = configure_kv_cache_dtype(
        server_args_kv_cache_dtype=view.kv_cache_dtype,
        model=types.SimpleNamespace(quant_config=quant),
        model_dtype=model_config.dtype,
        is_draft_worker=False,
        is_dflash=False,
        speculative_draft_attention_backend=None,
    )
    pp = view.pp_size
    kvc = types.SimpleNamespace(
        device="cuda",
        gpu_id=0,
        attn_dp_size=get_parallel().attn_dp_size,
        pp_size=pp,
        # 0.5.19 reads the widths from its model runner's parallel state
        ps=types.SimpleNamespace(attn_dp_size=get_parallel().attn_dp_size, pp_size=pp),
        model=None,
        model_config=model_config,
        server_args=server_args,
        kv_cache_dtype=kv_dtype,
        kv_cache_dtype_str=kv_str if kv_str is not None else view.kv_cache_dtype,
        model_dtype=model_config.dtype,
        page_size=view.page_size,
        sliding_window_size=_sliding_window(model_config),
        spec_algorithm=SpeculativeAlgorithm.from_string(view.speculative_algorithm),
        is_draft_worker=False,
        post_capture_kv_active=False,
        spec_aux_config=types.SimpleNamespace(
            eagle_draft_num_layers=None,
            eagle_draft_swa_num_layers=None,
            dflash_draft_num_layers=None,
            draft_model_config=None,
        ),
        is_hybrid_swa=model_config.is_hybrid_swa,
        is_hybrid_swa_compress=getattr(model_config, "is_hybrid_swa_compress", False),
        use_mla_backend=use_mla_backend(server_args),
        layer_info=_layer_info(model_config, rank, pp),
        extra_mamba_cache_bytes_per_req=0,
        kv_shard_spec=None,
        kv_shard_rank=None,
        kv_shard_size=1,
        draft_parallel_layout=None,
    )
    # each release reads the configs it knows (0.5.19 has no KDA hybrid)
    for name in ("mambaish_config", "hybrid_gdn_config", "hybrid_kda_config"):
        of = getattr(hybrid_arch, name, None)
        setattr(kvc, name, of(model_config) if of is not None else None)
    kvc.is_hybrid_swa_mtp_draft = False
    kvc.draft_swa_full_capacity = False
    kvc.fused_entry_bytes = lambda _name: None
    for name in (
        "_calculate_mamba_ratio",
        "_handle_max_mamba_cache",
        "_apply_token_constraints",
        "_profile_available_bytes",
        "resolve_max_num_reqs",
        "config_from_budget",
        "_resolve_memory_pool_config",
    ):
        setattr(kvc, name, types.MethodType(getattr(KVCacheConfigurator, name), kvc))
    return kvc


def _one_stage(kvc: Any, pre_gib: float, min_tokens: int | None) -> dict[str, Any]:
    """sglang's _resolve_memory_pool_config for one stage; `min_tokens` replays the PP all-reduce."""
    import torch
    from sglang.srt.model_executor.pool_configurator import create_memory_pool_configurator
    from sglang.srt.runtime_context import get_schedule

    def all_reduce(tensor: Any, *args: Any, **kwargs: Any) -> None:
        if min_tokens is not None:
            tensor.fill_(min(int(tensor.item()), min_tokens))

    original = torch.distributed.all_reduce
    torch.distributed.all_reduce = all_reduce
    try:
        config = kvc._resolve_memory_pool_config(pre_gib)
    finally:
        torch.distributed.all_reduce = original
    configurator = create_memory_pool_configurator(kvc)
    cell = getattr(configurator, "_cell_size", None)
    return {
        "max_total_num_tokens": int(config.max_total_num_tokens),
        "max_running_requests": config.max_running_requests,
        "swa_tokens": config.swa_max_total_num_tokens,
        "max_mamba_cache_size": get_schedule().max_mamba_cache_size
        if kvc.mambaish_config is not None
        else None,
        "cell_bytes": float(cell) if cell is not None else None,
    }


def pool_answer(server_args: Any, spec: dict[str, Any]) -> dict[str, Any]:
    """sglang's pool sizing for the resolved `server_args` under the emulated memory in `spec`."""
    from sglang.srt.arg_groups.overrides import model_config_of
    from sglang.srt.mem_cache import kv_cache_configurator as kcm
    from sglang.srt.runtime_context import get_parallel, publish

    pre_gib = float(spec["pre_gib"])
    available_gib = pre_gib - float(spec["weights_bytes"]) / (1 << 30)
    out: dict[str, Any] = {"ok": False, "error": None}
    try:
        model_config = model_config_of(server_args)
        publish(server_args, role="scheduler")
        # no process groups exist here: the one collective is replayed in _one_stage
        world = types.SimpleNamespace(cpu_group=None, world_size=1)
        parallel = get_parallel()
        if hasattr(kcm, "get_world_group"):  # 0.5.19-0.5.20 read it from parallel_state
            kcm.get_world_group = lambda: world
        if hasattr(type(parallel), "override_permanently"):
            parallel.override_permanently(world_group=world)
        else:
            # 0.5.19 stamps the derived widths when the groups are built (dp_attention.py:373,
            # parallel_state.py:2517): the same function, from the resolved leaves
            from sglang.srt.runtime_context import derive_parallel_widths

            def width(name: str) -> int:
                return int(getattr(server_args, name, 1) or 1)

            dcp = width("dcp_size")
            parallel.stamp_derived_widths(
                **derive_parallel_widths(
                    tp_size=width("tp_size"),
                    attn_cp_size=width("attn_cp_size"),
                    attn_dp_size=width("dp_size") if server_args.enable_dp_attention else 1,
                    moe_ep_size=width("ep_size"),
                    moe_dp_size=width("moe_dp_size"),
                    dcp_size=dcp,
                    dcp_enabled=dcp > 1,
                )
            )
        # the budget check's free-memory probe: P - W, the MIN over ranks sglang would take
        kcm.get_available_gpu_memory = lambda *a, **k: available_gib
        kcm.gc.collect = lambda *a, **k: 0
        pp = server_args.pp_size
        stages = []
        for rank in range(pp):
            _reset_mamba(model_config)
            stages.append(
                _one_stage(
                    _stub(server_args, model_config, rank, spec.get("kv_cache_quant_algo")),
                    pre_gib,
                    None,
                )
            )
        if pp > 1:
            low = min(s["max_total_num_tokens"] for s in stages)
            _reset_mamba(model_config)
            final = _one_stage(
                _stub(server_args, model_config, 0, spec.get("kv_cache_quant_algo")), pre_gib, low
            )
        else:
            final = stages[0]
        out.update(final)
        out["cell_bytes"] = [s["cell_bytes"] for s in stages]
        out["ok"] = True
    except BaseException as exc:  # sglang's own errors are the answer
        out["error"] = {"type": type(exc).__name__, "message": str(exc)}
        if isinstance(exc, PROBE_FAULTS):
            out["error"]["fault"] = True  # this stub does not fit the release: no verdict
    return out


def _reset_mamba(model_config: Any) -> None:
    """Forget a max_mamba_cache_size an earlier stage's sizing wrote into the context."""
    from sglang.srt.configs.hybrid_arch import mambaish_config
    from sglang.srt.runtime_context import get_context, get_server_args

    if mambaish_config(model_config) is None:
        return
    user = getattr(get_server_args(), "max_mamba_cache_size", None)
    get_context().override("sglaunch.memory_probe.reset", max_mamba_cache_size=user)
