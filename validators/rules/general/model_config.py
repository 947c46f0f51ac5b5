"""The model's config: remote code, configs sglang cannot load, unknown architectures, context length.

sglang 0.5.23 loads the HF config at resolution step 16 (get_config →
transformers.AutoConfig, srt/utils/hf_transformers/config.py:228) and builds
its ModelConfig at step 27, where the context length is checked
(srt/configs/model_config.py:1314).
"""

from __future__ import annotations

from collections.abc import Iterator

from sglaunch.validators.cards import card
from sglaunch.validators.facts import CheckInput
from sglaunch.validators.findings import Finding, Fix, Severity
from sglaunch.validators.release_spans import semantics
from sglaunch.validators.rule import rule

CONFIG_LOAD = "srt/utils/hf_transformers/config.py:228"
CONTEXT = "srt/configs/model_config.py:1314"


def _model_path(inp: CheckInput) -> str:
    path = inp.value("model_path")
    if path:
        return str(path)
    return inp.model.source if inp.model else "the model"


@rule(
    "trust-remote-code",
    summary="the model's config class is custom code: sglang needs --trust-remote-code",
    mirrors="config",
    ref=f"{CONFIG_LOAD} (transformers dynamic_module_utils)",
)
def trust_remote_code(inp: CheckInput) -> Iterator[Finding]:
    m = inp.model
    if m is None or not m.needs_remote_code or inp.value("trust_remote_code"):
        return
    path = _model_path(inp)
    yield Finding(
        code="trust-remote-code",
        severity=Severity.ERROR,
        message=f"The repository {path} contains custom code which must be executed to correctly load "
        "the model. Please pass the argument `trust_remote_code=True` to allow custom code to be run.",
        flags=("trust_remote_code",),
        fixes=(
            Fix(
                label="Add --trust-remote-code (runs the checkpoint's own Python code)",
                set={"trust_remote_code": True},
            ),
        ),
        ref=CONFIG_LOAD,
        detail=f"model_type {m.model_type!r} is unknown to sglang's transformers and the config's auto_map "
        "points at Python files in the model folder.",
    )


@rule(
    "model-config-invalid",
    summary="sglang cannot load this model config",
    mirrors="config",
    ref=CONFIG_LOAD,
)
def config_invalid(inp: CheckInput) -> Iterator[Finding]:
    m = inp.model
    if m is None or not m.config_error:
        return
    yield Finding(
        code="model-config-invalid",
        severity=Severity.ERROR,
        message=m.config_error,
        ref=m.config_error_ref or CONFIG_LOAD,
        detail=f"{m.config_path or m.source}: sglang stops while loading the config, before any flag check.",
    )


@rule(
    "architecture-without-rules",
    summary="an architecture sglang does not implement natively, or sglaunch has no family rules for",
    mirrors="launch",
    ref="srt/models/registry.py:64",
)
def unknown_architecture(inp: CheckInput) -> Iterator[Finding]:
    m = inp.model
    if m is None or not m.architecture:
        return
    if m.sglang_native is False:
        yield Finding(
            code="architecture-without-rules",
            severity=Severity.INFO,
            message=f"sglang {semantics(inp.sglang_version)} has no native model class "
            f"{m.architecture}; it would fall back to "
            "its Transformers backend, which needs the class in transformers or an AutoModel in auto_map",
            ref="srt/models/registry.py:64",
            detail="sglaunch has no family rules for it either: only the general rules (and sglang's own "
            "check, when available) apply.",
        )


@rule(
    "context-length-exceeds-model",
    summary="--context-length above the model's maximum",
    mirrors="resolution",
    ref=CONTEXT,
)
def context_length(inp: CheckInput) -> Iterator[Finding]:
    m = inp.model
    asked = inp.value("context_length")
    if (
        m is None
        or m.context_length is None
        or not isinstance(asked, int)
        or asked <= m.context_length
    ):
        return
    base = (
        f"Warning: User-specified context_length ({asked}) is greater than the derived context_length "
        f"({m.context_length}). This may lead to incorrect model outputs or CUDA errors. Note that the "
        "derived context_length may differ from max_position_embeddings in the model's config."
    )
    allowed = inp.env_bool("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN") or inp.env_bool(
        "SGLANG_IS_IN_CI"
    )
    fix = Fix(
        label=f"Use the model's maximum, {m.context_length}",
        set={"context_length": m.context_length},
    )
    if allowed:
        yield Finding(
            code="context-length-exceeds-model",
            severity=Severity.WARNING,
            message=base,
            flags=("context_length",),
            fixes=(fix,),
            ref=CONTEXT,
            detail="SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is set, so sglang only warns and keeps your value.",
        )
        return
    yield Finding(
        code="context-length-exceeds-model",
        severity=Severity.ERROR,
        message=base
        + " To allow overriding this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1",
        flags=("context_length",),
        fixes=(
            fix,
            Fix(
                label="Remove --context-length (sglang uses the model's)", unset=("context_length",)
            ),
        ),
        ref=CONTEXT,
    )


