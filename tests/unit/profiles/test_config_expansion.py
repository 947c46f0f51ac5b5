"""`expand_config`: sglang's `--config FILE` merge, the one copy runtime and check use."""

from __future__ import annotations

from pathlib import Path

import pytest

from sglaunch.errors import UserError
from sglaunch.profiles import expand_config


def test_config_flags_come_first_so_the_command_line_wins(tmp_path: Path) -> None:
    config = tmp_path / "dp.yaml"
    config.write_text("tp-size: 3\ndp-size: 5\nenable-metrics: true\nskip-server-warmup: false\n")
    argv = ["--model-path", "m", "--config", str(config), "--port", "1"]
    assert expand_config(argv) == [
        "--tp-size",
        "3",
        "--dp-size",
        "5",
        "--enable-metrics",
        "--model-path",
        "m",
        "--port",
        "1",
    ]


def test_without_config_argv_is_unchanged() -> None:
    assert expand_config(["--tp", "2"]) == ["--tp", "2"]


def test_deprecated_switch_is_refused_as_sglang_refuses_it(tmp_path: Path) -> None:
    # sglang 0.5.23's merger raises "Unsupported config option 'enable_dp_attention' with
    # action 'DeprecatedStoreTrueAction'" (tests/sglang/profiles/test_sglang_config.py checks it)
    config = tmp_path / "dp.yaml"
    config.write_text("tp-size: 3\nenable-dp-attention: true\ndp-size: 5\n")
    with pytest.raises(UserError, match="DeprecatedStoreTrueAction") as exc:
        expand_config(["--config", str(config)])
    assert "\n" not in str(exc.value)


def test_non_switch_false_is_passed_on(tmp_path: Path) -> None:
    config = tmp_path / "c.yml"
    config.write_text("served-model-name: false\n")
    assert expand_config(["--config", str(config)]) == ["--served-model-name", "false"]


def test_relative_paths_and_user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "c.yaml").write_text("port: 4\n")
    assert expand_config(["--config", "c.yaml"], base_dir=tmp_path) == ["--port", "4"]
    monkeypatch.setenv("HOME", str(tmp_path))
    assert expand_config(["--config", "~/c.yaml"], expand_user=True) == ["--port", "4"]
    with pytest.raises(UserError, match="not found"):
        expand_config(["--config", "~/c.yaml"])  # sglang itself never expands ~


@pytest.mark.parametrize(
    ("argv", "text", "message"),
    [
        (["--config", "missing.yaml"], None, "Config file not found"),
        (["--config", "c.json"], "{}", "must be YAML"),
        (["--config", "c.yaml"], "- a\n", "dictionary at root level"),
        (["--config", "c.yaml"], "a: [\n", "not valid YAML"),
        (["--config", "c.yaml"], "tp-sise: 2\n", "unknown key"),
        (["--config", "c.yaml", "--config", "c.yaml"], "", "Only one allowed"),
        (["--config"], None, "No config file specified"),
    ],
)
def test_bad_config_is_one_line_user_error(
    tmp_path: Path, argv: list[str], text: str | None, message: str
) -> None:
    if text is not None:
        (tmp_path / argv[1]).write_text(text)
    with pytest.raises(UserError, match=message) as exc:
        expand_config(argv, base_dir=tmp_path)
    assert "\n" not in str(exc.value)
