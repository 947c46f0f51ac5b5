"""Serving checks from sglang's check_server_args (srt/arg_groups/validation_hook.py:172).

check_server_args runs right after resolution, before any process starts, so
these fail as fast as a resolution error.
"""

from __future__ import annotations

from collections.abc import Iterator

from sglaunch.validators.cards import card
from sglaunch.validators.facts import CheckInput
from sglaunch.validators.findings import Finding, Fix, Severity
from sglaunch.validators.rule import rule

VALIDATION = "srt/arg_groups/validation_hook.py"


@rule(
    "chunked-prefill-page-size",
    summary="--chunked-prefill-size must be a multiple of --page-size",
    mirrors="resolution",
    ref=f"{VALIDATION}:244",
)
def chunked_page(inp: CheckInput) -> Iterator[Finding]:
    chunk, page = inp.value("chunked_prefill_size"), inp.value("page_size")
    if not (inp.is_set("chunked_prefill_size") and inp.is_set("page_size")):
        return
    if not isinstance(chunk, int) or not isinstance(page, int) or page <= 0:
        return
    if chunk > 0 and inp.value("disaggregation_mode") != "decode" and chunk % page != 0:
        fixed = max(page, (chunk // page) * page)
        yield Finding(
            code="chunked-prefill-page-size",
            severity=Severity.ERROR,
            message="chunked_prefill_size must be divisible by page_size",
            flags=("chunked_prefill_size", "page_size"),
            fixes=(
                Fix(
                    label=f"Use --chunked-prefill-size {fixed}", set={"chunked_prefill_size": fixed}
                ),
            ),
            ref=f"{VALIDATION}:244 (check_server_args)",
            detail=f"--chunked-prefill-size {chunk} with --page-size {page}.",
        )


@rule(
    "served-model-name-colon",
    summary="--served-model-name cannot contain ':'",
    mirrors="resolution",
    ref=f"{VALIDATION}:215",
)
def served_name(inp: CheckInput) -> Iterator[Finding]:
    name = inp.value("served_model_name")
    if isinstance(name, str) and ":" in name and not name.startswith(("s3://", "gs://", "az://")):
        yield Finding(
            code="served-model-name-colon",
            severity=Severity.ERROR,
            message="served_model_name cannot contain a colon (':') character. The colon is reserved for the "
            f"'model:adapter' syntax used in LoRA adapter specification. Invalid value: '{name}'",
            flags=("served_model_name",),
            fixes=(
                Fix(
                    label=f"Use {name.replace(':', '-')}",
                    set={"served_model_name": name.replace(":", "-")},
                ),
            ),
            ref=f"{VALIDATION}:215 (check_server_args)",
        )


card(
    "chunked-prefill-page-size",
    "--chunked-prefill-size must be a multiple of --page-size",
    what="Prefill chunks are cut on KV-cache page boundaries, so a chunk must hold whole pages.",
    when="Setting a page size for a backend (64 for trtllm, 128 for fa4) while keeping an old chunk size.",
    solutions=("Round --chunked-prefill-size to a multiple of --page-size (or drop one of them).",),
    before="sglang serve --model-path X --page-size 64 --chunked-prefill-size 1000",
    after="sglang serve --model-path X --page-size 64 --chunked-prefill-size 960",
    patterns=(r"chunked_prefill_size must be divisible by page_size",),
    ref=f"sglang/{VALIDATION}:244",
)

card(
    "served-model-name-colon",
    "--served-model-name cannot contain ':'",
    what="sglang reserves 'model:adapter' for choosing a LoRA adapter in requests, so names cannot contain a colon.",
    when="Names copied from Ollama-style tags (llama3:8b).",
    solutions=("Use a dash or slash instead of the colon.",),
    before="sglang serve --model-path X --served-model-name llama3:8b",
    after="sglang serve --model-path X --served-model-name llama3-8b",
    patterns=(r"served_model_name cannot contain a colon",),
    ref=f"sglang/{VALIDATION}:215",
)
