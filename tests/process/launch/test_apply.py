"""`sglaunch --profile NAME --apply` end to end, against the stand-in sglang server.

The profile's sglang interpreter is a small wrapper: `-m sglang.launch_server`
runs tests/fake_sglang_server.py with the very same flags; anything else (the
oracle's worker, version probes) goes to the real CPU sglang interpreter, so
validation uses both tiers for real.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sglaunch.profiles import Profile, ProfileStore
from tests.support.processes import FAKE, free_tcp_port, wait_gone

SALA = "example:minicpm-sala"


def real_sglang_python() -> str:
    path = os.environ.get("SGLAUNCH_SGLANG_PYTHON")
    if not path:
        pytest.fail(
            "SGLAUNCH_SGLANG_PYTHON is not set: run the README's test command (make test), which sets it"
        )
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "home"
    monkeypatch.setenv("SGLAUNCH_HOME", str(home))
    yield home
    # whatever a test left running (a failed assertion before its own cleanup
    # included): every server a run directory names is killed with its group
    for run in (home / "data" / "runs").glob("*/run.json"):
        pid = json.loads(run.read_text()).get("pid")
        if pid:
            stop_detached(int(pid))


@pytest.fixture
def wrapper(tmp_path: Path) -> Path:
    script = tmp_path / "sglang-python"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = "-m" ] && [ "$2" = "sglang.launch_server" ]; then\n'
        f'  shift 2; exec "{sys.executable}" "{FAKE}" "$@"\n'
        "fi\n"
        f'exec "{real_sglang_python()}" "$@"\n'
    )
    script.chmod(0o755)
    return script


def save(name: str, wrapper: Path, flags: dict, **kw: object) -> Profile:
    profile = Profile(
        name=name,
        model=SALA,
        flags={"port": free_tcp_port(), **flags},
        sglang_python=str(wrapper),
        **kw,
    )  # type: ignore[arg-type]
    return ProfileStore().save(profile)


def apply(
    home: Path, *args: str, scenario: str = "ok", timeout: float = 120, **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sglaunch", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={
            **os.environ,
            "SGLAUNCH_HOME": str(home),
            "FAKE_SGLANG_SCENARIO": scenario,
            "FAKE_SGLANG_TIME_SCALE": "0.02",
            "NO_COLOR": "1",
            **env,
        },
    )


def detached_pid(res: subprocess.CompletedProcess[str]) -> int:
    """--detach prints `PID RUN_DIR` on stdout (data), the story on stderr."""
    first = res.stdout.strip().splitlines()[0]
    pid, run_dir = first.split(maxsplit=1)
    assert Path(run_dir).is_dir()
    return int(pid)


def stop_detached(pid: int) -> None:
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
        group = os.getpgid(pid)
        cmdline = " ".join(proc.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied, ProcessLookupError):
        return
    # a recorded pid may since belong to another process: kill only a stand-in server
    # that leads its own group, never a group this test run is in
    if group != pid or group == os.getpgrp() or str(FAKE) not in cmdline:
        return
    pids = {p.pid for p in procs}
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)
    assert wait_gone(pids) == set()


def test_ok_with_detach(home: Path, wrapper: Path) -> None:
    save("sala", wrapper, {"tp_size": 2})
    res = apply(home, "--profile", "sala", "--apply", "--detach", "--no-oracle")
    assert res.returncode == 0, res.stderr
    pid = detached_pid(res)
    assert "ready" in res.stderr
    runs = list((home / "data" / "runs").iterdir())
    assert runs and (runs[0] / "server.log").exists()
    stop_detached(pid)


def test_validation_error_exit_1(home: Path, wrapper: Path) -> None:
    save("dp", wrapper, {"tp_size": 2, "enable_dp_attention": True, "dp_size": 2})
    res = apply(home, "--profile", "dp", "--apply", "--detach")
    assert res.returncode == 1, res.stderr
    assert "MiniCPM does not support DP attention" in res.stderr
    assert "sglang:srt/arg_groups/model_overrides/minicpm.py:18" in res.stderr  # both tiers agreed
    assert "--fix" in res.stderr
    assert not (home / "data" / "runs").exists()  # nothing launched


def test_fix_makes_the_dp_attention_profile_launch(home: Path, wrapper: Path) -> None:
    save("dp", wrapper, {"tp_size": 2, "enable_dp_attention": True, "dp_size": 2})
    res = apply(home, "--profile", "dp", "--apply", "--fix", "--detach")
    assert res.returncode == 0, res.stderr
    assert "fixed minicpm-dp-attention" in res.stderr
    assert "removed --enable-dp-attention" in res.stderr
    stop_detached(detached_pid(res))
    # nothing was saved without --save
    assert ProfileStore().load("dp").flags.get("enable_dp_attention") is True


def test_fix_and_save(home: Path, wrapper: Path) -> None:
    save("dp", wrapper, {"tp_size": 2, "enable_dp_attention": True, "dp_size": 2})
    res = apply(home, "--profile", "dp", "--apply", "--fix", "--save", "--detach", "--no-oracle")
    assert res.returncode == 0, res.stderr
    stop_detached(detached_pid(res))
    saved = ProfileStore().load("dp")
    assert "enable_dp_attention" not in saved.flags and saved.flags["tp_size"] == 2


def test_startup_oom_exit_3(home: Path, wrapper: Path) -> None:
    save("oom", wrapper, {"mem_fraction_static": 0.3})
    res = apply(home, "--profile", "oom", "--apply", "--no-oracle", scenario="oom_no_mem")
    assert res.returncode == 3, res.stderr
    assert "Not enough memory" in res.stderr
    assert "--mem-fraction-static" in res.stderr  # the fix, pointing up


def test_crash_after_ready_exit_4(home: Path, wrapper: Path) -> None:
    save("crash", wrapper, {})
    res = apply(
        home,
        "--profile",
        "crash",
        "--apply",
        "--no-oracle",
        scenario="runtime_crash",
        FAKE_SGLANG_CRASH_AFTER="0.5",
    )
    assert res.returncode == 4, res.stderr
    assert "ready" in res.stderr


def test_ctrl_c_exit_130_and_nothing_left(home: Path, wrapper: Path) -> None:
    save("live", wrapper, {})
    proc = subprocess.Popen(
        [sys.executable, "-m", "sglaunch", "--profile", "live", "--apply", "--no-oracle", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={
            **os.environ,
            "SGLAUNCH_HOME": str(home),
            "FAKE_SGLANG_SCENARIO": "ok",
            "FAKE_SGLANG_TIME_SCALE": "0.02",
        },
    )
    server_pid = None
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    ready = False
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        event = json.loads(line)
        if event.get("event") == "spawned":
            server_pid = event["pid"]
        if event.get("event") == "ready":
            ready = True
            break
    assert ready and server_pid
    import psutil

    tree = {server_pid, *(c.pid for c in psutil.Process(server_pid).children(recursive=True))}
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    assert proc.returncode == 130
    assert wait_gone(tree) == set()


def test_profile_naming_a_missing_model(home: Path, wrapper: Path, tmp_path: Path) -> None:
    ProfileStore().save(
        Profile(name="gone", model=str(tmp_path / "deleted-model"), sglang_python=str(wrapper))
    )
    res = apply(home, "--profile", "gone", "--apply", "--no-oracle")
    assert res.returncode == 2
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith("sglaunch: profile 'gone': ") and "does not exist" in last
    assert "Traceback" not in res.stderr


def test_without_a_gpu_the_profile_is_checked_for_its_own_preset(home: Path, wrapper: Path) -> None:
    from sglaunch.profiles import GpuSelection

    dp = {"tp_size": 2, "enable_dp_attention": True, "dp_size": 2}
    save("b200", wrapper, dp, gpus=GpuSelection(preset="B200x8"))
    res = apply(home, "--profile", "b200", "--apply", "--no-oracle")
    assert res.returncode == 1, res.stderr  # the DP error: nothing launches
    header = res.stderr.splitlines()[0]
    assert "B200" in header and "H100" not in header


def test_save_without_fix_is_refused_before_any_check(home: Path, wrapper: Path) -> None:
    save("sala", wrapper, {"tp_size": 2})
    res = apply(home, "--profile", "sala", "--apply", "--save", "--no-oracle")
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        "sglaunch: --save goes with --fix (it saves the fixed profile)"
    ]


def test_fix_and_save_with_nothing_to_fix_says_so(home: Path, wrapper: Path) -> None:
    saved = save("sala", wrapper, {"tp_size": 2})
    res = apply(home, "--profile", "sala", "--apply", "--fix", "--save", "--detach", "--no-oracle")
    assert res.returncode == 0, res.stderr
    stop_detached(detached_pid(res))
    assert "nothing to fix" in res.stderr
    assert ProfileStore().load("sala").revision == saved.revision
