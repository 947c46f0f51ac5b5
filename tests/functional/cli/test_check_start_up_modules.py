"""What a `check` does not load on its way to a verdict: the logging package (only to quiet
transformers), the TOML reader (profiles only) and importlib.resources (the catalogue is a
plain folder), each a few milliseconds of a process that must answer in 0.2 s."""

from __future__ import annotations

import json
import subprocess
import sys

NOT_ON_CHECK = {"logging", "tomllib", "importlib.resources"}


def test_a_check_and_its_catalogue_load_no_logging_toml_or_resources() -> None:
    code = (
        "import json, sys\n"
        "from sglaunch.cli.main import main\n"
        "rc = main(['check', '--model', 'example:minicpm-sala', '--gpu', 'H100x2', "
        "'--no-oracle', '--', '--attn-dp-size', '2', '--tp-size', '2'])\n"
        # what reads sglang's answer (the oracle tier) loads the catalogue
        "from sglaunch.catalogue import catalogue\n"
        "assert catalogue().sites\n"
        "print(json.dumps([rc, sorted(sys.modules)]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    rc, loaded = json.loads(done.stdout.splitlines()[-1])
    assert rc == 1, done.stderr  # the MiniCPM DP-attention error, from the built-in rules
    assert "minicpm-dp-attention" in done.stderr
    assert not NOT_ON_CHECK & set(loaded), sorted(NOT_ON_CHECK & set(loaded))
