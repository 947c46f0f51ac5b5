"""Serving checks from sglang's check_server_args (srt/arg_groups/validation_hook.py:172).

check_server_args runs right after resolution, before any process starts, so
these fail as fast as a resolution error. `port-range` is sglaunch's own: sglang takes any
integer for --port and fails only when it binds it.
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


# the TCP ports a server can listen on (0 asks the system for any free one)
PORTS = range(1, 65536)


@rule(
    "port-range",
    summary="--port must be a TCP port from 1 to 65535",
    mirrors="launch",
    ref="srt/entrypoints/http_server.py (bind)",
)
def port_range(inp: CheckInput) -> Iterator[Finding]:
    port = inp.value("port")
    if not inp.is_set("port") or not isinstance(port, int) or isinstance(port, bool):
        return
    if port in PORTS:
        return
    yield Finding(
        code="port-range",
        severity=Severity.ERROR,
        message=f"--port {port} is not a TCP port (1 to 65535): sglang accepts it, then "
        + (
            "the server listens on whatever port the system picks, which no client is told"
            if port == 0
            else "the server fails when it binds it"
        ),
        flags=("port",),
        fixes=(Fix(label="Use the default --port 30000", unset=("port",)),),
        ref="srt/entrypoints/http_server.py (bind); srt/server_args.py (PortArgs)",
        detail="sglaunch's own check (sglang accepts this line): --port is a plain integer "
        "while sglang resolves its arguments.",
    )


card(
    "port-range",
    "--port must be a TCP port from 1 to 65535",
    what=(
        "sglaunch's own check (sglang accepts this line): sglang reads --port as any integer and "
        "only fails when a process binds it (Python's socket: 'port must be 0-65535'), after "
        "start-up has begun; port 0 would listen on a port the system picks and nobody knows."
    ),
    when="A typo (99999 for 29999), or a port computed in a script that overflowed.",
    solutions=("Use a port from 1 to 65535 that is free here (the default is 30000).",),
    before="sglang serve --model-path X --port 99999",
    after="sglang serve --model-path X --port 30000",
    ref="sglang/srt/entrypoints/http_server.py",
    stage="launch",
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
