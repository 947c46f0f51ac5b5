"""Model facts: examples, SALA semantics, remote code, the HF cache, weights, and every bad input."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from sglaunch.errors import UserError
from sglaunch.examples import EXAMPLES
from sglaunch.facts.model import context_length, facts_from_config, load_model_facts, sala_facts
from sglaunch.memory.weights import weight_bytes
from tests.conftest import model_dir

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("name", list(EXAMPLES))
def test_every_example_loads(name: str) -> None:
    facts = load_model_facts(f"example:{name}")
    assert facts.architecture
    assert facts.num_attention_heads and facts.num_key_value_heads and facts.num_hidden_layers
    assert facts.context_length and facts.context_length >= 4096
    assert facts.config_error is None


def test_examples_cover_the_issue() -> None:
    archs = {load_model_facts(f"example:{n}").architecture for n in EXAMPLES}
    assert {
        "MiniCPMForCausalLM",
        "MiniCPMSALAForCausalLM",
        "MiniCPMV4_6ForConditionalGeneration",
        "LlamaForCausalLM",
    } <= archs
    sala = load_model_facts("example:minicpm-sala")
    assert sala.has_minicpm_sparse_attention and sala.has_lightning_layers
    assert load_model_facts("example:minicpm4-8b").needs_remote_code


def test_transformers_leaves_the_environment_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    # the server sglaunch launches inherits os.environ: it must not come out offline
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "TRANSFORMERS_VERBOSITY"):
        monkeypatch.delenv(name, raising=False)
    assert load_model_facts("example:llama-3.1-8b").loaded_with == "transformers"
    assert "HF_HUB_OFFLINE" not in os.environ
    assert "TRANSFORMERS_OFFLINE" not in os.environ
    assert "TRANSFORMERS_VERBOSITY" not in os.environ


def test_transformers_says_nothing_on_stderr() -> None:
    # stderr is the TUI's screen and `check`'s report; transformers warns at import
    code = (
        "from sglaunch.facts.model import load_model_facts\n"
        "print(load_model_facts('example:llama-3.1-8b').loaded_with)\n"
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TRANSFORMERS_VERBOSITY", "TRANSFORMERS_NO_ADVISORY_WARNINGS")
    }
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "transformers"
    assert done.stderr == ""


def test_known_type_goes_through_transformers() -> None:
    llama = load_model_facts("example:llama-3.1-8b")
    assert llama.loaded_with == "transformers"
    assert llama.transformers_knows_type
    # llama3 rope scaling keeps the context at max_position_embeddings (sglang's rule)
    assert llama.context_length == 131072
    sala = load_model_facts("example:minicpm-sala")
    assert sala.loaded_with == "json"  # sglang's own type, not transformers'


@pytest.mark.parametrize(
    ("mixers", "sparse_config", "layers", "sparse", "lightning", "error"),
    [
        (None, {"topk": 8}, 4, True, False, None),  # default mixer is minicpm4
        ([], None, 4, False, False, None),
        (["attn"], {"topk": 8}, 4, True, False, None),
        (["standard", "lightning_attn"], {}, 4, True, True, None),  # {} is "not None"
        (["lightning"], {"topk": 8}, 4, False, True, None),  # sparse needs a minicpm4 layer
        (["lightning-attn", "minicpm"], None, 3, False, True, None),
        (["minicpm4"] * 5, None, 4, False, False, "Invalid number of mixer types: 5"),
        (["mamba"], None, 4, False, False, "Unsupported mixer type: mamba"),
    ],
)
def test_sala_semantics(mixers, sparse_config, layers, sparse, lightning, error) -> None:  # type: ignore[no-untyped-def]
    cfg = {"num_hidden_layers": layers, "num_attention_heads": 8, "num_key_value_heads": 8}
    if mixers is not None:
        cfg["mixer_types"] = mixers
    if sparse_config is not None:
        cfg["sparse_config"] = sparse_config
    out = sala_facts(cfg, layers=layers, heads=8, kv=8)
    assert out.get("config_error") == error
    if error is None:
        assert len(out["mixer_types"]) == layers  # repeated to the layer count
        assert out["has_minicpm_sparse_attention"] is sparse
        assert out["has_lightning_layers"] is lightning


def test_sala_lightning_gqa_is_rejected_like_sglang() -> None:
    out = sala_facts(
        {
            "num_hidden_layers": 4,
            "num_attention_heads": 32,
            "num_key_value_heads": 2,
            "mixer_types": ["lightning"],
        },
        layers=4,
        heads=32,
        kv=2,
    )
    assert out["config_error"].startswith(
        "MiniCPM Lightning attention requires equal query and KV head counts"
    )
    assert "lightning_nh=32, lightning_nkv=2" in out["config_error"]


def test_sala_mixer_repetition() -> None:
    out = sala_facts(
        {"num_hidden_layers": 5, "mixer_types": ["minicpm4", "lightning"]},
        layers=5,
        heads=32,
        kv=32,
    )
    assert out["mixer_types"] == (
        "minicpm4",
        "lightning-attn",
        "minicpm4",
        "lightning-attn",
        "minicpm4",
    )


def test_sala_defaults_reach_the_lightning_check() -> None:
    # nothing but the type and the mixers: MiniCPMHybridConfig's defaults
    # (32 heads, 8 KV heads, 32 layers) apply, and lightning then needs nh == nkv
    facts = facts_from_config(
        {
            "architectures": ["MiniCPMSALAForCausalLM"],
            "model_type": "minicpm_sala",
            "mixer_types": ["lightning"],
        },
        "x",
    )
    assert (facts.num_attention_heads, facts.num_key_value_heads, facts.num_hidden_layers) == (
        32,
        8,
        32,
    )
    assert facts.mixer_types is not None and len(facts.mixer_types) == 32
    assert facts.config_error is not None
    assert "lightning_nh=32, lightning_nkv=8" in facts.config_error


@pytest.mark.parametrize(
    ("cfg", "expected"),
    [
        ({"max_position_embeddings": 4096}, 4096),
        ({"max_position_embeddings": 4096, "rope_scaling": {"factor": 4.0}}, 16384),
        (
            {
                "max_position_embeddings": 4096,
                "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 1024},
            },
            4096,
        ),
        (
            {
                "max_position_embeddings": 4096,
                "rope_scaling": {"factor": 8.0, "rope_type": "llama3"},
            },
            4096,
        ),
        ({"seq_length": 2048, "max_position_embeddings": 4096}, 2048),  # key order matters
        ({}, 2048),
    ],
)
def test_context_length_like_sglang(cfg: dict, expected: int) -> None:
    assert context_length(cfg) == expected


def test_unknown_architecture_is_not_an_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(
        json.dumps(
            {
                "architectures": ["FancyNewForCausalLM"],
                "model_type": "llama",
                "num_attention_heads": 8,
                "hidden_size": 512,
                "num_hidden_layers": 2,
            }
        )
    )
    facts = load_model_facts(str(tmp_path))
    assert facts.architecture == "FancyNewForCausalLM"
    assert facts.config_error is None


def test_unknown_type_without_auto_map_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(
        json.dumps({"architectures": ["XForCausalLM"], "model_type": "no_such_type"})
    )
    facts = load_model_facts(str(tmp_path))
    assert facts.config_error and "no_such_type" in facts.config_error
    assert not facts.needs_remote_code


def test_config_json_path_is_accepted() -> None:
    facts = load_model_facts(str(model_dir("sala-sparse") / "config.json"))
    assert facts.has_minicpm_sparse_attention


# --- the local Hugging Face cache, never the network ----------------------------------


def test_repo_id_from_hf_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "hub" / "models--openbmb--MiniCPM-SALA"
    snap = repo / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    (snap / "config.json").write_text(
        (model_dir("sala-sparse-lightning") / "config.json").read_text()
    )
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    facts = load_model_facts("openbmb/MiniCPM-SALA")
    assert facts.has_lightning_layers


def test_repo_id_not_cached_says_how(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError) as exc:
        load_model_facts("openbmb/Not-Downloaded")
    msg = str(exc.value)
    assert "not in the local Hugging Face cache" in msg and "huggingface-cli download" in msg
    assert "\n" not in msg


# --- weights from headers only ----------------------------------------------------------


def _safetensors(path: Path, tensors: dict[str, tuple[str, list[int], int]]) -> None:
    header = {}
    offset = 0
    for name, (dtype, shape, nbytes) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    raw = json.dumps(header).encode()
    with path.open("wb") as fh:
        fh.write(struct.pack("<Q", len(raw)))
        fh.write(raw)
        fh.write(b"\0" * offset)


def test_weight_bytes_from_headers(tmp_path: Path) -> None:
    _safetensors(
        tmp_path / "model-00001-of-00002.safetensors",
        {"a": ("BF16", [4, 4], 32), "b": ("BF16", [8], 16)},
    )
    _safetensors(tmp_path / "model-00002-of-00002.safetensors", {"c": ("F32", [10], 40)})
    assert weight_bytes(tmp_path) == (88, "safetensors headers")


def test_weight_bytes_from_index(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {"total_size": 16_060_522_496}, "weight_map": {}})
    )
    assert weight_bytes(tmp_path) == (16_060_522_496, "model.safetensors.index.json")


def test_corrupt_safetensors_header_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", 2**40) + b"{}")
    assert weight_bytes(tmp_path) == (None, None)


@pytest.mark.parametrize("end", ['"x"', "null", "[1]", "1e400"])
def test_safetensors_header_with_bad_offsets_is_unknown(tmp_path: Path, end: str) -> None:
    _safetensors(tmp_path / "model-00001-of-00002.safetensors", {"a": ("BF16", [4], 8)})
    header = '{"b": {"dtype": "BF16", "shape": [4], "data_offsets": [0, END]}}'
    raw = header.replace("END", end).encode()
    (tmp_path / "model-00002-of-00002.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw)
    assert weight_bytes(tmp_path) == (None, None)


def test_index_with_an_infinite_total_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors.index.json").write_text('{"metadata": {"total_size": 1e400}}')
    assert weight_bytes(tmp_path) == (None, None)


# --- bad input: one clear line each -----------------------------------------------------


def _one_line(source: str) -> str:
    with pytest.raises(UserError) as exc:
        load_model_facts(source)
    msg = str(exc.value)
    assert msg and "\n" not in msg and "Traceback" not in msg
    return msg


def test_missing_directory(tmp_path: Path) -> None:
    assert "does not exist" in _one_line(str(tmp_path / "nope"))


def test_directory_without_config(tmp_path: Path) -> None:
    assert "has no config.json" in _one_line(str(tmp_path))


def test_not_json(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text('{"architectures": ["X"],,}')
    msg = _one_line(str(tmp_path))
    assert "not valid JSON" in msg and "line 1" in msg


def test_not_an_object(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("[1, 2]")
    assert "JSON list, not an object" in _one_line(str(tmp_path))


@pytest.mark.parametrize("archs", [None, [], "LlamaForCausalLM", [1]])
def test_lacks_architectures(tmp_path: Path, archs: object) -> None:
    cfg = {"model_type": "llama"}
    if archs is not None:
        cfg["architectures"] = archs  # type: ignore[assignment]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert '"architectures"' in _one_line(str(tmp_path))


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # chmod 0 is no barrier to root (CI runs as root), so the OS's refusal is simulated
    p = tmp_path / "config.json"
    p.write_text('{"architectures": ["X"]}')
    real = os.open

    def deny(path: str, *a: object, **k: object) -> int:
        if os.fspath(path) == str(p):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, *a, **k)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", deny)
    assert "permission denied" in _one_line(str(tmp_path))


def test_huge_file(tmp_path: Path) -> None:
    p = tmp_path / "config.json"
    with p.open("wb") as fh:
        fh.truncate(20 * 1024 * 1024)  # sparse: 20 MB without writing them
    assert "too large for a model config" in _one_line(str(tmp_path))


def test_binary_file(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes(b"\xff\xfe\x00garbage")
    assert "not UTF-8" in _one_line(str(tmp_path))


def test_unknown_user_in_path() -> None:
    msg = _one_line("~sglaunch-no-such-user/model")
    assert "~sglaunch-no-such-user/model" in msg and "home directory" in msg


@pytest.mark.parametrize("source", ["m" * 300, "org/" + "m" * 300])
def test_name_too_long(source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a repo id is looked up as models--org--NAME in an existing HF cache folder
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    msg = _one_line(source)
    assert "File name too long" in msg and len(msg) < 200


def test_unknown_example() -> None:
    msg = _one_line("example:nope")
    assert "minicpm-sala" in msg


def test_facts_from_config_is_pure() -> None:
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "num_attention_heads": 32,
        "hidden_size": 4096,
        "num_hidden_layers": 2,
    }
    before = json.dumps(cfg, sort_keys=True)
    facts = facts_from_config(cfg, "x")
    assert json.dumps(cfg, sort_keys=True) == before
    assert facts.num_key_value_heads == 32  # defaults to the attention heads
    assert facts.head_dim == 128


def test_cached_repos_are_listed_once_even_when_two_settings_name_one_folder(
    tmp_path: Path,
) -> None:
    from sglaunch.facts.model import hf_cached_repos

    hub = tmp_path / "hub"
    snap = hub / "models--openbmb--MiniCPM4-8B" / "snapshots" / "abc"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    (hub / "models--no--config" / "snapshots" / "x").mkdir(parents=True)
    # HF_HUB_CACHE and HF_HOME/hub pointing at the same folder, one through a symlink
    (tmp_path / "alias").symlink_to(hub)
    assert hf_cached_repos([hub, tmp_path / "alias", tmp_path / "missing"]) == [
        "openbmb/MiniCPM4-8B"
    ]
