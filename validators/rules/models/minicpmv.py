"""MiniCPM-V 4.6 and 4.7, as sglang 0.5.19–0.5.23 resolve them.

Mirrors `srt/arg_groups/model_overrides/minicpmv.py` (`_minicpm_v4_6_overrides`).
The provider is registered for MiniCPM-V 4.6 from 0.5.19 and for 4.7 too from
0.5.23; before that a 4.7 launch keeps sglang's usual backend choice.
"""

from __future__ import annotations

from collections.abc import Iterator

from sglaunch.validators.cards import card
from sglaunch.validators.facts import CheckInput
from sglaunch.validators.findings import Finding
from sglaunch.validators.release_spans import OLDEST, at_least
from sglaunch.validators.rule import override_finding, rule

ARCHS = ("MiniCPMV4_6ForConditionalGeneration", "MiniCPMV4_7ForConditionalGeneration")
# the release from which the provider is registered for each architecture
REGISTERED_SINCE = {ARCHS[0]: OLDEST, ARCHS[1]: "0.5.23"}
SRC = "srt/arg_groups/model_overrides/minicpmv.py"


@rule(
    "minicpmv-sm100-triton",
    summary="On SM100 GPUs sglang runs MiniCPM-V 4.6/4.7 with the triton attention backend",
    mirrors="resolution",
    ref=f"{SRC}:16",
    architectures=ARCHS,
    since=OLDEST,
)
def sm100_triton(inp: CheckInput) -> Iterator[Finding]:
    arch = inp.model.architecture if inp.model else ""
    if not at_least(inp.release, REGISTERED_SINCE.get(arch, OLDEST)):
        return
    # Only --attention-backend is read: prefill/decode overrides do not stop it.
    if inp.gpu.is_sm100 and inp.value("attention_backend") is None:
        yield override_finding(
            "minicpmv-sm100-triton",
            inp,
            "attention_backend",
            "triton",
            "MiniCPM-V 4.6/4.7 on an SM100 GPU (B200/B300 class, CUDA ≥ 12.8) with no "
            "--attention-backend",
            ref=f"{SRC}:16",
        )


card(
    "minicpmv-sm100-triton",
    "sglang runs MiniCPM-V 4.6/4.7 with triton attention on SM100",
    what=(
        "On data-centre Blackwell GPUs (compute capability 10.x, such as B200 and B300, with "
        "CUDA ≥ 12.8) sglang sets attention_backend=triton for MiniCPM-V 4.6 and 4.7 when "
        "--attention-backend is not given. Consumer Blackwell (RTX 5090, 12.0) is not SM100 and "
        "keeps sglang's usual choice. MiniCPM-V 4.7 gets this from sglang 0.5.23 on; "
        "0.5.19–0.5.22 register it for 4.6 only."
    ),
    when="Every MiniCPM-V 4.6/4.7 launch on a B200-class GPU that leaves the backend to sglang.",
    solutions=(
        "Nothing to fix: it is sglang's choice for this model on this GPU.",
        "Name a backend with --attention-backend to pin it; sglang then keeps yours.",
    ),
    before="sglang serve --model-path openbmb/MiniCPM-V-4.6",
    after="sglang serve --model-path openbmb/MiniCPM-V-4.6 --attention-backend triton",
    related=("minicpm-sparse-backend",),
    ref=f"sglang/{SRC}:16",
)
