"""Round trips: profile -> TOML -> profile, profile -> sglang YAML -> profile, and
command line -> profile -> command line, over the bundled examples and the MiniCPM
matrix's flag sets, plus lists, JSON values, --x/--no-x switches, env and secrets."""

from __future__ import annotations

import shlex
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sglaunch.flags.argv import parse_argv
from sglaunch.flags.launchline import parse_launch_line
from sglaunch.flags.schema import bundled_schema
from sglaunch.profiles import (
    GpuSelection,
    Profile,
    Validated,
    profile_from_command,
    profile_from_yaml,
    to_command,
    to_script,
    to_yaml,
)
from sglaunch.profiles.tomlform import profile_from_toml, profile_to_toml
from tests.support.profile_cases import ENVS, FLAG_SETS, MODELS

CASES = [
    pytest.param(model, flags_name, env_name, id=f"{model[8:]}-{flags_name}-{env_name}")
    for model in MODELS
    for flags_name in FLAG_SETS
    for env_name in ENVS
    # the env axis matters for the MiniCPM SALA example only; one model keeps the rest short
    if env_name == "no-env" or model == "example:minicpm-sala"
]


def launch_line(model: str, flags: list[str], env: dict[str, str]) -> str:
    prefix = [f"{k}={shlex.quote(v)}" for k, v in env.items()]
    argv = ["python", "-m", "sglang.launch_server", "--model-path", model, *flags]
    return " ".join([*prefix, *(shlex.quote(t) for t in argv)])


def profile_for(model: str, flags_name: str, env_name: str) -> Profile:
    line = launch_line(model, FLAG_SETS[flags_name], ENVS[env_name])
    return profile_from_command(line, name="case").profile


def semantics(line: str) -> tuple[dict[str, object], dict[str, str], str]:
    parsed = parse_launch_line(line)
    values = parse_argv(parsed.argv, bundled_schema())
    assert values.ok, values.issues
    return values.values, parsed.env, parsed.entry


@pytest.mark.parametrize(("model", "flags_name", "env_name"), CASES)
def test_command_line_to_profile_to_command_line(
    model: str, flags_name: str, env_name: str
) -> None:
    line = launch_line(model, FLAG_SETS[flags_name], ENVS[env_name])
    imported = profile_from_command(line, name="case")
    assert imported.warnings == []
    out = to_command(imported.profile)
    # written the way sglaunch writes it, the line comes back byte for byte
    assert out == line
    assert semantics(out) == semantics(line)


@pytest.mark.parametrize(("model", "flags_name", "env_name"), CASES)
def test_profile_to_toml_to_profile(
    model: str, flags_name: str, env_name: str, tmp_path: Path
) -> None:
    profile = profile_for(model, flags_name, env_name)
    profile.notes = "a note\nover two lines"
    profile.gpus.preset = "H100x8"
    data = profile_to_toml(profile)
    back = profile_from_toml(data, name="case", path=tmp_path / "case.toml")
    assert back == profile
    # and the typed values stay typed (2, not "2")
    for dest, value in profile.flags.items():
        assert type(back.flags[dest]) is type(value), dest


@pytest.mark.parametrize(("model", "flags_name", "env_name"), CASES)
def test_profile_to_sglang_yaml_to_profile(model: str, flags_name: str, env_name: str) -> None:
    profile = profile_for(model, flags_name, env_name)
    exported = to_yaml(profile)
    back = profile_from_yaml(exported.text, name="case").profile
    assert back == profile


@pytest.mark.parametrize(("model", "flags_name", "env_name"), CASES)
def test_profile_to_script_to_profile(model: str, flags_name: str, env_name: str) -> None:
    profile = profile_for(model, flags_name, env_name)
    back = profile_from_command(to_script(profile), name="case").profile
    assert back == profile


def test_flag_values_are_typed() -> None:
    p = profile_for("example:minicpm-sala", "scalars", "no-env")
    assert p.flags["mem_fraction_static"] == 0.85
    assert p.flags["context_length"] == 32768
    assert p.flags["served_model_name"] == "my model"
    assert p.flags["chat_template"] == ""
    assert p.flags["trust_remote_code"] is True
    p = profile_for("example:minicpm-sala", "json-values", "no-env")
    assert p.flags["cuda_graph_config"] == {"decode": {"backend": "full", "max_bs": 64}}
    assert p.flags["sidecar_args"] == ["--a", "b c"]
    p = profile_for("example:minicpm-sala", "boolean-optional", "no-env")
    assert p.flags == {"enable_tf32_matmul": False, "dllm_fdfo": True, "lora_strict_loading": False}
    p = profile_for("example:minicpm-sala", "lists", "no-env")
    assert p.flags["cuda_graph_bs_decode"] == [1, 2, 4, 8]
    assert p.flags["bucket_time_to_first_token"] == [0.1, 0.5, 1.5]


