"""What `sglaunch check` loads on its way to a verdict: not the profile, YAML and TOML-writing
stack it does not use (the session reads one bound from the profiles package)."""

from __future__ import annotations

import json
import subprocess
import sys

UNUSED_ON_CHECK = {
    "yaml",
    "sglaunch.profiles.sglang_yaml",
    "sglaunch.profiles.store",
    "sglaunch.profiles.command",
    "sglaunch.profiles.tomlform",
    "sglaunch.profiles.argvform",
}


def _loaded_by_check(*flags: str) -> set[str]:
    code = (
        "import json, sys\n"
        "from sglaunch.cli.main import main\n"
        "rc = main(['check', '--model', 'example:minicpm-sala', '--gpu', 'H100x8', "
        f"'--no-oracle', '--', *{list(flags)!r}])\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_check_loads_no_profile_stack() -> None:
    loaded = _loaded_by_check("--tp", "2", "--nnodes", "2")
    assert "sglaunch.profiles" in loaded  # the session's node bound comes from there
    assert not loaded & UNUSED_ON_CHECK, sorted(loaded & UNUSED_ON_CHECK)


def test_the_profiles_package_still_offers_every_name() -> None:
    code = (
        "import sglaunch.profiles as p\n"
        "missing = [n for n in p.__all__ if getattr(p, n, None) is None]\n"
        "print(missing)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "[]", done.stderr
