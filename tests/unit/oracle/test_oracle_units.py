"""The oracle's pure parts: findings, interpreter discovery, packaging; no sglang needed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sglaunch.oracle import OracleAnswer, OracleError, oracle_findings
from sglaunch.oracle.answer_findings import ERROR_CODE, is_noise
from sglaunch.oracle.interpreter import ENV_VAR, NOT_INSTALLED, find_sglang_python, managed_env_dir
from sglaunch.validators.findings import Severity
from tests.support.oracle_models import fake_python

ROOT = Path(__file__).resolve().parents[3]


def _error(message: str, where: str = "srt/x.py:3", type_: str = "ValueError") -> OracleAnswer:
    return OracleAnswer(ok=False, error=OracleError(type=type_, message=message, where=where))


def test_a_known_error_gets_its_card_code() -> None:
    [f] = oracle_findings(
        _error(
            "MiniCPM does not support DP attention", "srt/arg_groups/model_overrides/minicpm.py:18"
        )
    )
    assert f.code == "minicpm-dp-attention"
    assert f.severity is Severity.ERROR
    assert f.source == "sglang:srt/arg_groups/model_overrides/minicpm.py:18"


def test_an_unknown_error_keeps_sglangs_words() -> None:
    [f] = oracle_findings(_error("tp_size must divide 7 heads, sorry"))
    assert f.code == ERROR_CODE
    assert f.message == "tp_size must divide 7 heads, sorry"
    assert f.source == "sglang:srt/x.py:3"
    [g] = oracle_findings(_error("boom", type_="KeyError"))
    assert g.message == "KeyError: boom"


def test_override_wording_says_who_chose() -> None:
    answer = OracleAnswer(
        ok=True,
        resolved={},
        changed={
            "attention_backend": (None, "trtllm_mha"),
            "page_size": ("16", 64),
            "mem_fraction_static": (None, 0.854),
        },
        explicit=("page_size",),
    )
    messages = [f.message for f in oracle_findings(answer)]
    assert messages == [
        "sglang will set attention_backend=trtllm_mha (you left it unset)",
        "sglang will set page_size=64 (you asked for 16)",
        "sglang will set mem_fraction_static=0.854 (you left it unset)",
    ]
    f = oracle_findings(answer)[0]
    assert f.override is not None and (f.override.asked, f.override.value) == (None, "trtllm_mha")
    assert f.flags == ("attention_backend",)


@pytest.mark.parametrize(
    ("field", "asked", "value", "noise"),
    [
        ("random_seed", None, 12345, True),
        ("served_model_name", None, "/m", True),
        ("tokenizer_path", None, "/m", True),
        ("device", None, "cuda", True),
        ("port", 30000, 30001, True),
        ("nccl_port", None, 28765, True),
        ("_swa_full_tokens_ratio_explicitly_set", None, False, True),
        ("enable_tf32_matmul", None, False, True),
        ("custom_weight_loader", None, [], True),
        ("attention_backend", None, "fa3", False),
        ("disable_radix_cache", False, True, False),
        ("page_size", None, 1, False),
        ("report_mode", None, "x", False),
    ],
)
def test_noise_rules(field: str, asked: object, value: object, noise: bool) -> None:
    assert is_noise(field, asked, value) is noise


def test_an_explicit_noise_field_is_still_reported() -> None:
    answer = OracleAnswer(
        ok=True, resolved={}, changed={"port": (30000, 30001)}, explicit=("port",)
    )
    [f] = oracle_findings(answer)
    assert f.message == "sglang will set port=30001 (you asked for 30000)"


def test_a_fault_is_one_warning() -> None:
    [f] = oracle_findings(OracleAnswer.failed("sglang 0.5.22 found; sglaunch mirrors 0.5.23"))
    assert f.severity is Severity.WARNING
    assert (
        f.message
        == "sglang's own check gave no verdict: sglang 0.5.22 found; sglaunch mirrors 0.5.23"
    )


# -- interpreter discovery ---------------------------------------------------


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("SGLAUNCH_HOME", str(tmp_path / "home"))
    return tmp_path


def test_explicit_path_wins_over_env(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = fake_python(clean_env, "a", "true")
    b = fake_python(clean_env, "b", "true")
    monkeypatch.setenv(ENV_VAR, b)
    assert find_sglang_python(a).path == a
    assert find_sglang_python(a).source == "flag"
    assert find_sglang_python().path == b
    assert find_sglang_python().source == "env"


def test_env_path_is_made_absolute_without_leaving_the_venv(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = clean_env / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    target = fake_python(clean_env, "base-python", "true")
    (bin_dir / "python").symlink_to(target)
    monkeypatch.chdir(clean_env)
    monkeypatch.setenv(ENV_VAR, "venv/bin/python")
    found = find_sglang_python()
    assert found.path == str(bin_dir / "python")  # not the symlink's target


def test_a_bad_env_path_says_which(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, str(clean_env / "nope"))
    found = find_sglang_python()
    assert found.path is None
    assert found.reason == f"{ENV_VAR}={clean_env / 'nope'}: no such file"


def test_managed_env_then_none(clean_env: Path) -> None:
    # this test's own interpreter has no sglang (the project's dev venv)
    found = find_sglang_python()
    assert found.path is None
    assert found.reason == NOT_INSTALLED
    managed = managed_env_dir() / "bin"
    managed.mkdir(parents=True)
    fake_python(managed, "python", "true")
    found = find_sglang_python()
    assert found.source == "managed"
    assert found.path == str(managed / "python")
    assert managed_env_dir().name == "sglang-cpu-0.5.23"


def test_the_current_interpreter_is_used_when_it_has_sglang(
    clean_env: Path, tmp_path: Path
) -> None:
    fake_pkg = tmp_path / "site" / "sglang"
    fake_pkg.mkdir(parents=True)
    (fake_pkg / "__init__.py").write_text("raise RuntimeError('never imported')\n")
    code = (
        "from sglaunch.oracle.interpreter import find_sglang_python; import sys; "
        "f = find_sglang_python(); print(f.source, f.path == sys.executable, 'sglang' in sys.modules)"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(fake_pkg.parent),
        "SGLAUNCH_HOME": str(clean_env / "home"),
    }
    env.pop(ENV_VAR, None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.stdout.split() == ["current", "True", "False"], done.stderr


# -- packaging and import hygiene ---------------------------------------------


def test_the_shipped_requirements_are_what_setup_installs_and_all_pinned() -> None:
    shipped = (ROOT / "sglaunch" / "oracle" / "sglang-cpu.txt").read_text()
    from sglaunch.oracle.setup_env import requirements_text

    assert requirements_text() == shipped
    pins = [ln for ln in shipped.splitlines() if ln and not ln.startswith("#")]
    assert all("==" in ln for ln in pins), "every requirement is pinned"
    assert not any(ln.split("==")[0] in ("torch", "sglang") for ln in pins)


def test_the_client_never_imports_heavy_libraries() -> None:
    code = (
        "import sys\n"
        "from sglaunch.oracle import Oracle, oracle_findings\n"
        "from sglaunch.oracle import schema_cache, setup_env\n"
        "o = Oracle('/nonexistent/python'); o.start(); o.close()\n"
        "print(sorted(m for m in ('torch', 'sglang', 'transformers') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_worker_side_imports_nothing_of_sglaunch() -> None:
    """Everything in sglaunch/in_sglang/ runs by path under sglang's interpreter, where
    sglaunch may not be installed."""
    import ast

    files = sorted((ROOT / "sglaunch" / "in_sglang").glob("*.py"))
    assert {"oracle_worker.py", "gpu_emulation.py", "memory_probe.py"} <= {f.name for f in files}
    for path in files:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("sglaunch") for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith("sglaunch")


def test_every_code_the_oracle_emits_has_a_card() -> None:
    from sglaunch.oracle import answer_findings as oracle_findings_module
    from sglaunch.validators.cards import oracle as oracle_cards
    from sglaunch.validators.registry import get_card

    codes = {
        oracle_findings_module.ERROR_CODE,
        oracle_findings_module.OVERRIDE_CODE,
        oracle_findings_module.FAULT_CODE,
    }
    assert codes == {
        oracle_cards.SGLANG_ERROR,
        oracle_cards.SGLANG_OVERRIDE,
        oracle_cards.ORACLE_FAULT,
    }
    for code in codes:
        card = get_card(code)
        assert card is not None, code
        assert card.what and card.when and card.solutions, code


def test_the_card_for_an_sglang_error_follows_its_message() -> None:
    from sglaunch.validators.registry import card_for

    unknown = card_for("sglang-error", "frobnicate must be even", "sglang:srt/x.py:3")
    assert "frobnicate must be even" in unknown.what and "srt/x.py:3" in unknown.what
    # a message sglaunch knows gets its own card, even under the shared code
    known = card_for("sglang-error", "MiniCPM does not support DP attention")
    assert known.code == "minicpm-dp-attention"
    assert card_for("sglang-override", "sglang will set x=1").code == "sglang-override"
    assert card_for("minicpm-dp-attention", "anything").code == "minicpm-dp-attention"


def test_an_oracle_error_round_trips_through_json() -> None:
    err = OracleError(
        type="SystemExit",
        message="argument --tp-size: invalid int value: 'x'",
        where="srt/server_args.py:12",
        stage="parse",
        exit_code=2,
        traceback="Traceback ...",
    )
    assert OracleError.from_json(err.to_json()) == err
    answer = OracleAnswer(ok=False, error=err)
    assert answer.to_json()["error"] == err.to_json()


def test_a_failed_setup_exits_with_the_usage_code(tmp_path: Path) -> None:
    from sglaunch.exitcodes import ExitCode
    from sglaunch.oracle import setup_env

    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("not a venv")
    assert setup_env.main(["--dir", str(taken)]) == ExitCode.USAGE
    assert setup_env.main(["--dir", str(taken), "--version", "0.5.20"]) == ExitCode.USAGE
