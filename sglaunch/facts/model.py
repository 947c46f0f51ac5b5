"""Model facts from a Hugging Face config: a local folder, the local HF cache, or a bundled example.

Never the network, never the weights, never code from the model folder.
`transformers.AutoConfig` (with `trust_remote_code=False`) reads configs whose
type transformers knows; anything else (remote-code types such as `minicpm`,
sglang's own types such as `minicpm_sala`) is read as data, with sglang's
semantics applied where sglang defines the type.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sglaunch import SGLANG_VERSION
from sglaunch.errors import UserError
from sglaunch.examples import EXAMPLE_REPOS, EXAMPLES, example_dir
from sglaunch.facts.config_cache import TransformersRejected, autoconfig_view
from sglaunch.facts.config_limits import (
    check_config_numbers,
    check_config_types,
    in_snapshots,
    snapshot_in_repo,
)
from sglaunch.facts.hf_cache import hf_cache_dirs
from sglaunch.memory.model_inputs import with_memory_shapes, with_weight_breakdown
from sglaunch.memory.weights import weight_bytes
from sglaunch.model_types import (
    known_model_types,
    model_types_data,
    sglang_architectures,
    text_config,
)
from sglaunch.safeio import kind_of, parse_json, path_stat, read_text, shown
from sglaunch.validators.facts import ModelFacts

if TYPE_CHECKING:
    import logging

# A config.json is a few KB; anything this large is not one.
MAX_CONFIG_BYTES = 8 * 1024 * 1024

_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")


class ModelNotCached(UserError):
    """A Hugging Face repo id that is not in the local cache: a valid launch (sglang downloads
    it), checked without its config. `repo_id` is the user's model, to keep."""

    def __init__(self, message: str, repo_id: str) -> None:
        super().__init__(message)
        self.repo_id = repo_id


def not_cached_note(repo_id: str) -> str:
    """What the model panel, `check` and the verdict say of a repo checked without its config."""
    return (
        f"{repo_id}: not in the local cache — checked without its config (sglang will download it)"
    )


def bundled_copy(source: str) -> str | None:
    """The bundled example whose config mirrors the hub repo `source` (None for any other).

    A user who pastes `--model-path openbmb/MiniCPM-SALA` before downloading it is checked
    against sglaunch's copy of that repo's config, and the launch keeps the repo id."""
    for name, repo in EXAMPLE_REPOS.items():
        if repo == source:
            return name
    return None


def bundled_copy_note(source: str, facts: ModelFacts) -> str | None:
    """What the panel, `check` and `--apply` say when `facts` were read from a bundled copy of
    the repo `source` (it is not in the local cache), else None."""
    name = bundled_copy(source)
    if name is None or not facts.config_path:
        return None
    if Path(facts.config_path).parent != example_dir(name):
        return None
    return (
        f"{source}: not in the local cache — checked with sglaunch's bundled copy of its config "
        "(sglang will download the model)"
    )


# sglang srt/utils/hf_transformers/common.py CONTEXT_LENGTH_KEYS, in order
CONTEXT_LENGTH_KEYS = (
    "max_sequence_length",
    "seq_length",
    "max_seq_len",
    "model_max_length",
    "max_position_embeddings",
)

# Spellings of the same fact across model families (transformers' attribute_map)
_ALIASES: dict[str, tuple[str, ...]] = {
    "num_attention_heads": ("num_attention_heads", "n_head", "num_heads", "n_heads"),
    "num_hidden_layers": ("num_hidden_layers", "n_layer", "num_layers", "n_layers"),
    "hidden_size": ("hidden_size", "n_embd", "d_model"),
    "num_key_value_heads": (
        "num_key_value_heads",
        "num_kv_heads",
        "n_head_kv",
        "multi_query_group_num",
    ),
}

# sglang's MiniCPMHybridConfig (srt/configs/minicpm.py) mixer-type aliases
_MIXER_ALIASES = {
    "minicpm4": "minicpm4",
    "minicpm": "minicpm4",
    "standard": "minicpm4",
    "attention": "minicpm4",
    "attn": "minicpm4",
    "lightning": "lightning-attn",
    "lightning_attn": "lightning-attn",
    "lightning-attn": "lightning-attn",
}


