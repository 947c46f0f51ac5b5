"""Flags sglang's argparse parser rejects: unknown names, bad values, ambiguous prefixes.

These mirror `prepare_server_args` (srt/server_args.py:668): argparse exits 2
with `sglang serve: error: ...` before anything else runs. The parser in
`sglaunch.flags.argv` collects the problems; these rules explain them.
"""

from __future__ import annotations

from collections.abc import Iterator

from sglaunch.validators.cards import card
from sglaunch.validators.facts import CheckInput, FlagIssue, FlagIssueKind
from sglaunch.validators.findings import Finding, Fix, Severity
from sglaunch.validators.rule import rule

REF = "srt/server_args.py:696 (argparse, parse_args)"


def _issues(inp: CheckInput, *kinds: FlagIssueKind) -> Iterator[FlagIssue]:
    return (i for i in inp.flag_issues if i.kind in kinds)


@rule("unknown-flag", summary="sglang does not know this flag", mirrors="parse", ref=REF)
def unknown_flag(inp: CheckInput) -> Iterator[Finding]:
    for issue in _issues(inp, FlagIssueKind.UNKNOWN):
        hint = ""
        if issue.suggestions:
            hint = " — did you mean " + " or ".join(issue.suggestions) + "?"
        elif not issue.option.startswith("-"):
            hint = " — a value without a flag before it"
        yield Finding(
            code="unknown-flag",
            severity=Severity.ERROR,
            message=f"{issue.message}{hint}",
            flags=(),
            ref=REF,
            detail=f"sglang serve: error: {issue.message}",
        )


@rule(
    "ambiguous-flag", summary="a flag prefix matches several sglang flags", mirrors="parse", ref=REF
)
def ambiguous_flag(inp: CheckInput) -> Iterator[Finding]:
    for issue in _issues(inp, FlagIssueKind.AMBIGUOUS):
        yield Finding(
            code="ambiguous-flag",
            severity=Severity.ERROR,
            message=issue.message,
            ref=REF,
            detail="argparse accepts a unique prefix of a flag (--tp for --tp-size); this one is not unique.",
        )


@rule(
    "invalid-flag-value",
    summary="a flag's value has the wrong type or is not one of its choices",
    mirrors="parse",
    ref=REF,
)
def invalid_value(inp: CheckInput) -> Iterator[Finding]:
    for issue in _issues(
        inp,
        FlagIssueKind.INVALID_VALUE,
        FlagIssueKind.INVALID_CHOICE,
        FlagIssueKind.MISSING_VALUE,
        FlagIssueKind.UNEXPECTED_VALUE,
    ):
        fixes: tuple[Fix, ...] = ()
        if issue.dest and issue.kind is FlagIssueKind.INVALID_CHOICE and issue.suggestions:
            fixes = tuple(Fix(label=f"Use {s}", set={issue.dest: s}) for s in issue.suggestions[:3])
        msg = issue.message
        if issue.kind is FlagIssueKind.INVALID_CHOICE and issue.suggestions:
            msg += f" — did you mean {issue.suggestions[0]!r}?"
        yield Finding(
            code="invalid-flag-value",
            severity=Severity.ERROR,
            message=msg,
            flags=(issue.dest,) if issue.dest else (),
            fixes=fixes,
            ref=REF,
        )


@rule(
    "deprecated-flag",
    summary="a flag sglang 0.5.23 still accepts but has replaced",
    mirrors="parse",
    ref="srt/arg_groups/argparse_actions.py:95",
)
def deprecated_flag(inp: CheckInput) -> Iterator[Finding]:
    # --enable-dp-attention has its own, more precise rule (parallel.py).
    if inp.is_set("disable_cuda_graph"):
        name = inp.cli("disable_cuda_graph")
        yield Finding(
            code="deprecated-flag",
            severity=Severity.WARNING,
            message=f"'{name}' is deprecated and will be removed in a future release. "
            "Use '--cuda-graph-backend-{decode,prefill}=disabled' instead.",
            flags=("disable_cuda_graph",),
            fixes=(
                Fix(
                    label="Use the replacement spelling",
                    set={
                        "cuda_graph_backend_decode": "disabled",
                        "cuda_graph_backend_prefill": "disabled",
                    },
                    unset=("disable_cuda_graph",),
                ),
            ),
            ref="srt/arg_groups/argparse_actions.py:95",
        )