def full_profile() -> Profile:
    return Profile(
        name="full",
        model="/models/MiniCPM4-8B",
        flags={
            "tp_size": 2,
            "enable_dp_attention": True,
            "enable_tf32_matmul": False,
            "cuda_graph_bs_decode": [1, 2],
            "cuda_graph_config": {"decode": {"backend": "full"}},
            "json_model_override_args": '{"a": null}',
            "radix_eviction_policy_config": {"weights": [1, None]},
        },
        env={"SGLANG_MINICPM_FORCE_DENSE": "1", "SGLANG_LOG_MS": "1"},
        secrets={"api_key": "SGLANG_API_KEY", "admin_api_key": "MY_ADMIN_KEY"},
        gpus=GpuSelection(cuda_visible_devices="2,3", preset="H100x8"),
        sglang_python="/opt/sglang/bin/python",
        entry="launch_server",
        notes="tuned for throughput\n# not a TOML comment",
        validated=Validated(
            sglang_version="0.5.23",
            gpu_names=["NVIDIA H100 80GB HBM3"],
            gpu_count=8,
            at=datetime(2025, 6, 1, 12, 30, tzinfo=UTC),
        ),
    )


def test_every_field_survives_toml(tmp_path: Path) -> None:
    profile = full_profile()
    data = profile_to_toml(profile)
    text = data.decode()
    assert 'at = "2025-06-01T12:30:00Z"' in text  # RFC 3339
    back = profile_from_toml(data, name="full", path=tmp_path / "full.toml")
    assert back == profile
    # JSON holding null, which TOML cannot, is kept as JSON text
    assert back.flags["radix_eviction_policy_config"] == {"weights": [1, None]}


def test_yaml_carries_what_sglang_reads_and_the_launch_line_the_rest() -> None:
    profile = full_profile()
    exported = to_yaml(profile)
    back = profile_from_yaml(exported.text, name="full").profile
    # sglang's config has no place for sglaunch's own notes, planning preset and
    # validation record; everything the server sees comes back
    assert back.notes == "" and back.gpus.preset is None and back.validated is None
    back.notes, back.gpus.preset, back.validated = profile.notes, "H100x8", profile.validated
    assert back == profile
    assert any("cannot hold" in w for w in exported.warnings)


def test_serve_entry_round_trips() -> None:
    line = "sglang serve example:minicpm4-8b --tp-size 2 --trust-remote-code"
    profile = profile_from_command(line, name="s").profile
    assert profile.entry == "serve" and profile.model == "example:minicpm4-8b"
    out = to_command(profile)
    repo = "openbmb/MiniCPM4-8B"  # an export names the model the example mirrors
    assert out == f"sglang serve --model-path {repo} --tp-size 2 --trust-remote-code"
    as_repo = replace(profile, model=repo)  # read back, it is that model
    assert profile_from_command(out, name="s").profile == as_repo
    exported = to_yaml(profile)
    # `sglang serve` requires --model-path on its command line even with --config
    assert f"# launch: sglang serve --model-path {repo} --config s.yaml" in exported.text
    assert profile_from_yaml(exported.text, name="s").profile == as_repo


def test_interpreter_and_aliases_and_abbreviations() -> None:
    line = (
        "CUDA_VISIBLE_DEVICES=0,1 /opt/venv/bin/python3 -m sglang.launch_server "
        "--model /m --tp 2 --tensor-parallel-size 4 --mem-frac=0.8 --dp 2"
    )
    profile = profile_from_command(line, name="a").profile
    assert profile.sglang_python == "/opt/venv/bin/python3"
    assert profile.gpus.cuda_visible_devices == "0,1"
    assert profile.env == {}
    assert profile.flags == {"tp_size": 4, "mem_fraction_static": 0.8, "dp_size": 2}
    assert to_command(profile) == (
        "CUDA_VISIBLE_DEVICES=0,1 /opt/venv/bin/python3 -m sglang.launch_server "
        "--model-path /m --tp-size 4 --mem-fraction-static 0.8 --dp-size 2"
    )


def test_deprecated_alias_with_shared_dest_exports_the_current_flag() -> None:
    # --monokernel-backend amd and --enable-amd-monokernel share a dest
    profile = profile_from_command(
        "python -m sglang.launch_server --model-path /m --monokernel-backend amd", name="a"
    ).profile
    assert profile.flags == {"enable_amd_monokernel": True}
    assert to_command(profile).endswith("--model-path /m --enable-amd-monokernel")


def test_pasted_multiline_line_with_comments() -> None:
    text = """
    # from the README
    $ SGLANG_MINICPM_FORCE_DENSE=1 python -m sglang.launch_server \\
        --model-path example:minicpm-sala \\
        --tp-size 2 \\
        --attention-backend minicpm_flashinfer  # sparse
    """
    profile = profile_from_command(text, name="m").profile
    assert profile.env == {"SGLANG_MINICPM_FORCE_DENSE": "1"}
    assert profile.flags == {"tp_size": 2, "attention_backend": "minicpm_flashinfer"}
