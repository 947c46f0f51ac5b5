"""Start the TUI with the real collaborators: NVML, the model loader, sglang's oracle, the runtime."""

from __future__ import annotations

import os

from sglaunch.examples import DEFAULT_EXAMPLE
from sglaunch.exitcodes import ExitCode


def run_tui(
    *,
    model: str | None = None,
    profile: str | None = None,
    gpu: str | None = None,
    sglang_python: str | None = None,
) -> int:
    from sglaunch.facts.gpu import probe_gpus
    from sglaunch.facts.model import hf_cache_dirs, load_model_facts
    from sglaunch.flags.schema import bundled_schema
    from tui.app import SglaunchApp
    from tui.collaborators import Collaborators

    collab = Collaborators(
        gpu_probe=probe_gpus,
        model_loader=load_model_facts,
        hf_cache_dirs=tuple(hf_cache_dirs(os.environ)),
    )
    try:
        from sglaunch.oracle.client import Oracle
        from sglaunch.oracle.findings import oracle_findings
        from sglaunch.oracle.schema_cache import load_flag_schema

        collab.oracle = Oracle(python=sglang_python)
        collab.oracle_findings = oracle_findings
        collab.schema_loader = lambda: load_flag_schema(sglang_python).schema
    except ImportError:
        pass
    try:
        from sglaunch.runtime.launch import ServerFactory

        collab.server_factory = ServerFactory()
    except ImportError:
        pass
    app = SglaunchApp(
        schema=bundled_schema(),
        collaborators=collab,
        model=model or f"example:{DEFAULT_EXAMPLE}",
        gpu_spec=gpu,
    )
    result = app.run()
    return int(result if isinstance(result, int) else ExitCode.OK)
