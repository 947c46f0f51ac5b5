"""The YAML sglaunch exports is read by sglang 0.5.23's REAL config merger and parser.

Runs `sglang_config_probe.py` under the sglang interpreter named by
SGLAUNCH_SGLANG_PYTHON (CI sets it; locally e.g. /tmp/sglenv/bin/python) and
compares what sglang parsed with the profile, field by field. Without the
variable this fails: it is the only proof that the export matches sglang.
"""

from __future__ import annotations

import json
import os
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from sglaunch.facts.model import model_path_for_launch
from sglaunch.flags.launchline import parse_launch_line
from sglaunch.flags.schema import bundled_schema
from sglaunch.profiles import Profile, profile_from_command, to_yaml
from sglaunch.profiles.sglang_yaml import config_action_unsupported
from sglaunch.secrets import env_reference
from tests.support.profile_cases import ENVS, FLAG_SETS

pytestmark = pytest.mark.oracle

PROBE = Path(__file__).resolve().parents[2] / "support" / "sglang_config_probe.py"
SECRET_VALUES = {
    "SGLAUNCH_API_KEY": "sk-test-1",
    "SGLAUNCH_ADMIN_API_KEY": "sk-test-2",
}

# sglang must refuse these as sglaunch's import does (tests/functional/cli/test_profiles_cli.py)
BAD_YAML = {
    "underscore-key": "model-path: m\ntp_size: 2\n",
    "unknown-key": "model-path: m\ntp-sise: 2\n",
    "boolean-optional": "model-path: m\nenable-tf32-matmul: true\n",
    "deprecated-switch": "model-path: m\nenable-dp-attention: true\n",
    "not-a-mapping": "- a\n- b\n",
    "bad-int": "model-path: m\ntp-size: two\n",
}


def sglang_python() -> str:
    python = os.environ.get("SGLAUNCH_SGLANG_PYTHON")
    if not python:
        pytest.fail(
            "SGLAUNCH_SGLANG_PYTHON is not set: point it at the interpreter that has sglang 0.5.23 "
            "(e.g. SGLAUNCH_SGLANG_PYTHON=/tmp/sglenv/bin/python); this test proves the YAML export "
            "against sglang's own parser and must not be skipped"
        )
    if not Path(python).exists():
        pytest.fail(f"SGLAUNCH_SGLANG_PYTHON={python} does not exist")
    return python


def profiles() -> dict[str, Profile]:
    out: dict[str, Profile] = {}
    for flags_name, flags in FLAG_SETS.items():
        for env_name, env in ENVS.items():
            prefix = " ".join(f"{k}={v}" for k, v in env.items())
            line = (
                f"{prefix} python -m sglang.launch_server --model-path example:minicpm-sala "
                + " ".join(_quote(t) for t in flags)
            )
            out[f"{flags_name}-{env_name}"] = profile_from_command(line, name="case").profile
    secret = profile_from_command(
        "python -m sglang.launch_server --model-path /models/m --api-key sk-x "
        "--admin-api-key sk-y --tp-size 2",
        name="secret",
    ).profile
    out["secrets"] = secret
    return out


def _quote(token: str) -> str:
    import shlex

    return shlex.quote(token)


def argv_for(yaml_path: Path, exported_text: str) -> list[str]:
    """The launch line in the YAML's `# launch:` comment, as the shell would hand it to sglang."""
    line = next(
        ln[len("# launch:") :] for ln in exported_text.splitlines() if ln.startswith("# launch:")
    )
    argv = parse_launch_line(line).argv
    out: list[str] = []
    for tok in argv:
        ref = env_reference(tok)
        out.append(SECRET_VALUES[ref] if ref else tok)
    i = out.index("--config")
    out[i + 1] = str(yaml_path)
    return out


@cache
def probe_run(tmp: str) -> tuple[dict[str, Profile], dict[str, Any]]:
    tmp_path = Path(tmp)
    cases = profiles()
    jobs: list[dict[str, Any]] = []
    for key, profile in cases.items():
        exported = to_yaml(profile, config_name=f"{key}.yaml")
        path = tmp_path / f"{key}.yaml"
        path.write_text(exported.text)
        fields = ["model_path", *profile.flags, *profile.secrets]
        jobs.append({"argv": argv_for(path, exported.text), "fields": fields})
    for key, text in BAD_YAML.items():
        path = tmp_path / f"bad-{key}.yaml"
        path.write_text(text)
        jobs.append({"argv": ["--config", str(path)], "fields": []})
    proc = subprocess.run(
        [sglang_python(), str(PROBE)],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return cases, json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Profile], dict[str, Any]]:
    return probe_run(str(tmp_path_factory.mktemp("sglang-yaml")))


def test_sglang_parses_every_exported_yaml_as_the_profile(
    probed: tuple[dict[str, Profile], dict[str, Any]],
) -> None:
    cases, data = probed
    results = data["results"][: len(cases)]
    mismatches: list[str] = []
    for (key, profile), result in zip(cases.items(), results, strict=True):
        if "error" in result:
            mismatches.append(f"{key}: sglang refused it: {result['error']}")
            continue
        got = result["fields"]
        if got["model_path"] != model_path_for_launch(profile.model):
            mismatches.append(f"{key}: model_path {got['model_path']!r} != {profile.model!r}")
        for dest, value in profile.flags.items():
            if got[dest] != value:
                mismatches.append(f"{key}: {dest} sglang={got[dest]!r} profile={value!r}")
        for dest, var in profile.secrets.items():
            if got[dest] != SECRET_VALUES[var]:
                mismatches.append(f"{key}: {dest} did not come from ${var}")
    assert mismatches == []


def test_sglang_refuses_what_sglaunch_import_refuses(
    probed: tuple[dict[str, Profile], dict[str, Any]],
) -> None:
    cases, data = probed
    results = data["results"][len(cases) :]
    accepted = [k for k, r in zip(BAD_YAML, results, strict=True) if "error" not in r]
    assert accepted == []


def test_sglaunch_knows_which_flags_sglang_config_refuses(
    probed: tuple[dict[str, Profile], dict[str, Any]],
) -> None:
    _, data = probed
    schema = bundled_schema()
    ours = {
        o[2:].replace("-", "_")
        for f in schema.flags
        if config_action_unsupported(f)
        for o in [*f.options, "--" + f.dest]
    }
    assert ours == set(data["unsupported"])
    store_true = {
        o[2:].replace("-", "_")
        for f in schema.flags
        if f.action == "store_true" and not config_action_unsupported(f)
        for o in [*f.options, "--" + f.dest]
    }
    assert store_true == set(data["store_true"])
