"""transformers' view of a config, cached on disk: the same facts, never a stale or foreign answer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import sglaunch.facts.model as model_module
from sglaunch.examples import EXAMPLES, example_dir
from sglaunch.facts import config_cache
from sglaunch.facts.model import load_model_facts

ROOT = Path(__file__).resolve().parents[3]
TEST_MODELS = sorted(p.name for p in (ROOT / "tests" / "data" / "models").iterdir() if p.is_dir())
SOURCES = [f"example:{name}" for name in EXAMPLES] + [
    str(ROOT / "tests" / "data" / "models" / name) for name in TEST_MODELS
]


def _entries() -> list[Path]:
    folder = Path(os.environ["SGLAUNCH_HOME"]) / "cache" / "model-config"
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def _no_transformers(monkeypatch: pytest.MonkeyPatch) -> None:
    """From here on, asking transformers fails the test (pytest.fail is no Exception, so
    the loader cannot mistake it for transformers refusing the config)."""

    def refuse(model_dir: Path) -> dict[str, Any]:
        pytest.fail(f"transformers asked again for {model_dir}")

    monkeypatch.setattr(model_module, "_autoconfig_dict", refuse)


def _llama_copy(tmp_path: Path, **changes: Any) -> Path:
    folder = tmp_path / "llama"
    shutil.copytree(example_dir("llama-3.1-8b"), folder)
    config = json.loads((folder / "config.json").read_text())
    config.update(changes)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize("source", SOURCES)
def test_cached_facts_equal_transformers_facts(
    source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    uncached = load_model_facts(source)  # the cache is empty: transformers answers
    _no_transformers(monkeypatch)
    cached = load_model_facts(source)
    assert cached == uncached


def test_models_transformers_knows_are_cached() -> None:
    facts = load_model_facts("example:llama-3.1-8b")
    assert facts.loaded_with == "transformers"
    assert len(_entries()) == 1


def test_a_repeat_check_process_does_not_import_transformers(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from sglaunch.facts.model import load_model_facts\n"
        "facts = load_model_facts('example:llama-3.1-8b')\n"
        "print(facts.loaded_with, 'transformers' in sys.modules)\n"
    )
    env = {**os.environ, "SGLAUNCH_HOME": str(tmp_path / "home")}
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        ).stdout.split()
        for _ in range(2)
    ]
    assert runs == [["transformers", "True"], ["transformers", "False"]]


def test_an_edited_config_is_read_afresh(tmp_path: Path) -> None:
    folder = _llama_copy(tmp_path)
    assert load_model_facts(str(folder)).num_hidden_layers == 32
    config = json.loads((folder / "config.json").read_text())
    config["num_hidden_layers"] = 16
    (folder / "config.json").write_text(json.dumps(config))
    assert load_model_facts(str(folder)).num_hidden_layers == 16


def test_another_transformers_version_misses(monkeypatch: pytest.MonkeyPatch) -> None:
    first = load_model_facts("example:llama-3.1-8b")
    real = config_cache._transformers_version()
    assert real is not None
    monkeypatch.setattr(config_cache, "_transformers_version", lambda: "0.0.1 " + real)
    real_load = model_module._autoconfig_dict
    asked: list[Path] = []

    def counted(model_dir: Path) -> dict[str, Any]:
        asked.append(model_dir)
        return real_load(model_dir)

    monkeypatch.setattr(model_module, "_autoconfig_dict", counted)
    assert load_model_facts("example:llama-3.1-8b") == first
    assert asked == [example_dir("llama-3.1-8b")]
    assert len(_entries()) == 2


@pytest.mark.parametrize(
    "damage",
    [
        b"",
        b"{not json",
        b"\xff\xfe\x00",
        b"[1, 2, 3]",
        b'{"key": null, "data": {}, "error": null}',
        b"[" * 100_000,
    ],
    ids=["empty", "truncated", "binary", "a-list", "no-key", "too-deep"],
)
def test_a_damaged_entry_is_ignored_and_rewritten(damage: bytes) -> None:
    good = load_model_facts("example:llama-3.1-8b")
    (entry,) = _entries()
    stored = entry.read_bytes()
    entry.write_bytes(damage)
    assert load_model_facts("example:llama-3.1-8b") == good
    assert json.loads(entry.read_bytes()) == json.loads(stored)


def test_a_fifo_in_place_of_an_entry_is_not_waited_on() -> None:
    good = load_model_facts("example:llama-3.1-8b")
    (entry,) = _entries()
    stored = entry.read_bytes()
    entry.unlink()
    os.mkfifo(entry)
    assert load_model_facts("example:llama-3.1-8b") == good
    assert entry.is_file() and entry.read_bytes() == stored


def test_a_foreign_entry_is_not_trusted(tmp_path: Path) -> None:
    """Another config's answer under this config's name (a hash clash, a copied file) is
    ignored: the key inside the entry must match, not just the file name."""
    folder = _llama_copy(tmp_path, num_hidden_layers=16)
    load_model_facts(str(folder))
    load_model_facts("example:llama-3.1-8b")
    entries = _entries()
    assert len(entries) == 2
    stored = {p: json.loads(p.read_bytes()) for p in entries}
    mine = next(p for p, e in stored.items() if e["key"]["folder"] == str(folder))
    other = next(p for p in entries if p != mine)
    # the other model's answer, data and all, under this model's file name
    mine.write_bytes(other.read_bytes())
    assert load_model_facts(str(folder)).num_hidden_layers == 16
    assert json.loads(mine.read_bytes()) == stored[mine]


def test_a_tampered_answer_with_the_right_key_is_checked_for_shape() -> None:
    load_model_facts("example:llama-3.1-8b")
    (entry,) = _entries()
    stored = json.loads(entry.read_bytes())
    entry.write_text(json.dumps({**stored, "data": ["not", "a", "dict"]}))
    assert load_model_facts("example:llama-3.1-8b").num_hidden_layers == 32
    assert json.loads(entry.read_bytes()) == stored


def test_a_refusal_is_cached_with_its_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _llama_copy(tmp_path, layer_types=["bogus"])
    first = load_model_facts(str(folder))
    assert first.config_error and first.config_error.startswith(
        "transformers cannot load this config:"
    )
    _no_transformers(monkeypatch)
    assert load_model_facts(str(folder)) == first


def test_an_unwritable_cache_still_answers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home-file"
    home.write_text("not a folder")
    monkeypatch.setenv("SGLAUNCH_HOME", str(home))
    assert load_model_facts("example:llama-3.1-8b").loaded_with == "transformers"


def test_no_leftover_temporary_files() -> None:
    load_model_facts("example:llama-3.1-8b")
    load_model_facts("example:minicpm-v-4.6")
    folder = Path(os.environ["SGLAUNCH_HOME"]) / "cache" / "model-config"
    assert sorted(p.suffix for p in folder.iterdir()) == [".json", ".json"]
