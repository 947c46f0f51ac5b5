"""`sglaunch profiles ...` as a user runs it: streams, exit codes, files, and no secrets."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sglaunch.cli import profiles as profiles_cli
from sglaunch.cli.main import main
from sglaunch.profiles import ProfileStore

ROOT = Path(__file__).resolve().parents[3]
LINE = (
    "CUDA_VISIBLE_DEVICES=0,1 SGLANG_MINICPM_FORCE_DENSE=1 python -m sglang.launch_server "
    "--model-path example:minicpm-sala --tp 2 --attention-backend minicpm_flashinfer"
)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse usage errors exit from inside the parser
        rc = int(exc.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


def home() -> Path:
    return Path(os.environ["SGLAUNCH_HOME"])


def test_import_list_show_export(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc, out, err = run(["profiles", "import", LINE, "--name", "sala"], capsys)
    assert (rc, out) == (0, "")
    assert "saved profile 'sala'" in err

    rc, out, err = run(["profiles", "list"], capsys)
    assert rc == 0 and out.startswith("sala ") and "example:minicpm-sala" in out

    rc, out, _ = run(["profiles", "list", "--json"], capsys)
    [row] = json.loads(out)
    assert row["name"] == "sala" and row["error"] is None

    rc, out, _ = run(["profiles", "show", "sala"], capsys)
    assert rc == 0 and "CUDA_VISIBLE_DEVICES=0,1" in out and "--tp-size 2" in out

    rc, out, _ = run(["profiles", "show", "sala", "--json"], capsys)
    data = json.loads(out)
    assert data["flags"] == {"tp_size": 2, "attention_backend": "minicpm_flashinfer"}
    assert data["model_problem"] is None

    rc, out, err = run(["profiles", "export", "sala", "--format", "command"], capsys)
    # an export names the model the example mirrors (its folder has no weights)
    assert rc == 0 and out.strip() == (
        "CUDA_VISIBLE_DEVICES=0,1 SGLANG_MINICPM_FORCE_DENSE=1 python -m sglang.launch_server "
        "--model-path openbmb/MiniCPM-SALA --tp-size 2 --attention-backend minicpm_flashinfer"
    )

    rc, out, err = run(["profiles", "export", "sala", "--format", "yaml"], capsys)
    assert rc == 0
    assert yaml.safe_load(out) == {
        "model-path": "openbmb/MiniCPM-SALA",
        "tp-size": 2,
        "attention-backend": "minicpm_flashinfer",
    }
    assert "CUDA_VISIBLE_DEVICES" in err  # the note about what the YAML cannot hold

    target = tmp_path / "sala.sh"
    rc, out, err = run(
        ["profiles", "export", "sala", "--format", "script", "-o", str(target)], capsys
    )
    assert (rc, out) == (0, "")
    assert target.read_text().startswith("#!/usr/bin/env bash\n")
    assert os.access(target, os.X_OK)
    assert subprocess.run(["bash", "-n", str(target)], check=False).returncode == 0

    rc, _, err = run(
        ["profiles", "export", "sala", "--format", "yaml", "-o", str(tmp_path / "x.json")], capsys
    )
    assert rc == 2 and ".yaml or .yml" in err


def test_import_files_and_stdin(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tmp_path / "from-yaml.yaml"
    cfg.write_text("model-path: /models/llama\ntp-size: 4\nenable-metrics: true\n")
    rc, _, err = run(["profiles", "import", str(cfg)], capsys)
    assert rc == 0, err
    p = ProfileStore().load("from-yaml")  # named after the file
    assert p.flags == {"tp_size": 4, "enable_metrics": True}

    script = tmp_path / "launch.sh"
    script.write_text(f"#!/bin/bash\nset -e\n{LINE} \\\n  --enable-metrics\n")
    rc, _, err = run(["profiles", "import", str(script), "--name", "from-script"], capsys)
    assert rc == 0, err
    assert ProfileStore().load("from-script").flags["enable_metrics"] is True

    monkeypatch.setattr(sys, "stdin", io.StringIO(LINE))
    rc, _, err = run(["profiles", "import", "-", "--name", "from-stdin"], capsys)
    assert rc == 0, err
    assert ProfileStore().load("from-stdin").gpus.cuda_visible_devices == "0,1"

    # a second import under the same name needs --force
    rc, _, err = run(["profiles", "import", str(cfg)], capsys)
    assert rc == 2 and "--force" in err
    rc, _, err = run(["profiles", "import", str(cfg), "--name", "from-script", "--force"], capsys)
    assert rc == 0, err
    assert ProfileStore().load("from-script").flags == {"tp_size": 4, "enable_metrics": True}


@pytest.mark.parametrize(
    ("source", "needle"),
    [
        (
            "python -m sglang.launch_server --model-path m --tp-sise 2",
            "--tp-sise 2 (did you mean --tp-size",
        ),
        ("python -m sglang.launch_server --model-path m --tp-size two", "invalid int value: 'two'"),
        ("python -m sglang.launch_server --tp-size 2", "no --model-path"),
        (
            "python -m sglang.launch_server --model-path m --attention-backend nope",
            "invalid choice",
        ),
        ("no-such-file.yaml", "no such file"),
        ("echo hello", "no such file"),
    ],
)
def test_bad_imports_are_one_line_exit_2(
    source: str, needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = run(["profiles", "import", source, "--name", "bad"], capsys)
    assert rc == 2 and out == ""
    assert needle in err
    assert err.count("\n") == 1 and err.startswith("sglaunch: ")
    assert not ProfileStore().exists("bad")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("model-path: m\ntp_size: 2\n", "write 'tp-size'"),
        ("model-path: m\ntp-sise: 2\n", "unknown key 'tp-sise' (did you mean 'tp-size'"),
        (
            "model-path: m\nenable-tf32-matmul: true\n",
            "Unsupported config option 'enable_tf32_matmul'",
        ),
        ("model-path: m\nenable-dp-attention: true\n", "DeprecatedStoreTrueAction"),
        ("- a\n- b\n", "dictionary at root level"),
        ("a: [\n", "not valid YAML"),
        ("model-path: m\ntp-size: two\n", "invalid int value: 'two'"),
        ("model-path: m\nenable-metrics: 1\n", "is a switch"),
    ],
)
def test_bad_yaml_is_one_line_exit_2(
    text: str, needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(text)
    rc, out, err = run(["profiles", "import", str(cfg)], capsys)
    assert rc == 2 and out == ""
    assert needle in err and err.count("\n") == 1


def test_missing_profile_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for cmd in (
        ["show", "nope"],
        ["export", "nope", "-f", "yaml"],
        ["delete", "nope", "--yes"],
        ["diff", "a", "b"],
    ):
        rc, out, err = run(["profiles", *cmd], capsys)
        assert rc == 2 and out == "" and "no profile named" in err, cmd


CORRUPT = 'model = "example:minicpm-sala"\n\n[flags]\ntp_size = = 2\n'


def write_corrupt() -> Path:
    d = home() / "config" / "profiles"
    d.mkdir(parents=True, exist_ok=True)
    path = d / "bad.toml"
    path.write_text(CORRUPT)
    return path


def test_corrupt_profile_through_main(capsys: pytest.CaptureFixture[str]) -> None:
    path = write_corrupt()
    rc, out, err = run(["profiles", "show", "bad"], capsys)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "line 4" in err and str(path) in err
    # list and the other profiles keep working
    run(["profiles", "import", LINE, "--name", "good"], capsys)
    rc, out, err = run(["profiles", "list"], capsys)
    assert rc == 0 and "BROKEN" in out and "good" in out
    # import --force will not overwrite it
    rc, _, err = run(["profiles", "import", LINE, "--name", "bad", "--force"], capsys)
    assert rc == 2 and "move it aside or fix it" in err
    assert path.read_text() == CORRUPT
    # delete still can (it is how a user clears it)
    rc, _, err = run(["profiles", "delete", "bad", "--yes"], capsys)
    assert rc == 0 and not path.exists()


def test_corrupt_profile_as_a_subprocess_has_no_traceback() -> None:
    write_corrupt()
    proc = subprocess.run(
        [sys.executable, "-m", "sglaunch", "profiles", "show", "bad"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1 and "(at line 4, column" in proc.stderr


def test_profile_with_a_missing_model_still_lists_and_shows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = "python -m sglang.launch_server --model-path /no/such/model --tp-size 2"
    assert run(["profiles", "import", line, "--name", "gone"], capsys)[0] == 0
    rc, out, _ = run(["profiles", "list"], capsys)
    assert rc == 0 and "/no/such/model" in out
    rc, out, _ = run(["profiles", "show", "gone"], capsys)
    assert rc == 0 and "does not exist" in out
    rc, out, _ = run(["profiles", "show", "gone", "--json"], capsys)
    assert "does not exist" in json.loads(out)["model_problem"]


def test_delete_asks_on_a_terminal_and_refuses_without_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run(["profiles", "import", LINE, "--name", "x"], capsys)

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert profiles_cli.run(["delete", "x"], stdin=Tty("n\n")) == 0
    assert ProfileStore().exists("x")
    assert profiles_cli.run(["delete", "x"], stdin=Tty("y\n")) == 0
    assert not ProfileStore().exists("x")

    run(["profiles", "import", LINE, "--name", "x"], capsys)
    capsys.readouterr()
    rc, _, err = run(["profiles", "delete", "x"], capsys)  # pytest's stdin is no terminal
    assert rc == 2 and "--yes" in err and err.count("\n") == 1
    assert ProfileStore().exists("x")


def test_diff(capsys: pytest.CaptureFixture[str]) -> None:
    run(["profiles", "import", LINE, "--name", "a"], capsys)
    run(
        [
            "profiles",
            "import",
            LINE.replace("--tp 2", "--tp 4") + " --enable-metrics",
            "--name",
            "b",
        ],
        capsys,
    )
    rc, out, _ = run(["profiles", "diff", "a", "b"], capsys)
    assert rc == 0
    assert out.splitlines() == [
        "~ --tp-size         2 → 4",
        "+ --enable-metrics  (not set) → true",
    ]
    rc, out, err = run(["profiles", "diff", "a", "a"], capsys)
    assert out == "" and "the same" in err


SECRET = "sk-SECRET-7f3a9c"
ADMIN = "sk-ADMIN-1b2c"
HF = "hf_SECRETTOKEN99"
PASSWORD = "pw-SECRET-42"


def test_secrets_never_reach_a_file_or_the_screen(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    line = (
        f"HF_TOKEN={HF} CUDA_VISIBLE_DEVICES=0 python -m sglang.launch_server "
        f"--model-path example:minicpm-sala --api-key {SECRET} --admin-api-key={ADMIN} "
        f"--ssl-keyfile-password '{PASSWORD}' --tp-size 2"
    )
    shown: list[str] = []

    def step(argv: list[str]) -> None:
        rc, out, err = run(argv, capsys)
        assert rc == 0, err
        shown.extend((out, err))

    step(["profiles", "import", line, "--name", "s"])
    assert "export SGLAUNCH_API_KEY" in shown[-1]
    outputs = {
        "yaml": tmp_path / "s.yaml",
        "command": tmp_path / "s.txt",
        "script": tmp_path / "s.sh",
    }
    for fmt, path in outputs.items():
        step(["profiles", "export", "s", "--format", fmt])
        step(["profiles", "export", "s", "--format", fmt, "-o", str(path)])
    # the YAML and the script import back without the secrets, as references
    step(["profiles", "import", str(outputs["yaml"]), "--name", "s2"])
    step(["profiles", "import", str(outputs["script"]), "--name", "s3"])
    for cmd in (
        ["list"],
        ["list", "--json"],
        ["show", "s"],
        ["show", "s", "--json"],
        ["diff", "s", "s2"],
    ):
        step(["profiles", *cmd])
    # save over it once more, so a .bak exists too
    store = ProfileStore()
    p = store.load("s")
    p.notes = "edited"
    store.save(p)

    assert store.load("s3").secrets == {
        "api_key": "SGLAUNCH_API_KEY",
        "admin_api_key": "SGLAUNCH_ADMIN_API_KEY",
        "ssl_keyfile_password": "SGLAUNCH_SSL_KEYFILE_PASSWORD",
    }
    assert store.load("s2").secrets == store.load("s3").secrets
    files = [f for f in home().rglob("*") if f.is_file()] + list(outputs.values())
    assert any(f.name == "s.toml.bak" for f in files)
    for secret in (SECRET, ADMIN, HF, PASSWORD):
        for f in files:
            assert secret.encode() not in f.read_bytes(), f"{secret} in {f}"
        for text in shown:
            assert secret not in text


def test_the_profiles_command_imports_nothing_heavy() -> None:
    probe = (
        "import sys, sglaunch.cli.profiles, sglaunch.profiles\n"
        "print(sorted({m.split('.')[0] for m in sys.modules}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    loaded = set(json.loads(out.strip().replace("'", '"')))
    assert not loaded & {"torch", "sglang", "transformers", "textual", "pynvml", "httpx"}
