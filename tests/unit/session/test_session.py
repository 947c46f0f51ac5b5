"""LaunchSession, the one editing model: paste → save → load → launch spec, without a UI."""

from __future__ import annotations

import pytest

from sglaunch.errors import UserError
from sglaunch.examples import example_dir
from sglaunch.facts.gpu import probe_gpus
from sglaunch.facts.model import load_model_facts
from sglaunch.flags.launchline import parse_launch_line
from sglaunch.flags.schema import bundled_schema
from sglaunch.profiles import GpuSelection, ProfileStore
from sglaunch.session import GpuChoice, LaunchSession
from sglaunch.validators.facts import GpuMode
from tests.fakes.nvml import H100, FakeNvml, gpu

SALA = "example:minicpm-sala"
LINE = (
    "CUDA_VISIBLE_DEVICES=0,1 SGLANG_MINICPM_FORCE_DENSE=1 /opt/sgl/bin/python -m "
    "sglang.launch_server --model-path {model} --tp 2 --api-key sk-secret-1 --enable-metrics"
)


def loaded(session: LaunchSession, source: str) -> LaunchSession:
    session.request_model(source)
    assert session.model_loaded(source, load_model_facts(source))
    return session


def nvml_gpus(n: int = 4):  # type: ignore[no-untyped-def]
    return probe_gpus(nvml=FakeNvml([gpu(H100, i) for i in range(n)]), env={})


def pasted(line: str, **kwargs: object) -> LaunchSession:
    session = LaunchSession(bundled_schema(), **kwargs)  # type: ignore[arg-type]
    source = session.load_launch_line(parse_launch_line(line))
    assert source is not None
    return loaded(session, source)


