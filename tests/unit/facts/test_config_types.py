"""Every config field the rules and the memory plan read is type-checked when the facts are
built: a wrong type is one line naming the field and the file, exit 2 (sglang fails on it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sglaunch.cli.main import main
from sglaunch.errors import UserError
from sglaunch.examples import example_dir
from sglaunch.facts.model import load_model_facts
from tests.fakes.oracle import FakeOracle
from tests.support.tui import make_app, plain, settle_app

# (the example to start from, the field as a path of keys, the wrong value, what it must be)
CASES: list[tuple[str, tuple[str, ...], Any, str]] = [
    *(
        ("minicpm-sala", (key,), "forty", "an integer")
        for key in (
            "num_hidden_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "hidden_size",
            "head_dim",
            "vocab_size",
            "intermediate_size",
            "lightning_nh",
            "lightning_nkv",
            "lightning_head_dim",
            "n_layer",
            "n_head",
            "num_kv_heads",
            "n_embd",
            "v_head_dim",
            "kv_lora_rank",
            "qk_rope_head_dim",
            "qk_nope_head_dim",
            "q_lora_rank",
            "num_experts",
            "num_local_experts",
            "n_routed_experts",
            "n_shared_experts",
            "moe_intermediate_size",
            "shared_expert_intermediate_size",
            "first_k_dense_replace",
            "swa_num_key_value_heads",
            "swa_head_dim",
            "swa_v_head_dim",
            "full_attention_interval",
            "linear_num_value_heads",
            "linear_value_head_dim",
            "linear_num_key_heads",
            "linear_key_head_dim",
            "linear_conv_kernel_dim",
        )
    ),
    # booleans are not integers, though Python says True == 1
    ("minicpm-sala", ("num_hidden_layers",), True, "an integer"),
    ("minicpm-sala", ("num_attention_heads",), False, "an integer"),
    ("minicpm-sala", ("num_key_value_heads",), [2], "an integer"),
    ("minicpm-sala", ("hidden_size",), 4096.5, "an integer"),
    ("minicpm-sala", ("max_position_embeddings",), "131072", "a number"),
    ("minicpm-sala", ("max_position_embeddings",), True, "a number"),
    ("minicpm-sala", ("sparse_config", "kernel_size"), "32", "an integer"),
    ("minicpm-sala", ("sparse_config", "kernel_stride"), "16", "an integer"),
    ("minicpm-v-4.6", ("text_config", "num_hidden_layers"), "forty", "an integer"),
    ("minicpm-v-4.6", ("text_config", "num_key_value_heads"), True, "an integer"),
    ("minicpm-v-4.6", ("vision_config", "hidden_size"), "1152", "an integer"),
    ("llama-3.1-8b", ("num_attention_heads",), "32", "an integer"),
]


def broken_model(tmp_path: Path, example: str, path: tuple[str, ...], value: Any) -> Path:
    folder = tmp_path / "model"
    folder.mkdir()
    config = json.loads((example_dir(example) / "config.json").read_text())
    node = config
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = int(exc.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize(("example", "path", "value", "kind"), CASES)
def test_check_refuses_a_field_of_the_wrong_type(
    example: str,
    path: tuple[str, ...],
    value: Any,
    kind: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = broken_model(tmp_path, example, path, value)
    rc, out, err = run(["check", "--model", str(folder), "--gpu", "H100x8", "--no-oracle"], capsys)
    field = ".".join(path)
    assert rc == 2, err
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err
    assert f"config.json: {field} must be {kind}, got {value!r}" in lines[0]


def test_fit_refuses_it_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = broken_model(tmp_path, "minicpm-sala", ("num_hidden_layers",), "forty")
    rc, _, err = run(["fit", "--model", str(folder), "--gpu", "H100x8"], capsys)
    assert rc == 2
    assert "config.json: num_hidden_layers must be an integer, got 'forty'" in err


def test_the_facts_name_the_field_and_the_file(tmp_path: Path) -> None:
    folder = broken_model(tmp_path, "minicpm-sala", ("num_hidden_layers",), "forty")
    with pytest.raises(UserError) as exc:
        load_model_facts(str(folder))
    assert exc.value.message == (
        f"{folder / 'config.json'}: num_hidden_layers must be an integer, got 'forty'"
    )


def test_integral_numbers_and_nulls_still_load(tmp_path: Path) -> None:
    folder = broken_model(tmp_path, "minicpm-sala", ("num_hidden_layers",), 32.0)
    config = json.loads((folder / "config.json").read_text())
    config["vocab_size"] = None
    (folder / "config.json").write_text(json.dumps(config))
    assert load_model_facts(str(folder)).num_hidden_layers == 32


async def test_the_tui_shows_it_in_the_model_panel(tmp_path: Path) -> None:
    folder = broken_model(tmp_path, "minicpm-sala", ("num_hidden_layers",), "forty")
    app = make_app(model=str(folder), gpu_spec="H100x8", oracle=FakeOracle())
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        panel = plain(app.main.query_one("#model-panel"))
        assert "num_hidden_layers must be an integer, got 'forty'" in panel
