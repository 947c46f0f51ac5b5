"""Run the sglaunch CLI as a user would, on hostile input, within a time limit and a memory cap.

Each case is one subprocess: a hang ends at the time limit, runaway memory at the cap
(`resource.setrlimit(RLIMIT_AS)`), so a regression fails the test instead of the machine.
"""

from __future__ import annotations

import json
import os
import resource
import struct
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

# Generous for a shared 2-core machine: every case ends in well under a second when it works.
TIME_LIMIT_S = 30
# Address space: the CLI needs ~200 MB; /dev/zero read into memory would need far more.
MEMORY_CAP = 1536 * 1024 * 1024
EXAMPLE_CONFIG = Path(__file__).parents[2] / "sglaunch" / "examples" / "minicpm4-8b" / "config.json"
LAUNCH = "python -m sglang.launch_server"


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


@dataclass
class Result:
    rc: int
    stdout: str
    stderr: str
    home: Path
    timed_out: bool = False

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run_cli(
    args: Sequence[str],
    *,
    home: Path,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
) -> Result:
    """`sglaunch ARGS` in `cwd` with SGLAUNCH_HOME=`home`; a timeout is a Result, not a raise."""
    full_env = {
        k: v for k, v in os.environ.items() if not k.startswith(("SGLAUNCH_", "HF_", "FORCE_"))
    }
    full_env.update({"SGLAUNCH_HOME": str(home), "HF_HUB_OFFLINE": "1", "NO_COLOR": "1"})
    full_env.update(env or {})
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "sglaunch", *args],
            cwd=cwd,
            env=full_env,
            input=stdin,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=TIME_LIMIT_S,
            preexec_fn=_limits,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else ""
        return Result(-1, out, f"timed out after {TIME_LIMIT_S} s", home, timed_out=True)
    return Result(proc.returncode, proc.stdout, proc.stderr, home)


def assert_outcome(res: Result, rc: int, needle: str) -> None:
    """What the issue asks of every hostile input: within the time limit, no traceback,
    the exit code; a usage error (2) is one line on stderr naming the problem, with
    nothing on stdout but --json data; other outcomes name it somewhere on stderr."""
    assert not res.timed_out, res.stderr
    assert "Traceback" not in res.output, res.output[-2000:]
    assert res.rc == rc, (res.rc, res.output[-2000:])
    if rc == 2:
        lines = res.stderr.splitlines()
        assert len(lines) == 1, res.stderr
        assert lines[0].startswith(("sglaunch: ", "sglaunch ")), lines[0]
        assert needle in lines[0], lines[0]
        assert res.stdout == "" or res.stdout.startswith("{"), res.stdout[:500]  # --json data
    else:
        assert needle in res.stderr, res.stderr[-2000:]


def run_case(case: Case, tmp: Path) -> Result:
    """Build the case's files under `tmp` (SGLAUNCH_HOME is tmp/home), run it, check it."""
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    args = case.make(tmp)
    res = run_cli(args, home=home, cwd=tmp, env=case.env(tmp), stdin=case.stdin)
    assert_outcome(res, case.rc, case.needle)
    return res


@dataclass(frozen=True)
class Case:
    """One hostile input: `make(tmp)` builds its files and returns the CLI arguments."""

    id: str
    make: Callable[[Path], list[str]]
    rc: int
    needle: str
    env: Callable[[Path], dict[str, str]] = field(default=lambda _tmp: {})
    stdin: str | None = None


# --- builders for hostile files ---------------------------------------------------------------


def model_dir(tmp: Path, name: str, config: Mapping[str, object] | str | None = None) -> Path:
    """A model folder with the bundled MiniCPM4 config (read as JSON, no transformers) or `config`."""
    d = tmp / name
    d.mkdir(parents=True, exist_ok=True)
    if config is None:
        text = EXAMPLE_CONFIG.read_text()
    elif isinstance(config, str):
        text = config
    else:
        text = json.dumps(config)
    (d / "config.json").write_text(text)
    return d


def example_config(**changes: object) -> dict[str, object]:
    cfg: dict[str, object] = json.loads(EXAMPLE_CONFIG.read_text())
    cfg.update(changes)
    return cfg


def nested_json(depth: int, key: str = "x") -> str:
    return (
        '{"architectures": ["MiniCPMForCausalLM"], "model_type": "minicpm", "'
        + key
        + '": '
        + ("[" * depth + "]" * depth)
        + "}"
    )


def safetensors(path: Path, header: bytes) -> None:
    path.write_bytes(struct.pack("<Q", len(header)) + header)


def check(model: Path | str, *flags: str) -> list[str]:
    return ["check", "--no-oracle", "--gpu", "H100x1", "--model", str(model), "--", *flags]


def saved_profile(home: Path, name: str, text: str) -> Path:
    folder = home / "config" / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.toml"
    path.write_text(text)
    return path


GOOD_PROFILE = 'schema_version = 1\nmodel = "example:minicpm4-8b"\n[flags]\ntp_size = 1\n'
