"""Class "crash": input that raised a traceback (OSError, RecursionError, ValueError,
OverflowError, MemoryError) is one line and exit 2 now."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.hostile import (
    GOOD_PROFILE,
    LAUNCH,
    Case,
    assert_outcome,
    check,
    example_config,
    model_dir,
    nested_json,
    run_case,
    run_cli,
    safetensors,
    saved_profile,
)

DEEP = 100_000


def _long_line(tmp: Path) -> list[str]:
    # an ordinary launch line longer than 255 characters was tried as a file name first
    return [
        "profiles",
        "import",
        f"{LAUNCH} --model-path /models/{'m' * 300} --tp 2",
        "--name",
        "long",
    ]


def _export_long_name(tmp: Path) -> list[str]:
    saved_profile(tmp / "home", "p", GOOD_PROFILE)
    return ["profiles", "export", "p", "--format", "command", "-o", "x" * 300]


def _deep_config(tmp: Path) -> list[str]:
    return check(model_dir(tmp, "m", nested_json(DEEP)))


def _deep_header(tmp: Path) -> list[str]:
    d = model_dir(tmp, "m")
    safetensors(d / "model.safetensors", ('{"a": ' + "[" * DEEP + "]" * DEEP + "}").encode())
    return check(d)


def _deep_index(tmp: Path) -> list[str]:
    d = model_dir(tmp, "m")
    (d / "model.safetensors.index.json").write_text('{"metadata": ' + "[" * DEEP + "]" * DEEP + "}")
    return check(d)


def _deep_yaml(tmp: Path) -> list[str]:
    (tmp / "deep.yaml").write_text("tp-size: " + "[" * DEEP + "]" * DEEP + "\n")
    return check("example:minicpm4-8b", "--config", "deep.yaml")


def _deep_profile(tmp: Path) -> list[str]:
    saved_profile(tmp / "home", "deep", "[flags]\ntp_size = " + "[" * DEEP + "]" * DEEP + "\n")
    return ["profiles", "show", "deep"]


def _dotted_profile(tmp: Path) -> list[str]:
    saved_profile(tmp / "home", "dotted", "flags" + ".a" * 50_000 + " = 1\n")
    return ["profiles", "show", "dotted"]


def _big_int_config(tmp: Path) -> list[str]:
    return check(
        model_dir(
            tmp, "m", nested_json(0).replace('"x": ', '"vocab_size": 9' + "9" * 4999 + ', "y": ')
        )
    )


def _big_int_flag(tmp: Path) -> list[str]:
    return check("example:minicpm4-8b", "--tp-size", "9" * 5000)


def _big_int_profile(tmp: Path) -> list[str]:
    saved_profile(tmp / "home", "big", "[flags]\ntp_size = " + "9" * 5000 + "\n")
    return ["profiles", "show", "big"]


def _big_int_yaml(tmp: Path) -> list[str]:
    (tmp / "big.yaml").write_text("tp-size: " + "9" * 5000 + "\n")
    return check("example:minicpm4-8b", "--config", "big.yaml")


def _rope_overflow(tmp: Path) -> list[str]:
    # finite factor × finite context = inf: int(inf) raised OverflowError
    cfg = example_config(
        max_position_embeddings=1e300, rope_scaling={"factor": 1e300, "rope_type": "linear"}
    )
    return check(model_dir(tmp, "m", cfg))


def _rope_text_factor(tmp: Path) -> list[str]:
    # int * str repeats the string: 2**62 copies of "a"
    cfg = example_config(
        max_position_embeddings="a", rope_scaling={"factor": 2**62, "rope_type": "linear"}
    )
    return check(model_dir(tmp, "m", cfg))


def _rope_factor_text(tmp: Path) -> list[str]:
    # str * int: "ab" repeated 2**62 times
    cfg = example_config(max_position_embeddings=2**62, rope_scaling={"factor": "ab"})
    return check(model_dir(tmp, "m", cfg))


def _sala_layers(tmp: Path) -> list[str]:
    cfg = {
        "architectures": ["MiniCPMSALAForCausalLM"],
        "model_type": "minicpm_sala",
        "num_hidden_layers": 10**12,
        "mixer_types": ["minicpm4", "lightning"],
    }
    return check(model_dir(tmp, "m", cfg))


def _home_is_file(tmp: Path) -> dict[str, str]:
    (tmp / "afile").write_text("x")
    return {"SGLAUNCH_HOME": str(tmp / "afile")}


def _home_under_file(tmp: Path) -> dict[str, str]:
    (tmp / "afile").write_text("x")
    return {"SGLAUNCH_HOME": str(tmp / "afile" / "sub")}


CASES = [
    Case("import-long-launch-line", _long_line, 0, "saved profile 'long'"),
    Case("export-o-long-name", _export_long_name, 2, "File name too long"),
    Case("config-json-100k-deep", _deep_config, 2, "nests deeper than 64 levels"),
    Case("safetensors-header-100k-deep", _deep_header, 2, "nests deeper than 64 levels"),
    Case("weight-index-100k-deep", _deep_index, 2, "nests deeper than 64 levels"),
    Case("config-yaml-100k-deep", _deep_yaml, 2, "deep.yaml"),
    Case("profile-toml-100k-deep", _deep_profile, 2, "nests deeper than 16 levels"),
    Case("profile-toml-dotted-keys", _dotted_profile, 2, "nests deeper than 16 levels"),
    Case("config-json-5000-digits", _big_int_config, 2, "5000-digit integer"),
    Case("flag-5000-digits", _big_int_flag, 2, "out of range"),
    Case("profile-5000-digits", _big_int_profile, 2, "thousands of digits"),
    Case("config-yaml-5000-digits", _big_int_yaml, 2, "5000-digit integer"),
    Case("rope-factor-times-context", _rope_overflow, 2, "beyond what sglang can use"),
    Case("rope-factor-repeats-a-string", _rope_text_factor, 2, "beyond any RoPE scaling"),
    Case("rope-factor-is-text", _rope_factor_text, 2, "rope_scaling.factor must be a number"),
    Case("sala-10**12-layers", _sala_layers, 2, "more layers than any model has"),
    Case(
        "home-is-a-file",
        lambda _t: ["profiles", "list"],
        2,
        "is a file, not a folder",
        _home_is_file,
    ),
    Case(
        "home-under-a-file",
        lambda _t: ["profiles", "list"],
        2,
        "a part of the path is a file",
        _home_under_file,
    ),
    Case(
        "home-too-long",
        lambda _t: ["profiles", "list"],
        2,
        "too long",
        lambda t: {"SGLAUNCH_HOME": str(t / ("h" * 300) / ("h" * 5000))},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_crash_is_one_line(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def test_one_broken_profile_leaves_the_listing_to_the_others(tmp_path: Path) -> None:
    home = tmp_path / "home"
    saved_profile(home, "deep", "[flags]\ntp_size = " + "[" * DEEP + "]" * DEEP + "\n")
    saved_profile(home, "good", GOOD_PROFILE)
    res = run_cli(["profiles", "list"], home=home, cwd=tmp_path)
    assert_outcome(res, 0, "1 profile(s) cannot be read")
    rows = {line.split()[0]: line for line in res.stdout.splitlines()}
    assert "example:minicpm4-8b" in rows["good"]
    assert "BROKEN" in rows["deep"] and "nests deeper" in rows["deep"]
