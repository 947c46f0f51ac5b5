"""A profile made ready to run: argv for the child process, the variables to add, the masked view."""

from __future__ import annotations

import pytest

from sglaunch.errors import UserError
from sglaunch.flags.schema import bundled_schema
from sglaunch.profiles import GpuSelection, Profile, sglang_argv, to_command
from sglaunch.session import LaunchSession


def launch(profile: Profile, environ: dict[str, str]):  # type: ignore[no-untyped-def]
    return LaunchSession.from_profile(profile, bundled_schema()).launch_spec(environ)


def test_a_profiles_launch_spec_has_argv_env_and_a_masked_view() -> None:
    p = Profile(
        name="l",
        model="example:minicpm-sala",
        flags={"tp_size": 2, "enable_tf32_matmul": False},
        env={"SGLANG_MINICPM_FORCE_DENSE": "1"},
        secrets={"api_key": "K"},
        gpus=GpuSelection(cuda_visible_devices="0,1", preset="H100x2"),
        sglang_python="/opt/sgl/bin/python",
    )
    spec = launch(p, {"K": "sk-1"})
    assert spec.command() == [
        "/opt/sgl/bin/python", "-m", "sglang.launch_server",
        "--model-path", "openbmb/MiniCPM-SALA",  # the model the example mirrors
        "--tp-size", "2", "--no-enable-tf32-matmul",
        "--api-key", "sk-1",
    ]  # fmt: skip
    assert spec.masked_command()[-1] == "****"
    assert dict(spec.env) == {"CUDA_VISIBLE_DEVICES": "0,1", "SGLANG_MINICPM_FORCE_DENSE": "1"}


def test_serve_entry_uses_the_sglang_script_next_to_the_interpreter() -> None:
    p = Profile(name="s", model="/m", entry="serve", sglang_python="/opt/sgl/bin/python")
    assert launch(p, {}).command() == ["/opt/sgl/bin/sglang", "serve", "--model-path", "/m"]
    assert to_command(p).count("/opt/sgl/bin/sglang serve") == 1


def test_no_model_is_a_one_line_error() -> None:
    with pytest.raises(UserError) as exc:
        launch(Profile(name="n"), {})
    assert "no model" in exc.value.message and "\n" not in exc.value.message


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