card(
    "trust-remote-code",
    "This model needs --trust-remote-code",
    what=(
        "The model's config.json names a model_type that neither sglang nor the transformers it "
        "pins knows, and its auto_map points at Python files shipped in the model folder "
        "(configuration_*.py). Loading it means running that code, which transformers refuses "
        "unless asked: sglang stops at its first step that reads the config."
    ),
    when=(
        "Real MiniCPM 4 checkpoints (model_type 'minicpm') and other models published with custom "
        "code, launched without --trust-remote-code."
    ),
    solutions=(
        "Add --trust-remote-code if you trust the checkpoint's author (the code runs in the server).",
        "Or use a version of the model whose architecture sglang supports natively.",
    ),
    before="sglang serve --model-path openbmb/MiniCPM4-8B",
    after="sglang serve --model-path openbmb/MiniCPM4-8B --trust-remote-code",
    related=("model-config-invalid",),
    patterns=(
        r"contains custom code which must be executed",
        r"references custom code contained in",
    ),
    ref="sglang/" + CONFIG_LOAD,
    stage="config",
)

card(
    "model-config-invalid",
    "sglang cannot load this model's config",
    what=(
        "sglang reads config.json with transformers (or, for types it defines itself such as "
        "minicpm_sala, its own config class) before it checks any flag. This config fails there: "
        "an unknown model_type without auto_map, a missing model_type, or values the config class "
        "rejects (for MiniCPM SALA: unknown mixer types, more mixer types than layers, lightning "
        "layers with GQA)."
    ),
    when="Hand-edited or truncated config.json files, or checkpoints newer than sglang 0.5.23.",
    solutions=(
        "Fix config.json as the message says (compare with the model's published config).",
        "If the model is newer than sglang 0.5.23, upgrade sglang.",
    ),
    before='model_type: minicpm_sala, mixer_types: ["mamba"]',
    after='model_type: minicpm_sala, mixer_types: ["minicpm4", "lightning"]',
    related=("trust-remote-code",),
    patterns=(
        r"Unsupported mixer type",
        r"Invalid number of mixer types",
        r"Lightning attention requires equal query and KV head",
        r"Transformers does not recognize this architecture",
        r"Unrecognized model in",
    ),
    ref="sglang/" + CONFIG_LOAD,
    stage="config",
)

card(
    "architecture-without-rules",
    "An architecture sglang has no native class for",
    what=(
        "sglang 0.5.23 looks up config.architectures[0] in its model registry. Without a native "
        "class it falls back to the Transformers backend (slower, fewer features) — and fails at "
        "launch if transformers has no such class and the config has no AutoModel in auto_map."
    ),
    when="New architectures, renamed classes, or a typo in config.json's architectures.",
    solutions=(
        "Check config.json's architectures against the model's published config.",
        "Upgrade sglang if the model is newer than 0.5.23.",
        "Pass --model-impl transformers to choose the Transformers backend explicitly.",
    ),
    related=("model-config-invalid",),
    patterns=(r"Model architectures \[.*\] are not supported for now",),
    ref="sglang/srt/models/registry.py:64",
    stage="launch",
)

card(
    "context-length-exceeds-model",
    "--context-length is above the model's maximum",
    what=(
        "sglang derives the model's maximum context from its config (max_position_embeddings, "
        "times the rope-scaling factor unless the scaling is llama3-style or names an original "
        "length). A larger --context-length stops resolution, unless "
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 turns it into a warning."
    ),
    when="A long-context launch line reused for a model with a shorter window.",
    solutions=(
        "Lower --context-length to the model's maximum (or remove it).",
        "If you know the model extrapolates (e.g. with your own rope scaling), set "
        "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 — outputs may degrade.",
    ),
    before="sglang serve --model-path openbmb/MiniCPM4-8B --context-length 131072",
    after="sglang serve --model-path openbmb/MiniCPM4-8B --context-length 32768",
    related=("model-config-invalid",),
    patterns=(r"is greater than the derived context_length",),
    ref="sglang/" + CONTEXT,
)
