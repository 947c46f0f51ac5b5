"""Class "secrets": no secret value appears in any byte sglaunch writes, on stdout, on
stderr or under SGLAUNCH_HOME, whatever flag (known, abbreviated, mistyped) or NAME=VALUE
carried it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sglaunch.secrets import MASK, Masker, looks_secret_name, mask_argv, mask_json, secret_values
from tests.support.hostile import LAUNCH, Case, run_case

EXAMPLE = "example:minicpm4-8b"


def secret(n: int) -> str:
    return f"sk-Sekr3t{n:02d}xyz"


def _check(*flags: str, json_out: bool = True) -> object:
    own = ["--json"] if json_out else []
    return lambda _tmp: [
        "check",
        "--no-oracle",
        *own,
        "--gpu",
        "H100x1",
        "--model",
        EXAMPLE,
        "--",
        *flags,
    ]


def _yaml_import(tmp: Path) -> list[str]:
    (tmp / "s.yaml").write_text(
        f"model-path: {EXAMPLE}\napi-key: {secret(15)}\nadmin-api-key: '{secret(16)}'\n"
    )
    return ["profiles", "import", "s.yaml"]


CASES = [
    Case(
        "check-json-known-secret-flags",
        _check(
            "--trust-remote-code",
            "--api-key",
            secret(1),
            "--admin-api-key",
            secret(2),
            f"--ssl-keyfile-password={secret(3)}",
        ),
        0,
        "sglang check",
    ),
    Case("check-mistyped-secret-flag", _check("--api-keys", secret(4)), 2, "--api-keys"),
    Case("check-unknown-secret-flag", _check("--hf-token", secret(5)), 2, "--hf-token"),
    Case(
        "check-abbreviated-secret-flag",
        _check("--trust-remote-code", "--api-k", secret(6)),
        0,
        "sglang check",
    ),
    Case(
        "check-unknown-secret-equals",
        _check(f"--hf-token={secret(7)}", json_out=False),
        2,
        "--hf-token",
    ),
    Case(
        "check-env-secret",
        lambda _t: [
            "check",
            "--no-oracle",
            "--json",
            "--env",
            f"HF_TOKEN={secret(8)}",
            "--model",
            EXAMPLE,
            "--",
            "--trust-remote-code",
        ],
        0,
        "sglang check",
    ),
    Case(
        "check-pasted-line-with-env-secret",
        _check(
            f"HF_TOKEN={secret(9)}",
            "python",
            "-m",
            "sglang.launch_server",
            "--trust-remote-code",
            "--api-key",
            secret(10),
        ),
        0,
        "sglang check",
    ),
    Case(
        "check-parse-error-json",
        _check("--api-key", secret(11), "--no-such-flag"),
        2,
        "--no-such-flag",
    ),
    Case(
        "sglaunch-own-parser",
        lambda _t: ["check", "--api-key", secret(12)],
        2,
        "unrecognized arguments",
    ),
    Case(
        "import-line-with-secrets",
        lambda _t: [
            "profiles",
            "import",
            f"HF_TOKEN={secret(13)} {LAUNCH} --model-path {EXAMPLE} --api-key {secret(14)}",
            "--name",
            "s",
        ],
        0,
        "saved profile 's'",
    ),
    Case(
        "import-line-with-mistyped-secret",
        lambda _t: [
            "profiles",
            "import",
            f"{LAUNCH} --model-path {EXAMPLE} --admin-api-keys {secret(17)} --hf-token={secret(18)}",
        ],
        2,
        "unrecognized arguments",
    ),
    Case("import-yaml-with-secrets", _yaml_import, 0, "saved profile 's'"),
    Case(
        "explain-a-log-line",
        lambda _t: ["explain", f"server_args=ServerArgs(api_key='{secret(19)}', tp_size=2)"],
        2,
        "no explanation",
    ),
]


def _written(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file())


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_no_secret_in_any_output(case: Case, tmp_path: Path) -> None:
    res = run_case(case, tmp_path)
    everything = (res.stdout + res.stderr).encode() + _written(res.home)
    for n in range(1, 20):
        assert secret(n).encode() not in everything, (secret(n), res.output[-1500:])
    if res.stdout.startswith("{"):  # check --json still parses, with the secrets masked
        data = json.loads(res.stdout)
        assert data["argv"]
        if "--api-key" in data["argv"]:
            assert data["flags"]["api_key"] == MASK


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("api-keys", True),
        ("hf-token", True),
        ("admin_api_key", True),
        ("ssl-keyfile-password", True),
        ("DB_PASSWORD_HASH", True),
        ("tokenizer-path", False),
        ("ssl-keyfile", False),
        ("max-prefill-tokens", False),
        ("SSL_KEY_FILE", False),
        ("", False),
    ],
)
def test_secret_looking_names(name: str, expected: bool) -> None:
    assert looks_secret_name(name) is expected


def test_mask_argv_masks_unknown_and_abbreviated_secret_flags() -> None:
    argv = ["--api-keys", "A1", "--api-k", "A2", "--hf-token=A3", "--port", "30000", "X_TOKEN=A4"]
    assert mask_argv(argv) == [
        "--api-keys",
        MASK,
        "--api-k",
        MASK,
        f"--hf-token={MASK}",
        "--port",
        "30000",
        f"X_TOKEN={MASK}",
    ]
    assert secret_values(argv) == ["A1", "A2", "A3", "A4"]


def test_masker_masks_any_secret_looking_flag_in_text() -> None:
    mask = Masker()
    assert mask("sglang serve: error: unrecognized arguments: --hf-token hf_abcdef") == (
        f"sglang serve: error: unrecognized arguments: --hf-token {MASK}"
    )
    assert mask("--tp-size 2 --port 1") == "--tp-size 2 --port 1"


def test_mask_json_masks_by_key_by_value_and_in_argv() -> None:
    data = {
        "argv": ["--api-key", "s3cr3t-value", "--tp", "2"],
        "flags": {"api_key": "s3cr3t-value", "tp_size": 2},
        "resolved": {"admin_api_key": "other-one", "model_path": "/m"},
        "findings": [{"message": "bad key s3cr3t-value"}],
    }
    out = json.dumps(mask_json(data, ["s3cr3t-value"]))
    assert "s3cr3t-value" not in out and "other-one" not in out and '"/m"' in out