def _transformers_version(version: str | None = None) -> str:
    return str(model_types_data(version).get("transformers_version", ""))


# --- finding the config ----------------------------------------------------------


def hf_cached_repos(cache_dirs: Iterable[Path]) -> list[str]:
    """Repo ids in the local Hugging Face cache that have a config.json (no network)."""
    out: list[str] = []
    seen: set[Path] = set()
    for base in cache_dirs:
        try:
            real = base.resolve()
            if real in seen:  # HF_HOME/hub is often the default folder too
                continue
            seen.add(real)
            entries = sorted(base.glob("models--*"))
            for entry in entries:
                repo = entry.name[len("models--") :].replace("--", "/", 1)
                if repo not in out and any(entry.glob("snapshots/*/config.json")):
                    out.append(repo)
        except OSError:
            continue
    return out


def find_in_hf_cache(repo_id: str, env: Mapping[str, str]) -> Path | None:
    folder = "models--" + repo_id.replace("/", "--")
    for base in hf_cache_dirs(env):
        root = base / folder
        if not root.is_dir():
            continue
        ref = root / "refs" / "main"
        if ref.is_file():
            snap = snapshot_in_repo(root, ref)
            if (snap / "config.json").is_file():
                return snap
        snaps = sorted(
            (
                p
                for p in (root / "snapshots").glob("*")
                if in_snapshots(root, p) and (p / "config.json").is_file()
            ),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
        if snaps:
            return snaps[0]
    return None


def resolve_model_dir(source: str, env: Mapping[str, str] | None = None) -> Path:
    """The folder holding config.json for `source`; UserError with the way out otherwise."""
    env = os.environ if env is None else env
    source = source.strip()
    if not source:
        raise UserError(
            "no model given: pass --model PATH, a Hugging Face repo id, or example:NAME"
        )
    if source.startswith("example:"):
        name = source.split(":", 1)[1]
        if name not in EXAMPLES:
            raise UserError(f"no bundled example {name!r}; choose one of: {', '.join(EXAMPLES)}")
        return example_dir(name)
    try:
        return _probe_model_path(source, env)
    except (OSError, RuntimeError) as exc:
        # expanduser raises RuntimeError for "~nouser/..."; stat raises OSError for a
        # name the OS refuses (ENAMETOOLONG, ELOOP, EACCES on a parent folder)
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).rstrip(".")
        raise UserError(f"cannot use model path {shown(source, 80)!r}: {why}") from exc


def _probe_model_path(source: str, env: Mapping[str, str]) -> Path:
    """resolve_model_dir for a path or repo id; OSError/RuntimeError escape to the caller."""
    path = Path(source).expanduser()
    st = path_stat(path, shown(source))
    if st is not None and stat.S_ISREG(st.st_mode):
        if path.name == "config.json":
            return path.parent
        raise UserError(
            f"{path} is a file, not a model folder; point --model at the folder that holds config.json"
        )
    if st is not None and stat.S_ISDIR(st.st_mode):
        if path_stat(path / "config.json") is None:
            raise UserError(
                f"{path} has no config.json; point --model at the model's folder (the one with config.json)"
            )
        return path
    if st is not None:  # a FIFO, a device, a socket: refused by name
        raise UserError(f"{shown(source)} is {kind_of(st.st_mode)}, not a model folder")
    if _REPO_ID.match(source) and not source.startswith((".", "/", "~")):
        found = find_in_hf_cache(source, env)
        if found is not None:
            return found
        raise ModelNotCached(
            f"model {source!r} is not a local folder and is not in the local Hugging Face cache "
            f"({hf_cache_dirs(env)[0]}); download it first (huggingface-cli download {source} --include config.json) "
            "or pass a local path — sglaunch never downloads",
            source,
        )
    raise UserError(f"model folder {shown(source)} does not exist")