card(
    "unknown-flag",
    "sglang does not know this flag",
    what=(
        "sglang's argument parser has no flag by this name (or prefix), so `sglang serve` "
        "prints its usage and `sglang serve: error: unrecognized arguments: ...` and exits "
        "with status 2 before loading anything."
    ),
    when=(
        "A typo; a flag from another sglang version (flags are renamed between releases); a "
        "vLLM flag in an sglang command; or a value whose flag was lost when a multi-line "
        "command was pasted without its backslashes."
    ),
    solutions=(
        "Use the suggested spelling, if one is shown.",
        "Search the flag editor (or `sglang serve --help`) for the setting you meant.",
        "Remove the flag: sglang 0.5.23 does not have it.",
    ),
    before="sglang serve --model-path meta-llama/Llama-3.1-8B --tensor-paralel-size 2",
    after="sglang serve --model-path meta-llama/Llama-3.1-8B --tensor-parallel-size 2",
    related=("ambiguous-flag", "invalid-flag-value"),
    patterns=(r"unrecognized arguments:",),
    ref=f"sglang/{REF}",
    stage="parse",
)

card(
    "ambiguous-flag",
    "This flag prefix matches several sglang flags",
    what=(
        "sglang's parser accepts any unique prefix of a flag (`--tp` for `--tp-size`), but "
        "this prefix starts several flags, so argparse stops with `ambiguous option`."
    ),
    when="Shortened flags typed by hand, or written for an older sglang with fewer flags.",
    solutions=("Write the flag in full; the message lists the candidates.",),
    before="sglang serve --model-path X --mem 0.8",
    after="sglang serve --model-path X --mem-fraction-static 0.8",
    related=("unknown-flag",),
    patterns=(r"ambiguous option:",),
    ref=f"sglang/{REF}",
    stage="parse",
)

card(
    "invalid-flag-value",
    "A flag's value is not one sglang accepts",
    what=(
        "argparse converts each value with the flag's type (int, float, JSON, a size like 32k) "
        "and checks it against the flag's choices; a value that fails stops `sglang serve` "
        "with exit status 2 and the message shown."
    ),
    when=(
        "A non-numeric size (--tp-size two), a backend name from another release or engine "
        "(--attention-backend flash_attn), a flag that needs a value at the end of the line, "
        "or `--flag=value` on an on/off switch."
    ),
    solutions=(
        "Use a value of the flag's type; the flag editor lists the choices.",
        "If a choice is suggested, take it.",
    ),
    before="sglang serve --model-path X --tp-size two",
    after="sglang serve --model-path X --tp-size 2",
    related=("unknown-flag",),
    patterns=(
        r"argument --[\w-]+(?:/--[\w-]+)*: (?:invalid|expected|ignored explicit)",
        r"invalid choice: ",
    ),
    ref=f"sglang/{REF}",
    stage="parse",
)

card(
    "deprecated-flag",
    "This flag is deprecated in sglang 0.5.23",
    what="sglang still accepts the flag and prints a deprecation warning; a later release will reject it.",
    when="Launch lines written for older sglang releases.",
    solutions=("Switch to the replacement the message names.",),
    before="sglang serve --model-path X --disable-cuda-graph",
    after="sglang serve --model-path X --cuda-graph-backend-decode disabled --cuda-graph-backend-prefill disabled",
    related=("deprecated-dp-attention",),
    patterns=(r"is deprecated and will be removed in a future release",),
    ref="sglang/srt/arg_groups/argparse_actions.py:95",
    stage="parse",
)
