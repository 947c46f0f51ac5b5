"""Start the TUI with the real collaborators: NVML, the model loader, sglang's oracle, the runtime."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from sglaunch.examples import DEFAULT_EXAMPLE
from sglaunch.exitcodes import ExitCode

if TYPE_CHECKING:
    from sglaunch.tui.app import SglaunchApp


def run_tui(
    *,
    model: str | None = None,
    profile: str | None = None,
    gpu: str | None = None,
    sglang_python: str | None = None,
) -> int:
    if profile is not None:
        from sglaunch.profiles import ProfileStore

        ProfileStore(None).load(profile)  # a missing or broken profile is a one-line error now
    app = build_app(model=model, profile=profile, gpu=gpu, sglang_python=sglang_python)
    result = app.run()
    if app.return_code:  # an unhandled exception stopped the app; Textual printed it
        return int(app.return_code)
    return int(result if isinstance(result, int) else ExitCode.OK)


def build_app(
    *,
    model: str | None = None,
    profile: str | None = None,
    gpu: str | None = None,
    sglang_python: str | None = None,
    with_oracle: bool = True,
) -> SglaunchApp:
    from sglaunch.facts.gpu import probe_gpus
    from sglaunch.facts.model import hf_cache_dirs, load_model_facts
    from sglaunch.flags.schema import bundled_schema
    from sglaunch.tui.app import SglaunchApp
    from sglaunch.tui.collaborators import Collaborators

    collab = Collaborators(
        gpu_probe=probe_gpus,
        model_loader=load_model_facts,
        hf_cache_dirs=tuple(hf_cache_dirs(os.environ)),
    )
    try:
        if not with_oracle:
            raise ImportError("oracle disabled")
        from sglaunch.oracle.client import Oracle
        from sglaunch.oracle.schema_cache import load_flag_schema

        collab.oracle = Oracle(python=sglang_python)
        collab.schema_loader = lambda: load_flag_schema(sglang_python).schema
    except ImportError:
        pass
    from sglaunch.oracle.interpreter import find_sglang_python
    from sglaunch.runtime import Monitor

    collab.server_factory = lambda spec: Monitor(spec, startup_timeout=1800.0)
    found = find_sglang_python(sglang_python)
    # the managed CPU environment can check flags but not serve: never launch with it
    collab.launch_python = found.path if found.source != "managed" else None
    app = SglaunchApp(
        schema=bundled_schema(),
        collaborators=collab,
        model=model or (None if profile else f"example:{DEFAULT_EXAMPLE}"),
        gpu_spec=gpu,
        profile=profile,
    )
    return app
