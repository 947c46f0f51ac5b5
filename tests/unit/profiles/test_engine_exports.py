"""Multi-node exports as text: per-node command lines, sbatch, LeaderWorkerSet, SkyPilot.

LWS exports are validated against the LeaderWorkerSet CRD's own schema and SkyPilot
exports against SkyPilot's own task schema (both vendored in tests/data/schemas, see its
README), with unknown fields refused.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from sglaunch.errors import UserError
from sglaunch.flags.argv import node_argv, to_argv
from sglaunch.flags.schema import bundled_schema
from sglaunch.profiles import Profile
from sglaunch.profiles.argvform import flags_argv
from sglaunch.profiles.lws import DEFAULT_IMAGE, check_image, to_lws
from sglaunch.profiles.nodes import node_lines
from sglaunch.profiles.skypilot import to_skypilot
from sglaunch.profiles.slurm import to_sbatch
from sglaunch.profiles.tomlform import profile_from_toml, profile_to_toml

SCHEMAS = Path(__file__).resolve().parents[2] / "data" / "schemas"


def big(**kw: Any) -> Profile:
    base: dict[str, Any] = {
        "name": "llama-405b",
        "model": "meta-llama/Llama-3.1-405B-Instruct",
        "flags": {"tp_size": 16, "dist_timeout": 3600, "mem_fraction_static": 0.85},
        "env": {"NCCL_SOCKET_IFNAME": "eth0", "GLOO_SOCKET_IFNAME": "eth0"},
        "secrets": {"api_key": "SGLANG_API_KEY"},
        "nodes": 2,
    }
    base.update(kw)
    return Profile(**base)


def closed(schema: Any) -> Any:
    """The structural schema with unknown fields refused, as the API server's pruning
    would silently drop them (see tests/data/schemas/README.md)."""
    if isinstance(schema, dict):
        out = {k: closed(v) for k, v in schema.items()}
        if (
            "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(schema, list):
        return [closed(v) for v in schema]
    return schema


@pytest.fixture(scope="module")
def lws_validator() -> jsonschema.Draft7Validator:
    schema = closed(json.loads((SCHEMAS / "leaderworkerset-v1.json").read_text()))
    return jsonschema.Draft7Validator(schema)


@pytest.fixture(scope="module")
def sky_validators() -> tuple[jsonschema.protocols.Validator, jsonschema.protocols.Validator]:
    task = json.loads((SCHEMAS / "skypilot-task.json").read_text())
    resources = json.loads((SCHEMAS / "skypilot-resources.json").read_text())
    return jsonschema.Draft202012Validator(task), jsonschema.Draft202012Validator(resources)


# --- the one writer ---------------------------------------------------------------------


def test_node_argv_replaces_the_lines_own_multi_node_flags() -> None:
    argv = [
        "--tp",
        "16",
        "--nnodes",
        "4",
        "--node-rank=3",
        "--nccl-init-addr",
        "x:1",
        "--port",
        "1",
    ]
    assert node_argv(argv, 1, 2, "head:20000") == [
        "--tp",
        "16",
        "--port",
        "1",
        "--nnodes",
        "2",
        "--node-rank",
        "1",
        "--dist-init-addr",
        "head:20000",
    ]


def test_session_and_profile_writers_write_a_json_string_flag_alike() -> None:
    # one writer: a JSON-typed flag holding a bare string is JSON text in both forms
    schema = bundled_schema()
    spec = next(f for f in schema.flags if f.type == "json_object")
    profile = Profile(name="x", model="m", flags={spec.dest: {"a": "é"}})
    from_profile = flags_argv(profile, schema, model=None, secrets={})
    assert to_argv({spec.dest: {"a": "é"}}, schema) == from_profile


# --- the profile's nodes ----------------------------------------------------------------


def test_nodes_round_trips_through_toml(tmp_path: Path) -> None:
    data = profile_to_toml(big())
    assert b"nodes = 2" in data
    assert profile_from_toml(data, name="llama-405b", path=tmp_path / "p.toml").nodes == 2
    one = profile_to_toml(big(nodes=1))
    assert b"nodes" not in one  # the default is not written


@pytest.mark.parametrize("value", ["0", "-1", "5000", '"2"', "true", "1.5"])
def test_a_bad_node_count_is_refused_by_line(tmp_path: Path, value: str) -> None:
    text = f'schema_version = 1\nmodel = "m"\nnodes = {value}\n'
    with pytest.raises(UserError) as exc:
        profile_from_toml(text.encode(), name="p", path=tmp_path / "p.toml")
    assert "nodes" in exc.value.message and "(line 3)" in exc.value.message
    assert "\n" not in exc.value.message


# --- command lines ----------------------------------------------------------------------


def test_command_has_one_line_per_node_differing_only_in_rank() -> None:
    lines = node_lines(big(nodes=3, flags={"tp_size": 24}))
    assert len(lines) == 3
    tokens = [shlex.split(line) for line in lines]
    ranks = [t[t.index("--node-rank") + 1] for t in tokens]
    assert ranks == ["0", "1", "2"]
    for t in tokens:
        i = t.index("--node-rank")
        assert t[:i] + t[i + 2 :] == tokens[0][:i] + tokens[0][i + 2 :]
        assert t[t.index("--nnodes") + 1] == "3" and t[t.index("--host") + 1] == "0.0.0.0"
    assert "sk-" not in "".join(lines) and '"${SGLANG_API_KEY:?' in lines[0]
    assert lines[0].startswith("NCCL_SOCKET_IFNAME=eth0 GLOO_SOCKET_IFNAME=eth0 ")


def test_command_uses_the_profiles_rendezvous_address_and_drops_its_rank() -> None:
    flags = {"tp_size": 16, "nnodes": 2, "node_rank": 1, "dist_init_addr": "10.1.0.5:5000"}
    [line] = node_lines(big(flags=flags), rank=0)
    t = shlex.split(line)
    assert t.count("--node-rank") == 1 and t[t.index("--node-rank") + 1] == "0"
    assert t[t.index("--dist-init-addr") + 1] == "10.1.0.5:5000"


@pytest.mark.parametrize("rank", [-1, 2, 7])
def test_a_rank_outside_the_nodes_is_refused(rank: int) -> None:
    with pytest.raises(UserError, match=r"use a rank from 0 to 1"):
        node_lines(big(), rank=rank)


# --- Slurm ------------------------------------------------------------------------------


def test_sbatch_asks_for_one_task_per_node_and_ranks_inside_each_task() -> None:
    script = to_sbatch(big())
    assert "#SBATCH --nodes=2\n" in script
    assert "#SBATCH --ntasks-per-node=1\n" in script
    assert "#SBATCH --gpus-per-node=8\n" in script
    assert 'scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1' in script
    assert "--kill-on-bad-exit=1" in script
    srun = script[script.index("srun ") : script.index("SRUN_PID=")]
    words = shlex.split(srun.replace("\\\n", " "))
    task = words[words.index("-c") + 1]
    # the rank reaches the task's own shell unexpanded
    assert '--node-rank "$SLURM_PROCID"' in task and "--host 0.0.0.0" in task
    assert "$SLURM_NODEID" not in script
    assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0


def test_sbatch_uses_the_profiles_interpreter_unless_told() -> None:
    assert "exec /opt/sgl/bin/python -m" in to_sbatch(big(sglang_python="/opt/sgl/bin/python"))
    assert "exec python3 -m" in to_sbatch(big())
    assert "exec /x/py -m" in to_sbatch(big(sglang_python="/opt/p"), python="/x/py")


def test_sbatch_never_holds_a_secret_value() -> None:
    script = to_sbatch(big())
    assert ': "${SGLANG_API_KEY:?set SGLANG_API_KEY}"' in script


def test_tp_pp_that_do_not_split_over_the_nodes_is_refused() -> None:
    with pytest.raises(UserError, match=r"do not split over 2 nodes"):
        to_sbatch(big(flags={"tp_size": 3}))


# --- LeaderWorkerSet --------------------------------------------------------------------


def lws_docs(profile: Profile, **kw: Any) -> list[dict[str, Any]]:
    return list(yaml.safe_load_all(to_lws(profile, **kw)))


@pytest.mark.parametrize(
    "profile",
    [
        big(),
        big(nodes=4, flags={"tp_size": 8, "pp_size": 4, "port": 8000}, secrets={}, env={}),
        big(name="Odd_Name.v2", flags={"tp_size": 16, "dist_init_addr": "10.0.0.1:5000"}),
    ],
    ids=["tp16", "pp4", "odd-name"],
)
def test_lws_export_passes_the_crds_schema(
    lws_validator: jsonschema.Draft7Validator, profile: Profile
) -> None:
    lws, service = lws_docs(profile)
    errors = [e.message for e in lws_validator.iter_errors(lws)]
    assert errors == []
    assert lws["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == profile.nodes
    assert service["kind"] == "Service"
    assert (
        service["spec"]["selector"]["leaderworkerset.sigs.k8s.io/name"] == lws["metadata"]["name"]
    )


def test_the_schema_check_refuses_a_misspelt_field(
    lws_validator: jsonschema.Draft7Validator,
) -> None:
    lws, _ = lws_docs(big())
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    leader["readinesProbe"] = leader.pop("readinessProbe")
    assert any("readinesProbe" in e.message for e in lws_validator.iter_errors(lws))


def test_lws_args_use_kubernetes_references_never_shell_ones() -> None:
    lws, _ = lws_docs(big(flags={"tp_size": 16, "served_model_name": "a$(B)"}))
    tmpl = lws["spec"]["leaderWorkerTemplate"]
    for pod in (tmpl["leaderTemplate"], tmpl["workerTemplate"]):
        [c] = pod["spec"]["containers"]
        args = c["args"]
        assert args[args.index("--nnodes") + 1] == "$(LWS_GROUP_SIZE)"
        assert args[args.index("--node-rank") + 1] == "$(LWS_WORKER_INDEX)"
        assert args[args.index("--dist-init-addr") + 1] == "$(LWS_LEADER_ADDRESS):20000"
        assert args[args.index("--api-key") + 1] == "$(SGLANG_API_KEY)"
        # a literal $( in a value is escaped so Kubernetes leaves it alone
        assert args[args.index("--served-model-name") + 1] == "a$$(B)"
        assert not any("$SLURM" in a or "${" in a or a.startswith("$L") for a in args)
        assert c["resources"]["limits"]["nvidia.com/gpu"] == "8"
        assert c["volumeMounts"] == [{"name": "dshm", "mountPath": "/dev/shm"}]
        assert pod["spec"]["volumes"][0]["emptyDir"]["medium"] == "Memory"
        secret = next(e for e in c["env"] if e["name"] == "SGLANG_API_KEY")
        assert (
            "value" not in secret and secret["valueFrom"]["secretKeyRef"]["key"] == "SGLANG_API_KEY"
        )
    leader = tmpl["leaderTemplate"]["spec"]["containers"][0]
    assert leader["readinessProbe"]["httpGet"] == {"path": "/health", "port": 30000}
    assert "readinessProbe" not in tmpl["workerTemplate"]["spec"]["containers"][0]


def test_lws_image_defaults_and_is_checked() -> None:
    lws, _ = lws_docs(big())
    assert (
        lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["image"]
        == DEFAULT_IMAGE
    )
    lws, _ = lws_docs(big(), image="registry.example.com:5000/team/sglang:v1@sha256:" + "a" * 64)
    for bad in ["sglang\nimage: evil", "", "team/UPPER", "a b", "x:" + "1" * 200]:
        with pytest.raises(UserError, match=r"is not a container image name"):
            check_image(bad)


# --- SkyPilot ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "profile",
    [big(), big(nodes=4, flags={"tp_size": 32}, secrets={}, gpus=None)],
    ids=["tp16", "tp32"],
)
def test_skypilot_export_passes_skypilots_task_schema(
    sky_validators: tuple[Any, Any], profile: Profile
) -> None:
    if profile.gpus is None:
        from sglaunch.profiles.profile import GpuSelection

        profile.gpus = GpuSelection(preset="A100-80GBx8")
    task_v, res_v = sky_validators
    task = yaml.safe_load(to_skypilot(profile))
    assert [e.message for e in task_v.iter_errors(task)] == []
    assert [e.message for e in res_v.iter_errors(task["resources"])] == []
    assert task["num_nodes"] == profile.nodes
    assert task["resources"]["accelerators"].endswith(":8")
    assert '--node-rank "$SKYPILOT_NODE_RANK"' in task["run"]
    assert 'echo "$SKYPILOT_NODE_IPS" | head -n1' in task["run"]


def test_skypilot_schema_check_refuses_an_unknown_key(sky_validators: tuple[Any, Any]) -> None:
    task_v, _ = sky_validators
    task = yaml.safe_load(to_skypilot(big()))
    task["num_node"] = task.pop("num_nodes")
    assert list(task_v.iter_errors(task))


def test_skypilot_secrets_are_names_only() -> None:
    text = to_skypilot(big())
    task = yaml.safe_load(text)
    assert task["secrets"] == {"SGLANG_API_KEY": None}
    assert task["envs"]["NCCL_SOCKET_IFNAME"] == "eth0"


# --- single-node profiles ---------------------------------------------------------------


@pytest.mark.parametrize("render", [to_sbatch, to_lws, to_skypilot, node_lines])
def test_a_single_node_profile_is_refused_with_the_way_out(render: Any) -> None:
    with pytest.raises(UserError) as exc:
        render(big(nodes=1))
    assert "nodes = 1" in exc.value.message and "nodes = 2" in exc.value.message