def test_a_pasted_line_keeps_its_devices_env_secret_and_program_through_a_save() -> None:
    session = pasted(LINE.format(model=example_dir("minicpm-sala")), probed=nvml_gpus())
    # the example's folder reads back as the example
    assert session.model_source == SALA
    assert session.gpu_choice == GpuChoice(visible="0,1")
    assert "CUDA_VISIBLE_DEVICES" not in session.env  # kept once, in the GPU choice
    assert session.environment()["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert [d.index for d in session.gpu.devices] == [0, 1]
    assert session.python == "/opt/sgl/bin/python"

    profile = session.to_profile("sala")
    assert profile.gpus == GpuSelection(cuda_visible_devices="0,1", preset=None)
    assert profile.env == {"SGLANG_MINICPM_FORCE_DENSE": "1"}
    assert "api_key" not in profile.flags and profile.secrets == {"api_key": "SGLAUNCH_API_KEY"}
    assert profile.sglang_python == "/opt/sgl/bin/python"

    saved = ProfileStore().save(profile)
    again = LaunchSession.from_profile(ProfileStore().load("sala"), bundled_schema())
    assert again.gpu_choice == GpuChoice(visible="0,1")
    assert dict(again.env) == {"SGLANG_MINICPM_FORCE_DENSE": "1"}
    assert again.secrets == {"api_key": "SGLAUNCH_API_KEY"}
    assert again.profile is not None and again.profile.revision == saved.revision
    assert not again.dirty

    with pytest.raises(UserError) as exc:
        again.launch_spec({})
    assert "SGLAUNCH_API_KEY" in exc.value.message and "sk-secret" not in exc.value.message
    spec = again.launch_spec({"SGLAUNCH_API_KEY": "sk-secret-1"})
    assert spec.command() == [
        "/opt/sgl/bin/python", "-m", "sglang.launch_server",
        "--model-path", "openbmb/MiniCPM-SALA",  # the model the example mirrors
        "--tp-size", "2", "--enable-metrics", "--api-key", "sk-secret-1",
    ]  # fmt: skip
    assert dict(spec.env) == {"CUDA_VISIBLE_DEVICES": "0,1", "SGLANG_MINICPM_FORCE_DENSE": "1"}
    assert spec.profile == "sala"
    assert "sk-secret-1" not in " ".join(spec.masked_command())
    # on screen: masked, and the checks see a placeholder, never the value
    assert "sk-secret-1" not in again.command_line(display=True)
    assert "sk-secret-1" not in " ".join(again.argv())


def test_a_typed_secret_launches_with_its_value_until_saved_as_a_reference() -> None:
    session = loaded(LaunchSession(bundled_schema()), SALA)
    session.set_flag("api_key", "sk-typed")
    assert session.launch_spec({}).argv[-2:] == ("--api-key", "sk-typed")
    session.mark_saved(ProfileStore().save(session.to_profile("typed")))
    assert not session.dirty
    # the value still launches this session; the file holds only the reference
    assert session.launch_spec({}).argv[-2:] == ("--api-key", "sk-typed")
    text = (ProfileStore().root / "typed.toml").read_text()
    assert "sk-typed" not in text and "SGLAUNCH_API_KEY" in text


def test_a_preset_round_trips_and_wins_over_probed_gpus() -> None:
    session = loaded(LaunchSession(bundled_schema(), probed=nvml_gpus()), SALA)
    assert session.gpu.mode is GpuMode.NVML
    session.choose_preset("B200x4")
    assert session.gpu.mode is GpuMode.PLANNING and session.gpu.count == 4
    assert "CUDA_VISIBLE_DEVICES" not in session.environment()
    profile = session.to_profile("plan")
    assert profile.gpus == GpuSelection(cuda_visible_devices=None, preset="B200x4")
    again = LaunchSession.from_profile(profile, bundled_schema(), probed=nvml_gpus())
    assert again.gpu.preset == "B200x4"  # the plan stays chosen on a machine with GPUs
    again.set_probed(nvml_gpus(8))
    assert again.gpu.preset == "B200x4"


def test_devices_from_set_env_and_from_choose_devices_are_the_same_thing() -> None:
    a = LaunchSession(bundled_schema(), probed=nvml_gpus())
    b = LaunchSession(bundled_schema(), probed=nvml_gpus())
    a.set_env("CUDA_VISIBLE_DEVICES", "2,3")
    b.choose_devices("2,3")
    assert a.gpu_choice == b.gpu_choice == GpuChoice(visible="2,3")
    assert [d.index for d in a.gpu.devices] == [2, 3]
    assert a.environment() == b.environment() == {"CUDA_VISIBLE_DEVICES": "2,3"}


def test_dirty_tracks_every_part_of_the_profile() -> None:
    session = loaded(LaunchSession(bundled_schema()), SALA)
    session.mark_saved(ProfileStore().save(session.to_profile("d")))
    assert not session.dirty
    for change, undo in (
        (lambda: session.set_flag("tp_size", 2), lambda: session.unset_flag("tp_size")),
        (lambda: session.set_env("K", "v"), lambda: session.set_env("K", None)),
        (lambda: session.choose_devices("0"), lambda: session.choose_devices(None)),
    ):
        change()
        assert session.dirty
        undo()
        assert not session.dirty


def test_a_slow_model_load_that_lost_to_a_later_request_is_dropped() -> None:
    session = LaunchSession(bundled_schema())
    session.request_model(SALA)
    session.request_model("example:llama-3.1-8b")
    assert not session.model_loaded(SALA, load_model_facts(SALA))
    assert session.model is None and session.model_pending == "example:llama-3.1-8b"
    assert session.model_loaded("example:llama-3.1-8b", load_model_facts("example:llama-3.1-8b"))
    # a failed load keeps the model the launch had
    session.request_model("/nope")
    assert session.model_failed("/nope", "no such folder")
    assert session.model_source == "example:llama-3.1-8b" and session.model_error


def test_saving_under_another_name_is_a_new_profile_and_the_model_change_is_seen() -> None:
    store = ProfileStore()
    session = loaded(LaunchSession(bundled_schema()), SALA)
    session.mark_saved(store.save(session.to_profile("a")))
    source = session.load_launch_line(
        parse_launch_line("python -m sglang.launch_server --model-path example:llama-3.1-8b")
    )
    assert source == "example:llama-3.1-8b"
    loaded(session, source)
    assert session.model_changed()
    assert session.to_profile("a").revision is not None  # same name: an overwrite of a
    assert session.to_profile("b").revision is None  # save as: a new file


def test_serve_entry_runs_the_sglang_script_beside_its_interpreter() -> None:
    session = pasted("/opt/sgl/bin/sglang serve --model-path example:minicpm4-8b --tp 2")
    assert session.entry == "serve"
    assert session.command()[:2] == ["/opt/sgl/bin/sglang", "serve"]
    profile = session.to_profile("serve")
    assert profile.entry == "serve" and profile.sglang_python == "/opt/sgl/bin/python"
    again = LaunchSession.from_profile(profile, bundled_schema(), default_python="/venv/bin/python")
    assert again.launch_spec({}).command()[:4] == [
        "/opt/sgl/bin/sglang", "serve", "--model-path", "openbmb/MiniCPM4-8B",
    ]  # fmt: skip
    # without an interpreter of its own, the one sglaunch found runs it
    bare = pasted(
        "sglang serve --model-path example:minicpm4-8b", default_python="/venv/bin/python"
    )
    assert bare.launch_spec({}).command()[:2] == ["/venv/bin/sglang", "serve"]


def test_the_preview_shows_the_interpreter_and_folder_that_will_run() -> None:
    session = loaded(LaunchSession(bundled_schema(), default_python="/venv/bin/python"), SALA)
    line = session.command_line(display=True)
    assert line.startswith("/venv/bin/python -m sglang.launch_server --model-path ")
    # the model the example mirrors (its folder has no weights), marked as the example
    assert "--model-path openbmb/MiniCPM-SALA" in line
    assert line.endswith("# example:minicpm-sala")
    assert "<example" not in line


def test_a_launch_without_a_model_is_a_one_line_error() -> None:
    with pytest.raises(UserError) as exc:
        LaunchSession(bundled_schema()).launch_spec({})
    assert "no model" in exc.value.message and "\n" not in exc.value.message


def test_a_copied_line_reads_a_referenced_secret_from_its_variable_never_the_mask() -> None:
    import subprocess

    profile = pasted(LINE.format(model=example_dir("minicpm-sala"))).to_profile("sala")
    session = LaunchSession.from_profile(profile, bundled_schema())
    line = session.command_line()
    assert "****" not in line and "sk-secret" not in line
    assert '--api-key "${SGLAUNCH_API_KEY:?set SGLAUNCH_API_KEY}"' in line
    assert "--api-key ****" in session.command_line(display=True)
    # the shell expands it: the copied line runs with the value, and stops when it is unset
    words = line.split(" ", 3)[-1]  # past the env assignments and the interpreter
    echo = f"printf '%s\\n' {words}"
    ran = subprocess.run(
        ["bash", "-c", echo], env={"SGLAUNCH_API_KEY": "sk-v"}, capture_output=True, text=True
    )
    assert ran.stdout.splitlines()[-2:] == ["--api-key", "sk-v"]
    unset = subprocess.run(["bash", "-c", echo], env={}, capture_output=True, text=True)
    assert unset.returncode != 0 and "set SGLAUNCH_API_KEY" in unset.stderr


def test_a_secret_looking_env_var_launches_but_is_never_saved() -> None:
    session = loaded(LaunchSession(bundled_schema()), SALA)
    session.set_env("HF_TOKEN", "hf_abcdef")
    session.set_env("SGLANG_MINICPM_FORCE_DENSE", "1")
    session.set_env("OPENAI_API_KEY", "${MY_KEY}")  # a reference is safe to keep
    assert session.unsaved_env() == ["HF_TOKEN"]
    profile = session.to_profile("env")
    assert "HF_TOKEN" not in profile.env
    assert profile.env["SGLANG_MINICPM_FORCE_DENSE"] == "1"
    assert session.launch_spec({}).env["HF_TOKEN"] == "hf_abcdef"


def test_a_planning_preset_is_not_checked_with_the_local_gpus_measured_cost() -> None:
    from sglaunch.validators.memory.baseline import MemoryFacts

    measured = MemoryFacts(startup_cost_by_tp={1: 3 << 30}, calibration_source="run x")
    session = loaded(LaunchSession(bundled_schema(), probed=nvml_gpus()), SALA)
    session.set_memory_facts(measured)
    assert session.check_input().memory == measured
    session.choose_preset("B200x4")
    memory = session.check_input().memory
    assert memory is not None and not memory.startup_cost_by_tp
    assert memory.calibration_source == ""
