"""Profiles the round-trip, export and sglang-parser tests share.

The flag sets are the MiniCPM matrix's (tests/unit/rules/test_minicpm_matrix.py),
written out again here so these tests do not depend on that module's names,
plus the shapes that are easy to get wrong: lists, JSON values, --x/--no-x
switches, environment variables, secrets and the `sglang serve` entry.
"""

from __future__ import annotations

import itertools

from sglaunch.examples import EXAMPLE_REPOS

# as a launch line names them: the models the bundled examples mirror (an export of an
# example:NAME profile writes these too; tests/unit/profiles/test_example_export.py)
MODELS = list(EXAMPLE_REPOS.values())

BACKEND_FLAGS = ("--attention-backend", "--prefill-attention-backend", "--decode-attention-backend")
SPARSE_BACKENDS = ("minicpm_flashattn", "minicpm_flashinfer")

MATRIX_FLAG_SETS: dict[str, list[str]] = {
    "none": [],
    "dp-attention-deprecated": ["--enable-dp-attention", "--dp-size", "2", "--tp-size", "2"],
    "attn-dp-size": ["--attn-dp-size", "2", "--tp-size", "2"],
    "dp-replicas": ["--dp-size", "2"],
    "enable-dp-attention-alone": ["--enable-dp-attention"],
    "hicache": ["--enable-hierarchical-cache"],
    "pd-prefill": ["--disaggregation-mode", "prefill"],
    "pd-prefill-fa3": ["--disaggregation-mode", "prefill", "--attention-backend", "fa3"],
}
for _flag, _backend in itertools.product(BACKEND_FLAGS, SPARSE_BACKENDS):
    MATRIX_FLAG_SETS[f"{_flag[2:]}={_backend}"] = [_flag, _backend]

# shapes beyond the matrix; every flag here is spelled the way sglaunch writes it
EXTRA_FLAG_SETS: dict[str, list[str]] = {
    "lists": [
        "--cuda-graph-bs-decode",
        "1",
        "2",
        "4",
        "8",
        "--allowed-media-domains",
        "example.com",
        "hf.co",
        "--bucket-time-to-first-token",
        "0.1",
        "0.5",
        "1.5",
    ],
    "empty-star-list": ["--uvicorn-access-log-exclude-prefixes"],
    "json-values": [
        "--cuda-graph-config",
        '{"decode":{"backend":"full","max_bs":64}}',
        "--preferred-sampling-params",
        '{"temperature":0.7,"top_p":0.9}',
        "--default-chat-template-kwargs",
        '{"enable_thinking":false}',
        "--sidecar-args",
        '["--a","b c"]',
        "--json-model-override-args",
        '{"rope_scaling": null}',
    ],
    "boolean-optional": ["--no-enable-tf32-matmul", "--dllm-fdfo", "--no-lora-strict-loading"],
    "scalars": [
        "--mem-fraction-static",
        "0.85",
        "--context-length",
        "32768",
        "--max-running-requests",
        "64",
        "--served-model-name",
        "my model",
        "--chat-template",
        "",
        "--log-requests-level",
        "3",
        "--trust-remote-code",
        "--enable-metrics",
    ],
}

FLAG_SETS = {**MATRIX_FLAG_SETS, **EXTRA_FLAG_SETS}

ENVS: dict[str, dict[str, str]] = {
    "no-env": {},
    "force-dense": {"SGLANG_MINICPM_FORCE_DENSE": "1"},
}
