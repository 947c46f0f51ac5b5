"""The flag parser behaves like sglang's argparse parser: abbreviations, =, aliases, argparse's words."""

from __future__ import annotations

import pytest

from sglaunch.errors import UserError
from sglaunch.flags.argv import parse_argv, to_argv
from sglaunch.flags.launchline import parse_launch_line
from sglaunch.flags.schema import FlagSchema, FlagSpec, bundled_schema
from sglaunch.validators.facts import FlagIssueKind

S = bundled_schema()


def values(argv: list[str]) -> dict:
    p = parse_argv(argv, S)
    assert p.issues == [], p.issues
    return p.values


def test_schema_is_the_real_one() -> None:
    assert S.sglang_version == "0.5.23"
    assert len(S) > 500
    assert S.get("tp_size").options == ("--tp-size", "--tensor-parallel-size")
    assert "minicpm_flashattn" in S.get("attention_backend").choices
    assert not S.help_included  # the bundled schema is facts only


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--tp-size", "2"], {"tp_size": 2}),
        (["--tp", "2"], {"tp_size": 2}),  # argparse prefix
        (["--tp=2"], {"tp_size": 2}),
        (["--tensor-parallel-size=4"], {"tp_size": 4}),
        (["--dp", "2"], {"dp_size": 2}),
        (["--mem-frac", "0.8"], {"mem_fraction_static": 0.8}),
        (["--model", "x"], {"model_path": "x"}),
        (["--enable-dp-attention"], {"enable_dp_attention": True}),
        (["--enable-hicache"], {"enable_hierarchical_cache": True}),
        (["--elastic-ep-join-mode", "scale"], {"ep_join_mode": "scale"}),
        (["--context-length", "32k"], {"context_length": 32000}),
        (["--context-length", "4Ki"], {"context_length": 4096}),
        (["--tp", "2", "--tp", "4"], {"tp_size": 4}),  # last wins
        (["--lora-paths", "a", "b=c"], {"lora_paths": ["a", "b=c"]}),
        (["--json-model-override-args", '{"a": 1}'], {"json_model_override_args": '{"a": 1}'}),
    ],
)
def test_accepted(argv: list[str], expected: dict) -> None:
    assert values(argv) == expected


def test_negative_numbers_are_values() -> None:
    assert values(["--random-seed", "-1"])["random_seed"] == -1


@pytest.mark.parametrize(
    ("argv", "kind", "message"),
    [
        (
            ["--tp-size", "two"],
            FlagIssueKind.INVALID_VALUE,
            "argument --tp-size/--tensor-parallel-size: invalid int value: 'two'",
        ),
        (
            ["--mem-fraction-static", "x"],
            FlagIssueKind.INVALID_VALUE,
            "argument --mem-fraction-static: invalid float value: 'x'",
        ),
        (
            ["--attention-backend", "flash_attn"],
            FlagIssueKind.INVALID_CHOICE,
            "argument --attention-backend: invalid choice: 'flash_attn' (choose from",
        ),
        (
            ["--tp-size"],
            FlagIssueKind.MISSING_VALUE,
            "argument --tp-size/--tensor-parallel-size: expected one argument",
        ),
        (["--tp-size", "--dp", "2"], FlagIssueKind.MISSING_VALUE, "expected one argument"),
        (
            ["--enable-dp-attention=1"],
            FlagIssueKind.UNEXPECTED_VALUE,
            "argument --enable-dp-attention: ignored explicit argument '1'",
        ),
        (["--no-such-flag"], FlagIssueKind.UNKNOWN, "unrecognized arguments: --no-such-flag"),
        (["stray"], FlagIssueKind.UNKNOWN, "unrecognized arguments: stray"),
        (["--e", "1"], FlagIssueKind.AMBIGUOUS, "ambiguous option: --e could match"),
        (
            ["--context-length", "1.5Ki"],
            FlagIssueKind.INVALID_VALUE,
            "Decimals are not allowed with IEC suffixes",
        ),
    ],
)
def test_rejected_with_argparse_words(argv: list[str], kind: FlagIssueKind, message: str) -> None:
    p = parse_argv(argv, S)
    assert [i.kind for i in p.issues] == [kind]
    assert p.issues[0].message.startswith(message) or message in p.issues[0].message


