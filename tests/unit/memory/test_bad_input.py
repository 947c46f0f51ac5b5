"""Bad input to the memory plan: one clear line, never a traceback; the rest still shows."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sglaunch.facts.model import facts_from_config
from sglaunch.validators.engine import all_rules, validate
from sglaunch.validators.facts import GpuDevice, GpuFacts, GpuMode
from sglaunch.validators.memory.plan import plan_memory
from tests.conftest import make_input
from tests.unit.memory.test_memory_rules import MEMORY_CODES

LLAMA_CFG = json.loads(
    (Path(__file__).parents[3] / "sglaunch/examples/llama-3.1-8b/config.json").read_text()
)


def _inp_with_config(config: dict[str, object], argv: list[str] | None = None, gpu: str = "H100x8"):  # type: ignore[no-untyped-def]
    base = make_input(None, argv or [], gpu)
    return replace(base, model=facts_from_config(config, "test"))


@pytest.mark.parametrize(
    ("config", "fragment"),
    [
        ({k: v for k, v in LLAMA_CFG.items() if k != "num_hidden_layers"}, "no num_hidden_layers"),
        (
            {
                k: v
                for k, v in LLAMA_CFG.items()
                if k not in ("num_attention_heads", "head_dim", "hidden_size")
            },
            "neither head_dim nor hidden_size",
        ),
        (
            {
                "architectures": ["DeepseekV2ForCausalLM"],
                "model_type": "deepseek_v2",
                "num_hidden_layers": 4,
                "hidden_size": 256,
                "num_attention_heads": 4,
                "vocab_size": 100,
            },
            "needs kv_lora_rank and qk_rope_head_dim",
        ),
        (
            {
                "architectures": ["GptOssForCausalLM"],
                "model_type": "gpt_oss",
                "num_hidden_layers": 4,
                "hidden_size": 256,
                "num_attention_heads": 4,
                "vocab_size": 100,
                "sliding_window": 128,
            },
            "needs layer_types",
        ),
        (
            {
                "architectures": ["Qwen3NextForCausalLM"],
                "model_type": "qwen3_next",
                "num_hidden_layers": 4,
                "hidden_size": 256,
                "num_attention_heads": 4,
                "vocab_size": 100,
            },
            "no full_attention_interval",
        ),
        (
            {
                "architectures": ["NemotronHForCausalLM"],
                "model_type": "nemotron_h",
                "num_hidden_layers": 4,
                "hidden_size": 256,
                "num_attention_heads": 4,
                "vocab_size": 100,
            },
            "not mirrored",
        ),
    ],
)
def test_a_config_without_the_fields_its_family_needs(
    config: dict[str, object], fragment: str
) -> None:
    plan = plan_memory(_inp_with_config(config))
    assert plan.max_total_num_tokens is None and plan.error is None
    lines = [p for p in plan.problems if fragment in p]
    assert lines and all("\n" not in p for p in plan.problems)
    # the rest of the plan still shows: knobs, baseline, the fraction
    assert plan.baseline is not None and plan.knobs.mem_fraction_static > 0
    assert plan.to_json()["verdict"] == "tight"
    assert any(fragment in a for a in plan.to_json()["assumptions"])


def test_shapes_that_do_not_divide() -> None:
    """SALA's 32 lightning heads over TP 3: sglang's divide() assertion (distributed/utils.py:75-79)."""
    inp = make_input("example:minicpm-sala", ["--tp", "3"], "H100x8")
    plan = plan_memory(inp)
    assert plan.error is not None and plan.error.kind == "shape"
    assert (
        plan.error.message
        == "lightning state heads (32) is not divisible by the attention TP size (3)"
    )
    codes = {f.code for f in validate(inp).findings}
    assert "memory-plan-shape" in codes


def test_a_gpu_with_unknown_memory() -> None:
    devices = (GpuDevice(0, "Mystery GPU", 0, (9, 0)),)
    gpu = GpuFacts(mode=GpuMode.PLANNING, devices=devices, cuda_version="12.9")
    plan = plan_memory(replace(make_input("example:llama-3.1-8b", []), gpu=gpu))
    # sglang's fallback tier and fraction when the capacity is unknown (memory_hook.py:171-180, 324-328)
    assert plan.knobs.gpu_mem_mib is None and plan.knobs.mem_fraction_static == 0.95
    assert plan.error is not None and "weights need" in plan.error.message
    no_gpu = plan_memory(
        replace(make_input("example:llama-3.1-8b", []), gpu=GpuFacts(mode=GpuMode.PLANNING))
    )
    assert no_gpu.problems == ("no GPU facts: pick a planning preset (--gpu NAMExCOUNT)",)


FLAG_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
DESTS = [
    "tp_size", "pp_size", "dp_size", "attn_dp_size", "mem_fraction_static", "chunked_prefill_size",
    "cuda_graph_max_bs_decode", "max_total_tokens", "max_running_requests", "page_size",
    "context_length", "kv_cache_dtype", "swa_full_tokens_ratio", "mamba_full_memory_ratio",
    "max_mamba_cache_size", "max_prefill_tokens", "cuda_graph_bs_decode",
]  # fmt: skip
MODELS = [
    "example:llama-3.1-8b",
    "example:minicpm-sala",
    "gpt-oss-20b-bf16",
    "qwen3-next-80b",
    "deepseek-v2-lite",
]
BASES = {m: make_input(m, [], "H100x8") for m in MODELS}
# the memory rules only: other rules' bounds are tests/hostile's
MEMORY_RULES = [r for r in all_rules() if r.code in MEMORY_CODES]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(model="example:llama-3.1-8b", flags={"tp_size": float("inf")})
@example(model="example:minicpm-sala", flags={"pp_size": 10**12, "dp_size": -(10**12)})
@example(model="qwen3-next-80b", flags={"mem_fraction_static": float("nan"), "page_size": 0})
@given(
    model=st.sampled_from(MODELS),
    flags=st.dictionaries(st.sampled_from(DESTS), FLAG_VALUES, max_size=6),
)
def test_hostile_numbers_never_raise(model: str, flags: dict[str, object]) -> None:
    """Whatever the user types, the plan and the rules answer (bounded, no exception)."""
    inp = replace(BASES[model], flags=flags)
    plan = plan_memory(inp)
    assert plan.verdict in ("fits", "tight", "does-not-fit")
    json.dumps(plan.to_json())
    report = validate(inp, MEMORY_RULES)
    assert not [f for f in report.findings if f.code == "internal-rule-error"], report.findings
