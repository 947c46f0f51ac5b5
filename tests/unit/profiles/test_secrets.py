"""Which flags and variables are secrets, references to them, masking, and resolving."""

from __future__ import annotations

import pytest

from sglaunch.errors import UserError
from sglaunch.flags.schema import FlagSpec, bundled_schema
from sglaunch.profiles import (
    MASK,
    Profile,
    is_secret_env_name,
    is_secret_flag,
    mask_argv,
    mask_text,
    profile_from_command,
    secret_dests,
)
from sglaunch.secrets import default_secret_env, env_reference
from sglaunch.session import LaunchSession

# Decided by reading every dest of sglang 0.5.23's schema: these three hold credentials.
SECRETS = {"api_key", "admin_api_key", "ssl_keyfile_password"}
# Near misses: these mention key/token/secret/password but are not credentials.
NOT_SECRETS = {
    "tokenizer_path",
    "tokenizer_mode",
    "ssl_keyfile",
    "ssl_certfile",
    "skip_tokenizer_init",
    "speculative_token_map",
    "bucket_time_to_first_token",
    "max_total_tokens",
    "tokenizer_metrics_custom_labels_header",
    "kt_max_deferred_experts_per_token",
    "tbo_token_distribution_threshold",
}


def test_secret_predicate_over_every_dest_in_the_schema() -> None:
    schema = bundled_schema()
    found = {f.dest for f in schema.flags if is_secret_flag(f)}
    assert found == SECRETS
    assert secret_dests(schema) == SECRETS
    for dest in NOT_SECRETS:
        spec = schema.get(dest)
        assert spec is not None, dest
        assert not is_secret_flag(spec), dest


@pytest.mark.parametrize(
    ("dest", "type_", "expected"),
    [
        ("hf_token", "str", True),
        ("db_password", "str", True),
        ("client_secret", "nullable_str", True),
        ("api_key_file", "str", False),  # a path to one
        ("first_token", "float", False),
        ("api_key", "int", False),
    ],
)
def test_secret_predicate_on_future_flags(dest: str, type_: str, expected: bool) -> None:
    spec = FlagSpec(dest=dest, options=("--" + dest.replace("_", "-"),), type=type_)
    assert is_secret_flag(spec) is expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("HF_TOKEN", True),
        ("OPENAI_API_KEY", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("DB_PASSWORD", True),
        ("SGLANG_LOG_DECODE_GRAPH_KEY", False),  # sglang's own knobs are never secrets
        ("SGLANG_INIT_NEW_TOKEN_RATIO", False),
        ("TOKENIZERS_PARALLELISM", False),
        ("SSL_KEY_FILE", False),
        ("CUDA_VISIBLE_DEVICES", False),
    ],
)
def test_secret_env_names(name: str, expected: bool) -> None:
    assert is_secret_env_name(name) is expected


def test_env_references() -> None:
    assert env_reference("${SGLANG_API_KEY}") == "SGLANG_API_KEY"
    assert env_reference("$SGLANG_API_KEY") == "SGLANG_API_KEY"
    assert env_reference("${K:?set K}") == "K"
    assert env_reference("sk-abc") is None
    assert env_reference("$") is None
    assert default_secret_env("admin_api_key") == "SGLAUNCH_ADMIN_API_KEY"


def test_import_stores_a_reference_and_warns() -> None:
    imported = profile_from_command(
        "python -m sglang.launch_server --model-path /m --api-key sk-SECRET-1 "
        "--admin-api-key=${ADMIN_KEY}",
        name="s",
    )
    p = imported.profile
    assert p.secrets == {"api_key": "SGLAUNCH_API_KEY", "admin_api_key": "ADMIN_KEY"}
    assert "api_key" not in p.flags and "admin_api_key" not in p.flags
    assert len(imported.warnings) == 1
    assert "export SGLAUNCH_API_KEY" in imported.warnings[0]
    assert "sk-SECRET-1" not in repr(p)


def test_secret_env_prefix_is_dropped_with_a_warning() -> None:
    imported = profile_from_command(
        "HF_TOKEN=hf_SECRET SGLANG_LOG_MS=1 python -m sglang.launch_server --model-path /m",
        name="s",
    )
    assert imported.profile.env == {"SGLANG_LOG_MS": "1"}
    assert any("HF_TOKEN" in w for w in imported.warnings)


def test_mask_argv() -> None:
    argv = [
        "HF_TOKEN=hf_x",
        "python",
        "--api-key",
        "sk-1",
        "--admin-api-key=sk-2",
        "--ssl-keyfile-pass",  # an abbreviation argparse accepts
        "pw",
        "--api-key",
        "${SGLANG_API_KEY}",  # a reference is not a secret
        "--tokenizer-path",
        "/t",
    ]
    assert mask_argv(argv) == [
        f"HF_TOKEN={MASK}",
        "python",
        "--api-key",
        MASK,
        f"--admin-api-key={MASK}",
        "--ssl-keyfile-pass",
        MASK,
        "--api-key",
        "${SGLANG_API_KEY}",
        "--tokenizer-path",
        "/t",
    ]


def test_mask_text() -> None:
    line = (
        "server_args=ServerArgs(model_path='/m', api_key='sk-abc', admin_api_key=None, "
        "tokenizer_path='/t') launched with --api-key sk-abc --admin-api-key='x y' HF_TOKEN=hf_1"
    )
    masked = mask_text(line, values=["sk-abc"])
    assert "sk-abc" not in masked and "x y" not in masked and "hf_1" not in masked
    assert "admin_api_key=None" in masked and "tokenizer_path='/t'" in masked
    assert "--api-key ****" in masked
    assert mask_text("password=hunter2 in a log", values=["hunter2"]) == "password=**** in a log"


def test_resolving_reads_the_variable_and_names_it_when_missing() -> None:
    p = Profile(name="s", model="example:minicpm-sala", secrets={"api_key": "MY_KEY"})
    session = LaunchSession.from_profile(p, bundled_schema())
    with pytest.raises(UserError) as exc:
        session.launch_spec({})
    assert "MY_KEY" in exc.value.message and "--api-key" in exc.value.message
    assert "\n" not in exc.value.message
    spec = session.launch_spec({"MY_KEY": "sk-real"})
    assert list(spec.argv[-2:]) == ["--api-key", "sk-real"]
    assert spec.masked_command()[-2:] == ["--api-key", MASK]
    assert "sk-real" not in " ".join(spec.masked_command())
