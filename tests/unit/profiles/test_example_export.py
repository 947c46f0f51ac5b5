"""A bundled example stands for the model it mirrors: launches and exports name that model's
hub id, while the checks still read the bundled config."""

from __future__ import annotations

import pytest
import yaml

from sglaunch.examples import EXAMPLE_REPOS, EXAMPLES, example_dir
from sglaunch.facts.model import load_model_facts
from sglaunch.flags.schema import bundled_schema
from sglaunch.profiles import Profile, to_command, to_yaml
from sglaunch.session import LaunchSession


def test_every_example_records_the_model_it_mirrors() -> None:
    assert set(EXAMPLE_REPOS) == set(EXAMPLES)
    assert all("/" in repo and not repo.startswith("/") for repo in EXAMPLE_REPOS.values())


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_exports_and_the_launch_name_the_hub_id_not_the_checkout(name: str) -> None:
    repo = EXAMPLE_REPOS[name]
    folder = str(example_dir(name))
    profile = Profile(name="ex", model=f"example:{name}", flags={"tp_size": 2})
    exported = yaml.safe_load(to_yaml(profile).text)
    assert exported["model-path"] == repo
    command = to_command(profile)
    assert f"--model-path {repo}" in command and folder not in command

    session = LaunchSession.from_profile(profile, bundled_schema())
    session.model_loaded(f"example:{name}", load_model_facts(f"example:{name}"))
    spec = session.launch_spec({})
    assert spec.argv[:2] == ("--model-path", repo)
    preview = session.command_line(display=True)
    assert f"--model-path {repo}" in preview and folder not in preview
    # the checks read the bundled config: sglang's check gets the folder it can read
    assert session.argv()[:2] == ["--model-path", folder]
    assert session.model is not None and session.model.source == f"example:{name}"
    assert session.to_profile("ex").model == f"example:{name}"  # the profile keeps its source
