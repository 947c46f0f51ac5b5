"""Class "injection": a value that reaches an export cannot end a line there and start
another (a newline in [env] or cuda_visible_devices ended the `# launch:` comment of the
YAML export and added real keys: trust-remote-code, host)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sglaunch.errors import UserError
from sglaunch.profiles import Profile, to_command, to_script, to_yaml
from sglaunch.profiles.profile import GpuSelection
from tests.support.hostile import (
    GOOD_PROFILE,
    Case,
    assert_outcome,
    run_case,
    run_cli,
    saved_profile,
)

INJECTED = "trust-remote-code: true\\nhost: 0.0.0.0"  # TOML escapes: a real newline once parsed


def _profile(body: str) -> object:
    def make(tmp: Path) -> list[str]:
        saved_profile(tmp / "home", "p", GOOD_PROFILE + body)
        return ["profiles", "export", "p", "--format", "yaml"]

    return make


def _yaml_import(value: str) -> object:
    def make(tmp: Path) -> list[str]:
        (tmp / "c.yaml").write_text(f'model-path: /m\nserved-model-name: "{value}"\n')
        return ["profiles", "import", "c.yaml"]

    return make


CASES = [
    Case(
        "env-value-newline",
        _profile(f'[env]\nFOO = "x\\n{INJECTED}"\n'),
        2,
        "environment variable FOO",
    ),
    Case(
        "env-value-line-separator",
        _profile('[env]\nFOO = "x\\u2028host: 0.0.0.0"\n'),
        2,
        "environment variable FOO",
    ),
    Case("env-value-escape", _profile('[env]\nFOO = "\\u001b[2J"\n'), 2, "control character"),
    Case("env-name-newline", _profile('[env]\n"FOO\\nhost: 0.0.0.0" = "1"\n'), 2, "is not valid"),
    Case(
        "cuda-visible-devices-newline",
        _profile(f'[gpus]\ncuda_visible_devices = "0\\n{INJECTED}"\n'),
        2,
        "cuda_visible_devices",
    ),
    Case(
        "cuda-visible-devices-shell",
        _profile('[gpus]\ncuda_visible_devices = "0;rm -rf ~"\n'),
        2,
        "cuda_visible_devices",
    ),
    Case(
        "preset-newline",
        _profile(f'[gpus]\npreset = "H100x8\\n{INJECTED}"\n'),
        2,
        "control character",
    ),
    Case("imported-yaml-value-newline", _yaml_import("a\\nhost: 0.0.0.0"), 2, "control character"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_injection_is_refused(case: Case, tmp_path: Path) -> None:
    run_case(case, tmp_path)


def test_flag_value_with_a_newline_is_refused_in_every_export(tmp_path: Path) -> None:
    home = tmp_path / "home"
    saved_profile(
        home,
        "p",
        GOOD_PROFILE.replace("tp_size = 1", f'tp_size = 1\nserved_model_name = "a\\n{INJECTED}"'),
    )
    for fmt in ("yaml", "command", "script"):
        res = run_cli(["profiles", "export", "p", "--format", fmt], home=home, cwd=tmp_path)
        assert_outcome(res, 2, "control character")


@pytest.mark.parametrize(
    "profile",
    [
        Profile(name="p", model="/m", env={"FOO": "x\ny"}),
        Profile(name="p", model="/m", gpus=GpuSelection(cuda_visible_devices="0\nhost: 1")),
        Profile(name="p", model="/m", flags={"served_model_name": "a\u2028host: 1"}),
        Profile(name="p", model="/m\nhost: 1"),
        Profile(name="p", model="/m", sglang_python="/py\nhost: 1"),
    ],
)
def test_every_export_refuses_a_profile_built_in_memory(profile: Profile) -> None:
    """The TUI builds profiles without a file: the exports check them too."""
    for export in (to_yaml, to_command, to_script):
        with pytest.raises(UserError, match=r"control character|cuda_visible_devices"):
            export(profile)


def test_an_honest_profile_exports_exactly_its_keys() -> None:
    """The control: env and GPUs go on the `# launch:` line, and the YAML holds the flags only."""
    p = Profile(
        name="p", model="/m", env={"FOO": "a b'c"}, flags={"tp_size": 2}, gpus=GpuSelection("0,1")
    )
    text = to_yaml(p).text
    comments = [line for line in text.splitlines() if line.startswith("#")]
    assert yaml.safe_load(text) == {"model-path": "/m", "tp-size": 2}
    assert any(
        line.startswith("# launch: CUDA_VISIBLE_DEVICES=0,1 FOO='a b'\"'\"'c'") for line in comments
    )
