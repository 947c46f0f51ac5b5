"""The failure matcher, the runtime cards' fixes, hints, masking and the launch spec."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from sglaunch.errors import UserError
from sglaunch.flags.schema import bundled_schema
from sglaunch.runtime import LaunchSpec
from sglaunch.runtime.failures import diagnose, exception_line, last_traceback
from sglaunch.runtime.hints import headroom_band, headroom_hint, metrics_off_hint
from sglaunch.runtime.rundir import RunDir
from sglaunch.secrets import MASK, Masker, mask_argv, secret_values
from sglaunch.validators.cards import runtime as rc
from sglaunch.validators.findings import Severity
from sglaunch.validators.registry import match_card

TS = "[2025-06-01 12:00:02]"


def _scheduler_failure(last: str, *more: str) -> list[str]:
    return [
        f"{TS} Load weight begin. avail mem=78.50 GB",
        f"{TS} Scheduler hit an exception: Traceback (most recent call last):",
        '  File "/x/sglang/srt/managers/scheduler.py", line 6362, in run_scheduler_process',
        "    scheduler = Scheduler(server_args, port_args)",
        last,
        *more,
        f"{TS} Received sigquit from a child process. It usually means the child failed.",
        f"{TS} kill_process_tree called: parent_pid=1, include_parent=True, pid=1",
    ]


def _diag(lines: list[str], *, ready: bool = False, flags: dict | None = None, rc_: int = -9):
    return diagnose(lines, ready=ready, returncode=rc_, flags=flags or {}, free_port=lambda: 30001)


def test_kv_allocation_oom_wants_a_higher_fraction() -> None:
    d = _diag(
        _scheduler_failure(
            "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
            "Current value: mem_fraction_static=0.8"
        )
    )
    assert d.code == rc.KV_OOM
    assert d.message.startswith("RuntimeError: Not enough memory.")
    assert d.fixes[0].set == {"mem_fraction_static": 0.85}
    assert d.fixes[1].set == {"tp_size": 2}
    assert "RuntimeError: Not enough memory" in d.traceback


def test_weights_leave_no_kv_uses_sglang_minimum() -> None:
    d = _diag(
        _scheduler_failure(
            "ValueError: Loaded weights leave no GPU memory for the KV cache under --mem-fraction-static=0.5. "
            "Raise --mem-fraction-static above 0.612 (minimum viable = 1 - available/pre = 0.6114). "
            "If using speculative decoding, draft weights are now counted."
        ),
        flags={"tp_size": 4},
    )
    assert d.code == rc.KV_OOM
    assert d.fixes[0].set == {"mem_fraction_static": 0.64}  # past 0.612, not just 0.5 + 0.05
    assert d.fixes[1].set == {"tp_size": 8}


def test_graph_capture_oom_wants_a_lower_fraction_and_smaller_batches() -> None:
    d = _diag(
        _scheduler_failure(
            "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 2.00 GiB.",
            "Possible solutions:",
            "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
            "2. set --cuda-graph-max-bs-decode to a smaller value (e.g., 16)",
        ),
        flags={"mem_fraction_static": 0.9, "cuda_graph_max_bs_decode": 256},
    )
    assert (
        d.code == rc.GRAPH_OOM
    )  # not the serving OOM card, though the text says "CUDA out of memory"
    sets = [f.set for f in d.fixes]
    assert sets[0] == {"mem_fraction_static": 0.85}
    assert sets[1] == {"cuda_graph_max_bs_decode": 128}
    assert "Possible solutions:" in d.traceback  # the exception text continues past its first line
    # nothing known: sglang's own suggestions
    d = _diag(_scheduler_failure("Exception: Capture cuda graph failed: CUDA out of memory."))
    assert [f.set for f in d.fixes][:2] == [
        {"mem_fraction_static": 0.8},
        {"cuda_graph_max_bs_decode": 16},
    ]


def test_serving_oom_after_ready() -> None:
    lines = [
        f"{TS} The server is fired up and ready to roll!",
        *_scheduler_failure(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB."
        ),
    ]
    d = _diag(
        lines,
        ready=True,
        flags={
            "mem_fraction_static": 0.88,
            "chunked_prefill_size": 8192,
            "max_running_requests": 256,
        },
    )
    assert d.code == rc.SERVING_OOM
    assert [f.set for f in d.fixes] == [
        {"mem_fraction_static": 0.83},
        {"chunked_prefill_size": 4096},
        {"max_running_requests": 128},
    ]


def test_port_in_use_wins_over_the_warmup_failure_it_causes() -> None:
    lines = [
        f"{TS} INFO:     Application startup complete.",
        f"{TS} ERROR:    [Errno 98] error while attempting to bind on address ('127.0.0.1', 30000): "
        "address already in use",
        f"{TS} Initialization failed. warmup error: Traceback (most recent call last):",
        "requests.exceptions.ConnectionError: refused",
    ]
    d = _diag(lines)
    assert d.code == rc.PORT_IN_USE
    assert d.message.startswith("[Errno 98] error while attempting to bind")
    assert d.fixes[0].set == {"port": 30001}


def test_warmup_failure_message_is_the_exception() -> None:
    lines = [
        f"{TS} INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)",
        f"{TS} Initialization failed. warmup error: Traceback (most recent call last):",
        '  File "/x/http_server.py", line 2461, in _execute_server_warmup',
        '    assert res.status_code == 200, f"{res.text}"',
        "AssertionError: CUDA error: device-side assert triggered",
    ]
    d = _diag(lines, flags={"attention_backend": "fa3"})
    assert d.code == rc.WARMUP
    assert d.message == "AssertionError: CUDA error: device-side assert triggered"
    assert d.fixes[0].set == {"attention_backend": "triton"}
    # graphs off in 0.5.23's spelling: applying the fix raises no deprecated-flag warning
    graphs = d.fixes[1].set
    assert graphs == {
        "cuda_graph_backend_decode": "disabled",
        "cuda_graph_backend_prefill": "disabled",
    }
    assert "disable_cuda_graph" not in graphs


def test_scheduler_killed_and_mmap_fix() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "/x/engine.py", line 2040, in _wait_for_scheduler_ready',
        "RuntimeError: Rank 0 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), "
        "a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.",
    ]
    d = _diag(lines, flags={"weight_loader_disable_mmap": True}, rc_=1)
    assert d.code == rc.SCHEDULER_KILLED
    assert d.fixes[0].unset == ("weight_loader_disable_mmap",)


def test_unmatched_failures_fall_back_by_context() -> None:
    generic = _scheduler_failure("RuntimeError: something new")
    assert _diag(generic).code == rc.SCHEDULER_EXCEPTION
    assert _diag(generic).message == "RuntimeError: something new"
    after = _diag([f"{TS} The server is fired up and ready to roll!", *generic], ready=True)
    assert after.code == rc.CRASH and after.message == "RuntimeError: something new"
    d = _diag(["Traceback (most recent call last):", '  File "x"', "KeyError: 'boom'"], rc_=1)
    assert d.code == rc.STARTUP_EXIT and d.message == "KeyError: 'boom'"
    assert d.traceback.endswith("KeyError: 'boom'")
    d = _diag([], rc_=-9, ready=True)
    assert d.code == rc.CRASH and d.message == "the server exited (killed by SIGKILL)"


def test_traceback_helpers() -> None:
    lines = [
        "noise",
        f"{TS} Scheduler hit an exception: Traceback (most recent call last):",
        '  File "a.py", line 1, in f',
        "    g()",
        "ValueError: bad",
        "  continuation of the message",
        f"{TS} next record",
    ]
    tb = last_traceback(lines)
    assert tb.splitlines()[0] == "Traceback (most recent call last):"
    assert tb.splitlines()[-1] == "  continuation of the message"
    assert exception_line(tb) == "ValueError: bad"
    assert last_traceback(["no traceback here"]) == ""


def test_a_cpu_only_sglang_that_cannot_serve_is_explained() -> None:
    # what sglang 0.5.23 prints from the CPU-only checking environment (measured here)
    lines = [
        "Traceback (most recent call last):",
        '  File "<frozen runpy>", line 189, in _run_module_as_main',
        '  File "/env/lib/python3.11/site-packages/sglang/srt/utils/common.py", line 91, in <module>',
        "    import triton",
        "ModuleNotFoundError: No module named 'triton'",
    ]
    d = _diag(lines, rc_=1)
    assert d.code == rc.NO_GPU_RUNTIME
    assert "--sglang-python" in d.card.solutions[0]
    # sglang itself missing stays its own card
    assert _diag(["ModuleNotFoundError: No module named 'sglang'"], rc_=1).code == rc.NOT_INSTALLED


def test_every_runtime_card_is_complete_and_findable() -> None:
    cards = rc.runtime_cards()
    assert len({c.code for c in cards}) == len(cards) >= 15
    for c in cards:
        assert c.stage == "runtime" and c.what and c.when and c.solutions, c.code
    samples = {
        rc.KV_OOM: "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
        rc.GRAPH_OOM: "Exception: Capture cuda graph failed: CUDA out of memory.",
        rc.SCHEDULER_KILLED: "RuntimeError: Rank 1 scheduler died during initialization (exit code: -9).",
        rc.ARGPARSE: "sglang serve: error: the following arguments are required: --model-path/--model",
        rc.HEALTH: "Health check failed. Server couldn't get a response from detokenizer for last 20 seconds.",
        rc.WARMUP: "Initialization failed. warmup error: Traceback",
    }
    for code, text in samples.items():
        assert (
            match_card(text).code == code
        )  # the global catalogue finds them too (sglaunch explain)


def test_headroom_band_and_hints() -> None:
    assert headroom_band(80.0)[:2] == (5.0, 10.0)
    low, high, _ = headroom_band(24.0)
    assert (low, high) == (1.5, 3.0)
    assert headroom_hint(8.8, 80.0, 0.835) is None
    tight = headroom_hint(2.0, 80.0, 0.9)
    assert tight.code == rc.HEADROOM_LOW and tight.severity is Severity.WARNING
    assert tight.fixes[0].set == {"mem_fraction_static": 0.83}  # 0.9 + (2 - 7.5) / 80, rounded down
    idle = headroom_hint(20.0, 80.0, 0.7)
    assert idle.code == rc.HEADROOM_HIGH and idle.severity is Severity.INFO
    assert idle.fixes[0].set == {"mem_fraction_static": 0.86}
    assert headroom_hint(2.0, None, None).fixes == ()  # no numbers to compute from: advice only
    assert metrics_off_hint().fixes[0].set == {"enable_metrics": True}


def test_masking_argv_abbreviations_and_free_text() -> None:
    schema = bundled_schema()
    argv = [
        "--model-path",
        "m",
        "--api-key",
        "sk-abc-123456",
        "--admin-api-key=adm-999999",
        "--api-k",
        "sk-short",
    ]
    assert mask_argv(argv, schema) == [
        "--model-path",
        "m",
        "--api-key",
        MASK,
        f"--admin-api-key={MASK}",
        "--api-k",
        MASK,
    ]
    secrets = secret_values(argv, schema)
    assert secrets == ["sk-abc-123456", "adm-999999", "sk-short"]
    mask = Masker(secrets)
    assert mask("token sk-abc-123456 here") == f"token {MASK} here"
    line = "server_args={'api_key': 'x', 'admin_api_key': 'y\\'z', 'port': 1}"
    assert (
        mask(line) == f"server_args={{'api_key': '{MASK}', 'admin_api_key': '{MASK}', 'port': 1}}"
    )
    assert Masker(["ab"])("about abc") == "about abc"  # too short to replace everywhere


def test_launch_spec_commands_environment_and_config(tmp_path: Path) -> None:
    spec = LaunchSpec(
        argv=("--model-path", "m"), python="/opt/py/bin/python", env={"CUDA_VISIBLE_DEVICES": "1"}
    )
    assert spec.command() == [
        "/opt/py/bin/python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "m",
    ]
    # `sglang serve` is the script of the interpreter's own environment (sglaunch.program)
    assert LaunchSpec(argv=("--model", "m"), python="/opt/py/bin/python", entry="serve").command()[
        :2
    ] == ["/opt/py/bin/sglang", "serve"]
    assert LaunchSpec(argv=("--model", "m"), python="python", entry="serve").command()[:2] == [
        "sglang",
        "serve",
    ]
    assert LaunchSpec(argv=("--x",), command_prefix=("python", "fake.py")).command() == [
        "python",
        "fake.py",
        "--x",
    ]
    env = spec.environment({"PATH": "/bin"})
    assert (
        env["CUDA_VISIBLE_DEVICES"] == "1"
        and env["PATH"] == "/bin"
        and env["PYTHONUNBUFFERED"] == "1"
    )
    assert (
        spec.flags.port == 30000
        and spec.flags.host == "127.0.0.1"
        and not spec.flags.enable_metrics
    )
    config = tmp_path / "server.yaml"
    config.write_text("port: 31000\nenable-metrics: true\napi-key: from-config\n")
    flags = LaunchSpec(argv=("--config", str(config), "--port", "32000")).flags
    assert (
        flags.port == 32000 and flags.enable_metrics and flags.api_key == "from-config"
    )  # CLI wins
    config.write_text("- not a mapping\n")
    with pytest.raises(UserError):
        _ = LaunchSpec(argv=("--config", str(config))).flags
    with pytest.raises(UserError):
        LaunchSpec(argv=(), entry="bogus")
    assert (
        LaunchSpec(argv=("--api-key", "sk-1234567"), python=sys.executable).masked_command()[-1]
        == MASK
    )


def test_run_dir_names_and_atomic_status(tmp_path: Path) -> None:
    a = RunDir.create("my profile/1", root=tmp_path)
    b = RunDir.create("my profile/1", root=tmp_path)
    assert a.path != b.path and a.path.name.endswith("my-profile-1")
    a.update_status(status="starting", pid=1)
    a.update_status(status="ready")
    record = json.loads((a.path / "run.json").read_text())
    assert {k: v for k, v in record.items() if k != "process"} == {"status": "ready", "pid": 1}
    assert record["process"]["pid"] == 1  # and who pid 1 is (runtime/identity.py)
    assert not [p for p in a.path.iterdir() if p.name.startswith(".")]  # no temporary left behind


def test_run_dir_json_survives_a_power_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """run.json goes through profiles.atomic, which also fsyncs the directory after the rename."""
    import sglaunch.atomic as atomic

    synced: list[Path] = []
    monkeypatch.setattr(atomic, "fsync_dir", synced.append)
    run = RunDir.create("p", root=tmp_path)
    run.update_status(status="starting")
    assert synced == [run.path]


SSL_PASSWORD = "hunter2"
SERVER_ARGS_LINE = (
    "[2025-06-01 12:00:00] server_args=ServerArgs(model_path='m', api_key=None, "
    f"ssl_keyfile_password='{SSL_PASSWORD}', ssl_keyfile='/k.pem')"
)


def test_every_secret_flag_is_masked_not_only_api_keys() -> None:
    schema = bundled_schema()
    argv = ["--model-path", "m", "--ssl-keyfile-password", SSL_PASSWORD]
    assert mask_argv(argv, schema)[-1] == MASK
    assert secret_values(argv, schema) == [SSL_PASSWORD]
    spec = LaunchSpec(argv=tuple(argv), python=sys.executable)
    assert SSL_PASSWORD not in " ".join(spec.masked_command())
    # by position, with no value known: the relay of a detached server starts with none
    masked = Masker()(SERVER_ARGS_LINE)
    assert SSL_PASSWORD not in masked
    assert f"ssl_keyfile_password='{MASK}'" in masked and "ssl_keyfile='/k.pem'" in masked
    assert spec.masker(SERVER_ARGS_LINE) == masked


def test_ssl_keyfile_password_never_reaches_the_run_directory(monitors: list) -> None:
    """argv.json, the command line and server.log of a real launch hold no secret."""
    from tests.support.processes import fast_monitor, free_tcp_port

    # a stand-in that prints its resolved args as sglang does, the password read from argv
    line = SERVER_ARGS_LINE.replace(SSL_PASSWORD, "{pw}")
    script = (
        "import sys; "
        "pw = sys.argv[sys.argv.index('--ssl-keyfile-password') + 1]; "
        f"print({line!r}.format(pw=pw), file=sys.stderr); "
        "print('launched with', *sys.argv[1:], flush=True); "
        "sys.exit(1)"
    )
    spec = LaunchSpec(
        argv=("--port", str(free_tcp_port()), "--ssl-keyfile-password", SSL_PASSWORD),
        command_prefix=(sys.executable, "-c", script),
        env={"DB_PASSWD": "db-secret-1", "CUDA_VISIBLE_DEVICES": "0"},
        profile="ssl",
    )
    monitor = fast_monitor(spec)
    monitors.append(monitor)
    monitor.start()
    assert monitor.wait(60)
    run = monitor.run_dir
    argv = json.loads((run / "argv.json").read_text())
    assert argv["argv"][-1] == MASK and argv["command"][-1] == MASK
    assert argv["env"] == {"DB_PASSWD": MASK, "CUDA_VISIBLE_DEVICES": "0"}
    assert SSL_PASSWORD not in " ".join(monitor.snapshot().command)
    log = (run / "server.log").read_text()
    assert f"ssl_keyfile_password='{MASK}'" in log and "launched with" in log
    for path in run.iterdir():
        text = path.read_text()
        assert SSL_PASSWORD not in text and "db-secret-1" not in text, path.name


def test_launch_spec_merges_config_as_sglang_does(tmp_path: Path) -> None:
    (tmp_path / "server.yaml").write_text("port: 31000\nserved-model-name: off\n")
    # relative to the server's working directory, where sglang opens it
    flags = LaunchSpec(argv=("--config", "server.yaml"), cwd=str(tmp_path)).flags
    assert flags.port == 31000
    # YAML reads `off` as false; sglang passes `--served-model-name false`, it does not drop it
    assert flags.values["served_model_name"] == "false"
    (tmp_path / "server.yaml").write_text("tp_size: 2\n")
    with pytest.raises(UserError, match="with dashes"):
        _ = LaunchSpec(argv=("--config", "server.yaml"), cwd=str(tmp_path)).flags
