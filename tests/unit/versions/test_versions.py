"""The supported range, the active release, rule spans and what changes between releases."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sglaunch.errors import UserError
from sglaunch.facts.model import known_model_types, load_model_facts
from sglaunch.facts.presets import parse_gpu_spec
from sglaunch.flags.schema import bundled_schema
from sglaunch.in_sglang import oracle_worker as worker
from sglaunch.oracle import setup_env
from sglaunch.release import (
    VersionSource,
    choose,
    oracle_refusal,
    out_of_range_line,
    parse_named,
)
from sglaunch.revalidate import version_changes
from sglaunch.validators.engine import get_rule
from sglaunch.validators.release_spans import SUPPORTED, in_span, key, semantics
from tests.conftest import run_rules

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("0.5.21", (0, 5, 21)),
        ("v0.5.22rc1", (0, 5, 22)),
        ("0.5.23.post1", (0, 5, 23)),
        ("garbage", ()),
        ("", ()),
        (None, ()),
    ],
)
def test_version_keys(text: str | None, want: tuple[int, ...]) -> None:
    assert key(text) == want


@pytest.mark.parametrize(
    ("version", "rules"),
    [
        ("0.5.10", "0.5.19"),
        ("0.5.18", "0.5.19"),
        ("0.5.20", "0.5.20"),
        ("0.5.30", "0.5.23"),
        ("", "0.5.23"),
    ],
)
def test_the_rules_of_a_release_are_its_own_or_the_nearest(version: str, rules: str) -> None:
    assert semantics(version) == rules


def test_spans() -> None:
    assert in_span("0.5.22", "0.5.22", None) and not in_span("0.5.21", "0.5.22", None)
    assert in_span("0.5.18", None, None) and not in_span("0.5.18", "0.5.19", None)
    assert in_span("0.5.20", None, "0.5.21") and not in_span("0.5.22", None, "0.5.21")


@pytest.mark.parametrize(
    ("code", "exists"),
    [
        ("deprecated-dp-attention", {"0.5.22", "0.5.23"}),
        ("dp-with-attn-dp", {"0.5.22", "0.5.23"}),
        ("attn-dp-size-positive", {"0.5.22", "0.5.23"}),
        ("minicpm-dp-attention", set(SUPPORTED)),
        ("minicpmv-sm100-triton", set(SUPPORTED)),
        ("attn-dp-divides-tp", set(SUPPORTED)),
    ],
)
def test_each_rule_exists_in_the_releases_that_have_it(code: str, exists: set[str]) -> None:
    r = get_rule(code)
    assert r is not None
    assert {v for v in SUPPORTED if r.exists_in(v)} == exists
    # before the range only the general rules hold
    assert r.exists_in("0.5.18") is (not code.startswith("minicpm") and "0.5.19" in exists)


def test_choose_installed_then_named_then_default() -> None:
    a = choose("0.5.21", "0.5.20", python="/p")
    assert (a.version, a.source, a.label()) == (
        "0.5.21",
        VersionSource.INSTALLED,
        "sglang 0.5.21 (installed)",
    )
    assert a.named_ignored
    b = choose(None, "0.5.20")
    assert (b.version, b.source, b.installed) == ("0.5.20", VersionSource.NAMED, None)
    c = choose(None, None)
    assert (c.version, c.source, c.rules_version) == ("0.5.23", VersionSource.DEFAULT, "0.5.23")
    assert c.to_json()["sglang_version"] is None and a.to_json()["sglang_version"] == "0.5.21"


def test_a_version_a_warm_service_knows_starts_no_interpreter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sglaunch.release as versions

    def no_probe(python: str | None = None) -> tuple[str | None, str | None, str]:
        raise AssertionError("the installed version was known: nothing to start")

    monkeypatch.setattr(versions, "find_installed", no_probe)
    facts = versions.load_flag_facts(None, "0.5.23", read_installed=False, known="0.5.21")
    assert (facts.active.version, facts.active.source) == ("0.5.21", VersionSource.INSTALLED)
    assert facts.schema.sglang_version == "0.5.21"


@pytest.mark.parametrize("text", ["0.5.18", "0.5.24", "0.5", "x", "0.5.19.1.2"])
def test_a_named_release_must_be_supported(text: str) -> None:
    with pytest.raises(UserError) as info:
        parse_named(text)
    assert "\n" not in info.value.message and "0.5.19–0.5.23" in info.value.message


def test_the_plain_lines() -> None:
    assert out_of_range_line("0.5.21") is None
    old = out_of_range_line("0.5.15")
    assert old is not None and "MiniCPM rules do not exist in sglang 0.5.15" in old
    new = out_of_range_line("0.6.0")
    assert new is not None and "newer than the releases sglaunch mirrors" in new
    assert oracle_refusal("0.5.19") is None and oracle_refusal("0.6.0") is None
    assert "needs sglang 0.5.19 or later" in str(oracle_refusal("0.5.12"))


@pytest.mark.parametrize("version", SUPPORTED)
def test_every_release_has_its_bundled_facts(version: str) -> None:
    schema = bundled_schema(version)
    assert schema.sglang_version == version and len(schema) > 400
    assert ("attn_dp_size" in schema.by_dest) is (key(version) >= (0, 5, 22))
    _tf, sglang_types = known_model_types(version)
    assert "minicpm_sala" in sglang_types  # sglang's own config type, in every release
    data = json.loads(
        (ROOT / "sglaunch" / "facts" / "data" / f"model-types-{version}.json").read_text()
    )
    assert data["sglang_version"] == version


@pytest.mark.parametrize("version", SUPPORTED)
def test_every_release_has_a_cpu_requirement_list(version: str) -> None:
    pins = setup_env.release_pins(version)
    assert ("xgrammar==0.2.1" in pins) is (version in ("0.5.19", "0.5.20"))
    assert all("==" in p for p in pins)


def test_setup_refuses_a_release_it_has_no_list_for(tmp_path: Path) -> None:
    with pytest.raises(setup_env.SetupError, match=r"choose one of 0\.5\.19"):
        setup_env.setup(tmp_path / "env", version="0.5.18")
    assert not (tmp_path / "env").exists()


class _Parser:
    def __init__(self, options: list[str]) -> None:
        self._option_string_actions = dict.fromkeys(options)


@pytest.mark.parametrize(
    ("options", "canary"),
    [
        (["--tp-size", "--attn-dp-size"], ["--attn-dp-size", "2", "--tp-size", "2"]),
        (["--tp-size", "--dp-size"], ["--enable-dp-attention", "--dp-size", "2", "--tp-size", "2"]),
    ],
)
def test_the_canary_speaks_the_release_s_words(
    monkeypatch: pytest.MonkeyPatch, options: list[str], canary: list[str]
) -> None:
    monkeypatch.setattr(worker, "_EXPLICIT_PARSER", _Parser(options))
    assert worker.canary_flags() == canary


# --- per-release semantics, spelled out ------------------------------------------

GOLDEN = [
    # (release, model, argv, MiniCPM errors, other codes that must (+) / must not (-) appear)
    (
        "0.5.19",
        "minicpm-plain",
        ["--enable-dp-attention"],
        {"MiniCPM does not support DP attention"},
        {"-deprecated-dp-attention"},
    ),
    (
        "0.5.21",
        "minicpm-plain",
        ["--enable-dp-attention"],
        {"MiniCPM does not support DP attention"},
        set(),
    ),
    ("0.5.22", "minicpm-plain", ["--enable-dp-attention"], set(), {"+deprecated-dp-attention"}),
    ("0.5.23", "minicpm-plain", ["--enable-dp-attention"], set(), {"+deprecated-dp-attention"}),
    ("0.5.20", "minicpm-plain", ["--attn-dp-size", "2", "--tp", "2"], set(), {"+unknown-flag"}),
    (
        "0.5.22",
        "minicpm-plain",
        ["--attn-dp-size", "2", "--tp", "2"],
        {"MiniCPM does not support DP attention"},
        set(),
    ),
    (
        "0.5.21",
        "example:llama-3.1-8b",
        ["--enable-dp-attention", "--dp-size", "4", "--tp", "2"],
        set(),
        {"+attn-dp-divides-tp", "-deprecated-dp-attention"},
    ),
    (
        "0.5.21",
        "example:llama-3.1-8b",
        ["--dp-size", "2", "--nnodes", "2"],
        set(),
        {"+multinode-dp-replicas"},
    ),
]


@pytest.mark.parametrize(("version", "model", "argv", "errors", "codes"), GOLDEN)
def test_golden_rows_per_release(
    version: str, model: str, argv: list[str], errors: set[str], codes: set[str]
) -> None:
    report = run_rules(model, argv, version=version)
    minicpm = {f.message for f in report.findings if f.code.startswith("minicpm") and f.is_error}
    assert minicpm == errors
    got = set(report.codes())
    for c in codes:
        assert (c[1:] in got) is (c[0] == "+"), (c, got)


def test_old_releases_speak_their_own_words() -> None:
    r21 = run_rules(
        "example:llama-3.1-8b",
        ["--enable-dp-attention", "--dp-size", "4", "--tp", "2"],
        version="0.5.21",
    )
    [f] = [f for f in r21.findings if f.code == "attn-dp-divides-tp"]
    assert f.message.startswith(
        "--dp-size 4 with --enable-dp-attention does not divide --tp-size 2"
    )
    assert f.ref == "srt/arg_groups/parallel_hook.py:261"
    r20 = run_rules("example:llama-3.1-8b", ["--dp-size", "2", "--nnodes", "2"], version="0.5.20")
    [m] = [f for f in r20.findings if f.code == "multinode-dp-replicas"]
    assert m.message == "multi-node data parallel is not supported unless dp attention!"
    dp = run_rules("minicpm-plain", ["--enable-dp-attention"], version="0.5.20")
    [d] = [f for f in dp.findings if f.code == "minicpm-dp-attention"]
    assert d.ref == "srt/arg_groups/model_overrides/minicpm.py:21"


def test_what_changes_between_two_releases() -> None:
    gpu = parse_gpu_spec("H100x8")
    model = load_model_facts("example:minicpm-sala")
    argv = ["--model-path", "/m", "--enable-dp-attention"]
    change = version_changes("0.5.20", "0.5.23", argv, gpu=gpu, model=model)
    assert change is not None and not change.same
    assert any(g.startswith("minicpm-dp-attention (error)") for g in change.gone)
    assert any(n.startswith("deprecated-dp-attention (warning)") for n in change.new_findings)
    lines = change.lines()
    assert (
        lines[0]
        == "validated with sglang 0.5.20; now checked for sglang 0.5.23; what differs for this launch:"
    )
    back = version_changes(
        "0.5.23", "0.5.21", ["--model-path", "/m", "--attn-dp-size", "2"], gpu=gpu, model=model
    )
    assert back is not None and back.flags_gone == ("--attn-dp-size",)
    same = version_changes(
        "0.5.22", "0.5.23", ["--model-path", "/m", "--tp", "2"], gpu=gpu, model=model
    )
    assert same is not None and same.same
    assert version_changes(None, "0.5.23", argv, gpu=gpu, model=model) is None
    assert version_changes("0.5.23", "0.5.23", argv, gpu=gpu, model=model) is None


def test_oracle_setup_names_a_supported_release(capsys: pytest.CaptureFixture[str]) -> None:
    from sglaunch.cli.main import main

    assert main(["oracle", "setup", "--version", "0.5.18"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("sglaunch: --version 0.5.18: ")