def test_all_problems_at_once() -> None:
    p = parse_argv(
        ["--tp-siez", "2", "--dp-size", "x", "--attention-backend", "nope", "--port", "8000"], S
    )
    assert [i.kind for i in p.issues] == [
        FlagIssueKind.INVALID_VALUE,
        FlagIssueKind.INVALID_CHOICE,
        FlagIssueKind.UNKNOWN,
    ]
    # an unknown flag keeps its value, as argparse reports them together
    assert p.issues[-1].message == "unrecognized arguments: --tp-siez 2"
    assert p.values == {"port": 8000}


def test_did_you_mean() -> None:
    p = parse_argv(["--tensor-paralel-size", "2"], S)
    assert "--tensor-parallel-size" in p.issues[0].suggestions


def test_choice_suggestion() -> None:
    p = parse_argv(["--attention-backend", "flashinfr"], S)
    assert p.issues[0].suggestions[0] == "flashinfer"


def test_round_trip() -> None:
    argv = [
        "--tp-size",
        "2",
        "--enable-hierarchical-cache",
        "--attention-backend",
        "fa3",
        "--lora-paths",
        "a",
        "b",
    ]
    vals = values(argv)
    assert to_argv(vals, S) == argv
    assert values(to_argv(vals, S)) == vals


def test_boolean_optional_round_trip() -> None:
    vals = values(["--no-enable-tf32-matmul"])
    assert vals == {"enable_tf32_matmul": False}
    assert to_argv(vals, S) == ["--no-enable-tf32-matmul"]


# --- pasted launch lines ---------------------------------------------------------------


DEEPSEEK_LINE = r"""
$ CUDA_VISIBLE_DEVICES=0,1,2,3 SGLANG_ENABLE_JIT_DEEPGEMM=0 \
    python3 -m sglang.launch_server \
    --model-path openbmb/MiniCPM4-8B \
    --tp 4 \
    --enable-dp-attention --dp-size 4 \
    --trust-remote-code  # copied from the DeepSeek recipe
"""


def test_multiline_launch_line() -> None:
    line = parse_launch_line(DEEPSEEK_LINE)
    assert line.entry == "launch_server"
    assert line.python == "python3"
    assert line.env == {"CUDA_VISIBLE_DEVICES": "0,1,2,3", "SGLANG_ENABLE_JIT_DEEPGEMM": "0"}
    assert line.argv == [
        "--model-path",
        "openbmb/MiniCPM4-8B",
        "--tp",
        "4",
        "--enable-dp-attention",
        "--dp-size",
        "4",
        "--trust-remote-code",
    ]


def test_sglang_serve_positional_model() -> None:
    line = parse_launch_line(
        "sglang serve Qwen/Qwen3-8B --model-type llm --port 8000 2>&1 | tee log"
    )
    assert line.entry == "serve"
    assert line.argv == ["--model-path", "Qwen/Qwen3-8B", "--port", "8000"]


def test_nohup_and_absolute_python() -> None:
    line = parse_launch_line(
        "nohup /opt/venv/bin/python -m sglang.launch_server --model-path /m --port 30001 > out.log &"
    )
    assert line.python == "/opt/venv/bin/python"
    assert line.argv == ["--model-path", "/m", "--port", "30001"]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "vllm serve meta-llama/Llama-3.1-8B",
        "python -m sglang.launch_server 'unterminated",
    ],
)
def test_not_a_launch_line(text: str) -> None:
    with pytest.raises(UserError) as exc:
        parse_launch_line(text)
    assert "\n" not in str(exc.value)


def test_optional_value_takes_one_token_and_lists_take_all() -> None:
    optional = next(f for f in S.primary_flags() if f.nargs == "?" and f.takes_value)
    listed = next(f for f in S.primary_flags() if f.nargs in ("+", "*") and f.type == "str")
    p = parse_argv([optional.name, "a", "b"], S)
    # argparse gives "?" one value; the second is left over, unrecognised
    assert p.values[optional.dest] == "a"
    assert [i.option for i in p.issues] == ["b"]
    assert values([listed.name, "a", "b"])[listed.dest] == ["a", "b"]


def test_to_argv_writes_flags_that_take_no_value_bare() -> None:
    schema = FlagSchema(
        flags=[
            FlagSpec(dest="c", options=("--c",), action="store_const", type="const", const=7),
            FlagSpec(dest="t", options=("--t", "--tee"), type="int"),
        ],
        sglang_version="0",
    )
    assert to_argv({"c": True, "t": 2}, schema) == ["--c", "--t", "2"]
    assert to_argv({"c": False}, schema) == []
    assert to_argv({"no_such_flag": 3, "on": True}, schema) == ["--no-such-flag", "3", "--on"]
