"""Property: the launch-line parser, the profile loader and the --config loader, fed random
and mutated input, raise nothing but sglaunch's own UserError, each within a deadline.

The deadline bounds the work of one example (hypothesis fails one that runs past it);
derandomized, so a run in CI is the run on a laptop.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sglaunch.errors import UserError
from sglaunch.flags.launchline import parse_launch_line
from sglaunch.profiles.command import profile_from_command
from sglaunch.profiles.sglang_yaml import profile_from_yaml
from sglaunch.profiles.tomlform import profile_from_toml

FUZZ = settings(
    max_examples=150,
    deadline=timedelta(seconds=2),
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

LAUNCH_SEEDS = [
    "python -m sglang.launch_server --model-path /m --tp 2 --api-key sk-x",
    "HF_TOKEN=x CUDA_VISIBLE_DEVICES=0,1 sglang serve /m --dp-size 2 \\\n  --mem-fraction-static 0.8",
    "$ nohup python3 -m sglang.launch_server --model-path=/m --json-model-override-args '{\"a\": [1]}' > log 2>&1 &",
    "python -m sglang.launch_server --model-path /m --cuda-graph-bs-decode 1 2 4 --config c.yaml",
]
TOML_SEEDS = [
    'schema_version = 1\nmodel = "/m"\n[flags]\ntp_size = 2\ncuda_graph_bs_decode = [1, 2]\n'
    '[env]\nSGLANG_X = "1"\n[secrets]\napi_key = "K"\n[gpus]\ncuda_visible_devices = "0,1"\n',
    'model = "example:minicpm4-8b"\nnotes = """a\nb"""\n[flags.cuda_graph_config]\nx = {y = [1.5]}\n'
    '[validated]\nsglang_version = "0.5.23"\ngpu_names = ["H100"]\ngpu_count = 8\nat = 2025-01-01T00:00:00Z\n',
]
YAML_SEEDS = [
    "model-path: /m\ntp-size: 2\nenable-metrics: true\ncuda-graph-bs-decode: [1, 2, 4]\n",
    "# launch: FOO=1 python -m sglang.launch_server --config c.yaml --api-key x\nmodel-path: /m\n"
    "cuda-graph-config: {a: &x [1, 2], b: *x}\nmem-fraction-static: 0.8\n",
]
# Pieces that make structure: nesting, quoting, anchors, numbers no one can mean.
PIECES = st.sampled_from(
    ["[", "]", "{", "}", '"', "'", '"""', "\n", "\\", "=", ":", ",", "&a ", "*a", "<<: *a", "- ",
     "#", "--", "--tp", "--api-key", "nan", "inf", "1e400", "9" * 400, "\x00", "\x1b", "\u2028",
     "$(", "`", ".a.a.a", "[[x]]", "\t", " \\\n"]
)  # fmt: skip


@st.composite
def mutated(draw: st.DrawFn, seeds: list[str]) -> str:
    """A seed with a few edits: a piece inserted, a slice dropped, or a slice repeated
    (repeating a bracket run is how nesting grows)."""
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        kind = draw(st.integers(0, 2))
        if kind == 0:
            text = text[:at] + draw(PIECES) * draw(st.integers(1, 300)) + text[at:]
        elif kind == 1:
            text = text[:at] + text[at + draw(st.integers(0, 20)) :]
        else:
            piece = text[at : at + draw(st.integers(1, 8))]
            text = text[:at] + piece * draw(st.integers(1, 200)) + text[at:]
    return text


def _nested(depth: int, kind: str) -> str:
    return ("[" * depth + "]" * depth) if kind == "[" else ("{a = " * depth + "1" + "}" * depth)


# Values no parser should take on trust: deep nesting, huge integers, NaN, control characters.
HOSTILE_VALUES = st.one_of(
    st.builds(_nested, st.integers(0, 5000), st.sampled_from(["[", "{"])),
    st.integers(1, 6000).map(lambda n: "9" * n),
    st.sampled_from(["nan", "inf", "-inf", "1e400", "0x" + "f" * 70, '"\u0000"', '"a\nb"']),
)


@st.composite
def toml_hostile(draw: st.DrawFn) -> str:
    value = draw(HOSTILE_VALUES)
    where = draw(
        st.sampled_from(["[flags]\ntp_size = {}", "notes = {}", "[env]\nX = {}", "x{} = 1"])
    )
    if where.startswith("x"):
        value = ".a" * draw(st.integers(0, 5000))
    return 'model = "/m"\n' + where.format(value) + "\n"


@st.composite
def yaml_hostile(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        levels, fan = draw(st.integers(1, 10)), draw(st.integers(1, 10))
        lines = ["cuda-graph-bs-decode: &a0 [1]", "json-model-override-args:"]
        for i in range(1, levels):
            lines.append(f"  k{i}: &a{i} [{', '.join([f'*a{i - 1}'] * fan)}]")
        return "\n".join(lines) + "\n"
    value = draw(HOSTILE_VALUES).replace("{a = ", "{a: ").replace("nan", ".nan")
    return f"model-path: /m\n{draw(st.sampled_from(['tp-size', 'cuda-graph-config']))}: {value}\n"


@st.composite
def launch_hostile(draw: st.DrawFn) -> str:
    value = draw(HOSTILE_VALUES).replace(" ", "")
    flag = draw(
        st.sampled_from(
            ["--tp-size", "--mem-fraction-static", "--cuda-graph-config", "--api-keys", "--x"]
        )
    )
    return f"python -m sglang.launch_server --model-path /m {flag} '{value}' " + "--y " * draw(
        st.integers(0, 3000)
    )


def inputs(
    seeds: list[str], hostile: st.SearchStrategy[str] | None = None
) -> st.SearchStrategy[str]:
    parts = [st.text(max_size=400), mutated(seeds)]
    return st.one_of(*parts, *([hostile] if hostile is not None else []))


def _only_user_errors(call: object, *args: object, **kwargs: object) -> None:
    try:
        call(*args, **kwargs)  # type: ignore[operator]
    except UserError as exc:
        assert exc.message and "\n" not in exc.message.strip()


@FUZZ
@given(inputs(LAUNCH_SEEDS, launch_hostile()))
def test_launch_line_parser(text: str) -> None:
    _only_user_errors(parse_launch_line, text)


@FUZZ
@given(inputs(LAUNCH_SEEDS, launch_hostile()))
def test_launch_line_import(text: str) -> None:
    _only_user_errors(profile_from_command, text, name="f", base_dir=Path("/nonexistent"))


@FUZZ
@given(
    st.one_of(
        inputs(TOML_SEEDS, toml_hostile()),
        st.binary(max_size=300).map(lambda b: b.decode("latin-1")),
    )
)
def test_profile_loader(text: str) -> None:
    data = text.encode("utf-8", "surrogatepass")
    _only_user_errors(profile_from_toml, data, name="f", path=Path("f.toml"))


@FUZZ
@given(inputs(YAML_SEEDS, yaml_hostile()))
def test_config_loader(text: str) -> None:
    _only_user_errors(profile_from_yaml, text, name="f", source="c.yaml")
