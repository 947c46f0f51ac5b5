"""The differential corpus: launch lines that run through both tiers.

Generated, not hand-written: every bundled example and MiniCPM test model ×
the flag sets of the MiniCPM matrix × four GPUs × SGLANG_MINICPM_FORCE_DENSE
on/off, plus every good and bad case of the general-rules table on its own
GPU and on the four GPUs. The flag sets are imported from the built-in tier's
own tests, so a case added there is checked against sglang here too.
(Imported by name: tests/oracle is on sys.path, like oracle_helpers.)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sglaunch.validators.findings import Severity
from tests.unit.rules.test_general_rules import CASES as GENERAL_CASES
from tests.unit.rules.test_minicpm_matrix import FLAG_SETS

MODELS_DIR = Path(__file__).resolve().parent.parent / "data" / "models"
FORCE_DENSE = "SGLANG_MINICPM_FORCE_DENSE"
TRUST = "--trust-remote-code"

# x8: enough GPUs for every flag set; the GPU count itself is a launch check
# (parallel-gpus), which sglang's resolution never reads
GPUS = ("H100x8", "B200x8", "RTX5090x8", "A100x8")
# sglang's is_blackwell: compute capability major 10/11/12 with CUDA >= 12.8
# (the presets carry CUDA 12.9)
BLACKWELL = {"H100x8": False, "B200x8": True, "RTX5090x8": True, "A100x8": False}
SM100 = {"H100x8": False, "B200x8": True, "RTX5090x8": False, "A100x8": False}


@dataclass(frozen=True)
class Model:
    """A model in the corpus, with the two facts sglang derives for it (written out here,
    from each config.json, so the test does not trust the built-in tier's own derivation)."""

    name: str
    source: str  # what load_model_facts takes
    minicpm: bool  # a MiniCPM-family model: FORCE_DENSE on/off both run
    sparse: bool = False  # has_minicpm_sparse_attention
    lightning: bool = False  # has_lightning_layers
    remote_code: bool = False  # needs --trust-remote-code to load
    # MiniCPM-V: the first release whose provider picks triton on SM100 when no backend
    # is given (4.6 from 0.5.19, 4.7 from 0.5.23), None for the other models
    vision: str | None = None

    def vision_in(self, version: str) -> bool:
        from sglaunch.validators.release_spans import at_least

        return self.vision is not None and at_least(version, self.vision)


def _test_model(name: str, **facts: bool | str) -> Model:
    return Model(name, str(MODELS_DIR / name), minicpm=True, **facts)


MODELS = (
    Model("ex:minicpm-sala", "example:minicpm-sala", True, sparse=True, lightning=True),
    Model("ex:minicpm4-8b", "example:minicpm4-8b", True, remote_code=True),
    Model("ex:minicpm-v-4.6", "example:minicpm-v-4.6", True, vision="0.5.19"),
    Model("ex:llama-3.1-8b", "example:llama-3.1-8b", False),
    _test_model("sala-dense"),
    _test_model("sala-sparse", sparse=True),
    _test_model("sala-lightning", lightning=True),
    _test_model("sala-sparse-lightning", sparse=True, lightning=True),
    # a MiniCPMForCausalLM architecture over sglang's minicpm_sala config type
    _test_model("minicpm-arch-sala-config", sparse=True, lightning=True),
    _test_model("minicpmv-4.6", vision="0.5.19"),
    _test_model("minicpmv-4.7", vision="0.5.23"),
)
MODEL_BY_SOURCE = {m.source: m for m in MODELS}


@dataclass(frozen=True)
class Case:
    id: str
    group: str  # "matrix" or "general"
    model: Model
    flags: tuple[str, ...]  # sglang's server flags, without --model-path
    gpu: str  # a parse_gpu_spec spec
    env: tuple[tuple[str, str], ...] = ()
    flag_set: str = ""  # matrix: the FLAG_SETS key
    # general: the rule the table row is about, what the table expects of it,
    # and whether this run is on the row's own GPU (where that expectation holds)
    rule: str = ""
    expected: Severity | None = None
    own_gpu: bool = False

    @property
    def env_dict(self) -> dict[str, str]:
        return dict(self.env)

    @property
    def force_dense(self) -> bool:
        return dict(self.env).get(FORCE_DENSE) == "1"

    def argv(self) -> list[str]:
        from sglaunch.facts.model import model_path_for_sglang

        return ["--model-path", model_path_for_sglang(self.model.source), *self.flags]


def _matrix() -> Iterator[Case]:
    for model in MODELS:
        dense_options = (False, True) if model.minicpm else (False,)
        for flag_set, flags in FLAG_SETS.items():
            for gpu in GPUS:
                for force_dense in dense_options:
                    argv = (*flags, TRUST) if model.remote_code else tuple(flags)
                    env = ((FORCE_DENSE, "1"),) if force_dense else ()
                    yield Case(
                        id=f"{model.name}|{flag_set}|{gpu}|{'dense' if force_dense else '-'}",
                        group="matrix",
                        model=model,
                        flags=argv,
                        gpu=gpu,
                        env=env,
                        flag_set=flag_set,
                    )
        if model.remote_code:
            # without --trust-remote-code sglang cannot even load the config:
            # every flag set once, to see that the built-in tier says so too
            for flag_set, flags in FLAG_SETS.items():
                yield Case(
                    id=f"{model.name}(no-trust)|{flag_set}|H100x8|-",
                    group="matrix",
                    model=model,
                    flags=tuple(flags),
                    gpu="H100x8",
                    flag_set=flag_set,
                )


def _general() -> Iterator[Case]:
    seen: set[tuple[str, tuple[str, ...], str, tuple[tuple[str, str], ...]]] = set()
    for code, source, argv, gpu, env, severity, _fragment in GENERAL_CASES:
        model = MODEL_BY_SOURCE.get(source) or Model(source, source, False)
        env_t = tuple(sorted(env.items()))
        # the row's own GPU always runs: that is where the table's expectation
        # holds; the four corpus GPUs run once per distinct launch line
        for g in dict.fromkeys((gpu, *GPUS)):
            key = (source, tuple(argv), g, env_t)
            if g != gpu and key in seen:
                continue
            seen.add(key)
            env_id = "|" + ",".join(f"{k}={v}" for k, v in env_t) if env_t else ""
            yield Case(
                id=f"{code}|{' '.join(argv) or 'none'}|{source}|{g}{env_id}",
                group="general",
                model=model,
                flags=tuple(argv),
                gpu=g,
                env=env_t,
                rule=code,
                expected=severity,
                own_gpu=g == gpu,
            )


def build_corpus() -> list[Case]:
    return [*_matrix(), *_general()]
