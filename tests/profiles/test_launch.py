"""A profile made ready to run: argv for the child process, the variables to add, the masked view."""

from __future__ import annotations

from pathlib import Path

import pytest

from sglaunch.errors import UserError
from sglaunch.examples import example_dir
from sglaunch.profiles import GpuSelection, Profile, resolve_launch, sglang_argv, to_command


def test_resolve_launch_builds_argv_env_and_display() -> None:
    p = Profile(
        name="l",
        model="example:minicpm-sala",
        flags={"tp_size": 2, "enable_tf32_matmul": False},
        env={"SGLANG_MINICPM_FORCE_DENSE": "1"},
        secrets={"api_key": "K"},
        gpus=GpuSelection(cuda_visible_devices="0,1", preset="H100x2"),
        sglang_python="/opt/sgl/bin/python",
    )
    launch = resolve_launch(p, environ={"K": "sk-1"})
    model_dir = str(example_dir("minicpm-sala"))
    assert launch.argv == [
        "/opt/sgl/bin/python", "-m", "sglang.launch_server",
        "--model-path", model_dir,
        "--tp-size", "2", "--no-enable-tf32-matmul",
        "--api-key", "sk-1",
    ]  # fmt: skip
    assert launch.display[-1] == "****"
    assert launch.env == {"CUDA_VISIBLE_DEVICES": "0,1", "SGLANG_MINICPM_FORCE_DENSE": "1"}


def test_serve_entry_uses_the_sglang_script_next_to_the_interpreter() -> None:
    p = Profile(name="s", model="/m", entry="serve", sglang_python="/opt/sgl/bin/python")
    launch = resolve_launch(p, environ={}, check_model=False)
    assert launch.argv == ["/opt/sgl/bin/sglang", "serve", "--model-path", "/m"]


def test_no_model_and_gone_model_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(UserError) as exc:
        resolve_launch(Profile(name="n"), environ={})
    assert "has no model" in exc.value.message
    with pytest.raises(UserError) as exc:
        resolve_launch(Profile(name="g", model=str(tmp_path / "gone")), environ={})
    assert "profile 'g'" in exc.value.message and "does not exist" in exc.value.message


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        ({"tp_size": "2"}, "expects an integer"),
        ({"tp_sise": 2}, "did you mean tp_size"),
        ({"api_key": "sk-1"}, "never stored as text"),
        ({"model_path": "/m"}, "the model is the profile's `model`"),
    ],
)
def test_an_invalid_profile_in_memory_is_refused_before_anything_is_written(
    flags: dict[str, object], needle: str
) -> None:
    p = Profile(name="bad", model="/m", flags=flags)
    for build in (sglang_argv, to_command):
        with pytest.raises(UserError) as exc:
            build(p)
        assert needle in exc.value.message