def read_config(config_path: Path) -> dict[str, Any]:
    """config.json as a dict, or a one-line UserError naming the problem."""
    label = shown(config_path)
    text = read_text(config_path, limit=MAX_CONFIG_BYTES, label=label, noun="a model config")
    data = parse_json(text, label=label, what="model config")
    if not isinstance(data, dict):
        raise UserError(f"{config_path} holds a JSON {type(data).__name__}, not an object")
    archs = data.get("architectures")
    if not isinstance(archs, list) or not archs or not all(isinstance(a, str) for a in archs):
        raise UserError(
            f'{config_path} has no "architectures" list; sglang needs it to choose the model class '
            '(for example "architectures": ["LlamaForCausalLM"])'
        )
    check_config_numbers(data, label)
    check_config_types(data, label)
    return data


# --- from config dict to facts (pure) --------------------------------------------


def _first(d: Mapping[str, Any], keys: tuple[str, ...]) -> Any:
    for k in keys:
        v = d.get(k)
        if v is not None:
            return v
    return None


def _int_or_none(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return None


def context_length(cfg: Mapping[str, Any]) -> int:
    """sglang's get_context_length (srt/utils/hf_transformers/common.py:677)."""
    rope = cfg.get("rope_scaling")
    factor: float = 1
    if isinstance(rope, Mapping) and rope:
        factor = rope.get("factor", 1) or 1
        if "original_max_position_embeddings" in rope or rope.get("rope_type") == "llama3":
            factor = 1
    for key in CONTEXT_LENGTH_KEYS:
        val = cfg.get(key)
        if val is not None:
            try:
                return int(factor * val)
            except (TypeError, ValueError):
                continue
    return 2048


def sala_facts(cfg: Mapping[str, Any], *, layers: int, heads: int, kv: int) -> dict[str, Any]:
    """MiniCPMHybridConfig's derived facts, errors included, with sglang's exact semantics.

    `layers`, `heads` and `kv` are the config's values with the constructor's
    defaults already applied (facts_from_config does that, once).
    """
    raw = cfg.get("mixer_types")
    out: dict[str, Any] = {}
    if not raw:
        mixers = ["minicpm4"]
    elif not isinstance(raw, list):
        return {"config_error": f"Unsupported mixer type: {raw}"}
    elif len(raw) > layers:
        return {
            "config_error": f"Invalid number of mixer types: {len(raw)}",
            "ref": "srt/configs/minicpm.py:96",
        }
    else:
        mixers = list(raw)
    try:
        mixers = [_MIXER_ALIASES[m] for m in mixers]
    except (KeyError, TypeError) as exc:
        bad = exc.args[0] if exc.args else mixers
        return {
            "config_error": f"Unsupported mixer type: {bad}",
            "ref": "srt/configs/minicpm.py:102",
        }
    repeats = (layers + len(mixers) - 1) // len(mixers) if mixers else 0
    expanded = (mixers * repeats)[:layers]
    out["mixer_types"] = tuple(expanded)
    nh = cfg.get("lightning_nh")
    nkv = cfg.get("lightning_nkv")
    nh = heads if nh is None else nh
    nkv = kv if nkv is None else nkv
    if "lightning-attn" in expanded and nh != nkv:
        out["config_error"] = (
            "MiniCPM Lightning attention requires equal query and KV head "
            "counts because the seg_la backend does not support GQA: "
            f"lightning_nh={nh}, lightning_nkv={nkv}"
        )
        out["ref"] = "srt/configs/minicpm.py:118"
    out["has_minicpm_sparse_attention"] = cfg.get("sparse_config") is not None and any(
        m == "minicpm4" for m in expanded
    )
    out["has_lightning_layers"] = any(m == "lightning-attn" for m in expanded)
    return out


def facts_from_config(
    config: Mapping[str, Any],
    source: str,
    *,
    loaded_with: str = "json",
    config_path: str = "",
    sglang_version: str | None = None,
) -> ModelFacts:
    """ModelFacts from a config dict: pure, so the rules' inputs can be tested from data."""
    tf_types, sglang_types = known_model_types(sglang_version)
    model_type = str(config.get("model_type") or "")
    tcfg = text_config(config)
    heads = _int_or_none(_first(tcfg, _ALIASES["num_attention_heads"]))
    kv = _int_or_none(_first(tcfg, _ALIASES["num_key_value_heads"]))
    hidden = _int_or_none(_first(tcfg, _ALIASES["hidden_size"]))
    layers = _int_or_none(_first(tcfg, _ALIASES["num_hidden_layers"]))
    head_dim = _int_or_none(tcfg.get("head_dim"))
    sala: dict[str, Any] | None = None
    if model_type == "minicpm_sala":
        # MiniCPMHybridConfig's constructor defaults for what config.json leaves out
        heads = 32 if heads is None else heads
        kv = 8 if kv is None else kv
        layers = 32 if layers is None else layers
        sala = sala_facts(config, layers=layers, heads=heads, kv=kv)
    if kv is None:
        kv = heads
    if head_dim is None and heads and hidden:
        head_dim = hidden // heads
    quant = config.get("quantization_config") or tcfg.get("quantization_config")
    has_auto_map = isinstance(config.get("auto_map"), Mapping) and bool(config.get("auto_map"))
    known_tf = model_type in tf_types
    known = known_tf or model_type in sglang_types
    ctx_cfg = dict(tcfg)
    if model_type == "minicpm_sala" and "max_position_embeddings" not in ctx_cfg:
        ctx_cfg["max_position_embeddings"] = 32768
    facts = ModelFacts(
        source=source,
        architectures=tuple(str(a) for a in config.get("architectures") or ()),
        model_type=model_type,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        hidden_size=hidden,
        head_dim=head_dim,
        vocab_size=_int_or_none(tcfg.get("vocab_size")),
        context_length=context_length(ctx_cfg),
        dtype=str(
            _first(config, ("torch_dtype", "dtype")) or _first(tcfg, ("torch_dtype", "dtype")) or ""
        )
        or None,
        quantization=str(quant.get("quant_method"))
        if isinstance(quant, Mapping) and quant.get("quant_method")
        else None,
        is_multimodal=tcfg is not config,
        is_mla=tcfg.get("kv_lora_rank") is not None,
        sglang_native=(
            str((config.get("architectures") or [""])[0]) in sglang_architectures(sglang_version)
        ),
        has_auto_map=has_auto_map,
        transformers_knows_type=known_tf,
        needs_remote_code=bool(has_auto_map and not known),
        loaded_with=loaded_with,
        config_path=config_path,
    )
    if not known and not has_auto_map:
        facts = replace(
            facts,
            config_error=(
                f"model type {model_type!r} is known to neither transformers "
                f"{_transformers_version(sglang_version)} nor sglang "
                f"{sglang_version or SGLANG_VERSION}, and the config has no "
                "auto_map to load custom code from"
                if model_type
                else 'config.json has no "model_type"; transformers cannot tell which config class to use'
            ),
            config_error_ref="srt/utils/hf_transformers/config.py:228 (AutoConfig.from_pretrained)",
        )
    if sala is not None:
        facts = replace(
            facts,
            mixer_types=sala.get("mixer_types"),
            has_minicpm_sparse_attention=bool(sala.get("has_minicpm_sparse_attention")),
            has_lightning_layers=bool(sala.get("has_lightning_layers")),
            config_error=sala.get("config_error") or facts.config_error,
            config_error_ref=sala.get("ref", "srt/configs/minicpm.py")
            if sala.get("config_error")
            else facts.config_error_ref,
        )
    return with_memory_shapes(facts, config, tcfg, sala, sglang_types=sglang_types)


# --- loading ------------------------------------------------------------------------


def _errors_only(record: logging.LogRecord) -> bool:
    """transformers' root logger's filter: ERROR and above pass."""
    import logging  # imported by then (`_quiet_transformers`)

    return record.levelno >= logging.ERROR


def _quiet_transformers() -> None:
    """Keep transformers' warnings off stderr, which the TUI draws on and `check` reports on.

    Its import warns before its logging API exists ("PyTorch was not found"), on
    its root logger: a filter there stops that; set_verbosity_error does the rest.
    """
    import logging  # only with transformers: its import costs a check ~3-6 ms

    root = logging.getLogger("transformers")
    if _errors_only not in root.filters:
        root.addFilter(_errors_only)
    from transformers.utils import logging as transformers_logging  # heavy: transformers (~1.5 s)

    transformers_logging.set_verbosity_error()


def _autoconfig_dict(model_dir: Path) -> dict[str, Any]:
    """AutoConfig's view of a config transformers knows (defaults filled in, aliases resolved).

    Offline through `local_files_only=True` alone: sglaunch's os.environ is what
    the server it launches inherits, so no HF_*/TRANSFORMERS_* variable is set here.
    """
    _quiet_transformers()
    from transformers import AutoConfig  # heavy: transformers (~1.5 s)

    cfg = AutoConfig.from_pretrained(str(model_dir), trust_remote_code=False, local_files_only=True)
    data: dict[str, Any] = cfg.to_dict()
    # to_dict drops nothing we read, but keeps sub-configs as dicts; mirror the
    # attribute names transformers maps (e.g. n_head -> num_attention_heads)
    for attr in ("num_attention_heads", "num_hidden_layers", "hidden_size", "num_key_value_heads"):
        value = getattr(cfg, attr, None)
        if value is not None and attr not in data:
            data[attr] = value
    return data


def load_model_facts(
    source: str,
    *,
    env: Mapping[str, str] | None = None,
    use_transformers: bool = True,
    sglang_version: str | None = None,
) -> ModelFacts:
    """Facts for `source` (a folder, a config.json, a cached repo id, or example:NAME).

    Raises UserError (one line, exit 2) for anything the user must fix.
    """
    try:
        model_dir = resolve_model_dir(source, env)
    except ModelNotCached:
        example = bundled_copy(source)
        if example is None:
            raise
        model_dir = example_dir(example)
    config_path = model_dir / "config.json"
    data = read_config(config_path)
    raw = data
    tf_types, _ = known_model_types(sglang_version)
    loaded_with = "json"
    if use_transformers and str(data.get("model_type") or "") in tf_types:
        try:
            # a repeat check of the same config reads transformers' answer from the cache
            merged = autoconfig_view(model_dir, _autoconfig_dict)
            # keep what only the raw file says (auto_map) and the architectures as written
            merged.setdefault("auto_map", data.get("auto_map"))
            merged["architectures"] = data["architectures"]
            data = merged
            loaded_with = "transformers"
        except ImportError:
            pass
        except TransformersRejected as exc:  # transformers rejects the config: so would sglang
            facts = facts_from_config(
                data, source, config_path=str(config_path), sglang_version=sglang_version
            )
            return replace(
                facts,
                config_error=f"transformers cannot load this config: {exc}".splitlines()[0],
                config_error_ref="srt/utils/hf_transformers/config.py:228 (AutoConfig.from_pretrained)",
            )
    facts = facts_from_config(
        data,
        source,
        loaded_with=loaded_with,
        config_path=str(config_path),
        sglang_version=sglang_version,
    )
    wbytes, wsource = weight_bytes(model_dir)
    facts = replace(facts, weight_bytes=wbytes, weight_source=wsource)
    return with_weight_breakdown(facts, model_dir, raw, sglang_version=sglang_version)


def model_path_for_sglang(source: str, env: Mapping[str, str] | None = None) -> str:
    """What sglang's check reads as --model-path: bundled examples become their folder (sglang
    cannot read `example:`); paths and repo ids go through unchanged."""
    if source.startswith("example:"):
        return str(resolve_model_dir(source, env))
    example = bundled_copy(source)
    if example is not None:
        try:
            resolve_model_dir(source, env)
        except ModelNotCached:  # sglang's check reads the bundled copy; the launch the repo
            return str(example_dir(example))
    return source


def model_path_for_launch(source: str) -> str:
    """What a launch (and an export, a preview) passes as --model-path: a bundled example is
    the Hugging Face repo it mirrors (its folder has a config and no weights); paths and repo
    ids go through unchanged."""
    if source.startswith("example:"):
        name = source.split(":", 1)[1]
        if name not in EXAMPLES:
            raise UserError(f"no bundled example {name!r}; choose one of: {', '.join(EXAMPLES)}")
        return EXAMPLE_REPOS.get(name, str(example_dir(name)))
    return source


def source_for_path(path: str) -> str:
    """The reverse: a --model-path that is a bundled example's folder reads back as example:NAME."""
    try:
        resolved = Path(path).expanduser().resolve()
    except (OSError, RuntimeError):
        return path
    for name in EXAMPLES:
        if resolved == example_dir(name).resolve():
            return f"example:{name}"
    return path
