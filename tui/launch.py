"""Start the TUI with the real collaborators: NVML, the model loader, sglang's oracle, the runtime."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from sglaunch.errors import UserError
from sglaunch.examples import DEFAULT_EXAMPLE
from sglaunch.exitcodes import ExitCode
from sglaunch.facts import gpu as gpu_facts
from sglaunch.facts.model import hf_cache_dirs, load_model_facts
from sglaunch.flags.schema import bundled_schema
from sglaunch.oracle.interpreter import find_sglang_python
from sglaunch.profiles import ProfileStore
from sglaunch.release import load_flag_facts, parse_named

if TYPE_CHECKING:
    from sglaunch.runtime import LaunchSpec, Monitor
    from sglaunch.runtime.attach_target import AttachTarget
    from sglaunch.session import LaunchSession
    from sglaunch.tui.app import SglaunchApp
    from sglaunch.validators.findings import Finding


def run_tui(
    *,
    model: str | None = None,
    profile: str | None = None,
    gpu: str | None = None,
    sglang_python: str | None = None,
    sglang_version: str | None = None,
    attach: AttachTarget | None = None,
    no_oracle_service: bool = False,
) -> int:
    parse_named(sglang_version)  # a release sglaunch has no rules for is a one-line error now
    if profile is not None:
        ProfileStore(None).load(profile)  # a missing or broken profile is a one-line error now
    need_terminal()
    app = build_app(
        model=model,
        profile=profile,
        gpu=gpu,
        sglang_python=sglang_python,
        sglang_version=sglang_version,
        attach=attach,
        no_oracle_service=no_oracle_service,
    )
    result = app.run()
    if app.return_code:  # an unhandled exception stopped the app; Textual printed it
        return int(app.return_code)
    return int(result if isinstance(result, int) else ExitCode.OK)


def need_terminal() -> None:
    """`sglaunch > out.txt` or `sglaunch | cat`: a TUI there writes escape codes into the
    file and spins on input nobody can give; refuse before Textual is even imported."""
    for name, stream in (("stdout", sys.stdout), ("stdin", sys.stdin)):
        try:
            tty = stream is not None and stream.isatty()
        except (AttributeError, ValueError):  # closed, or replaced by something without a fd
            tty = False
        if not tty:
            raise UserError(
                f"the TUI needs a terminal ({name} is not a tty); "
                "use `sglaunch check …` for headless output"
            )


def build_app(
    *,
    model: str | None = None,
    profile: str | None = None,
    gpu: str | None = None,
    sglang_python: str | None = None,
    with_oracle: bool = True,
    sglang_version: str | None = None,
    attach: AttachTarget | None = None,
    no_oracle_service: bool = False,
) -> SglaunchApp:
    # heavy: textual, only after the terminal check above
    from sglaunch.tui.app import SglaunchApp
    from sglaunch.tui.collaborators import Collaborators  # heavy: textual, as above

    collab = Collaborators(
        gpu_probe=gpu_facts.probe_gpus,
        model_loader=load_model_facts,
        hf_cache_dirs=tuple(hf_cache_dirs(os.environ)),
    )
    try:
        if not with_oracle:
            raise ImportError("oracle disabled")
        # inside the try: an oracle client that cannot load leaves the TUI without one
        from sglaunch.oracle.service_client import connect

        # the shared, warm service (one per user and interpreter) unless told otherwise
        collab.oracle = connect(sglang_python, use_service=not no_oracle_service)
        collab.flag_facts = lambda named: load_flag_facts(sglang_python, named)
    except ImportError:
        pass

    collab.server_factory = _monitor

    collab.host_check = _host_findings
    found = find_sglang_python(sglang_python)
    # the interpreter whose sglang is checked launches too (sglaunch/program.py's rule); a
    # CPU-only one from `oracle setup` is named as such in the title and the launch dialog
    collab.launch_python = found.path
    app = SglaunchApp(
        schema=bundled_schema(),
        collaborators=collab,
        # attaching shows the server, not an example launch to edit
        model=model or (None if profile or attach else f"example:{DEFAULT_EXAMPLE}"),
        gpu_spec=gpu,
        profile=profile,
        sglang_version=sglang_version,
        attach=attach,
    )
    return app


def _monitor(spec: LaunchSpec) -> Monitor:
    # the runtime is imported at the first launch, not before the first frame
    from sglaunch.runtime import Monitor

    return Monitor(spec, startup_timeout=1800.0)


def _host_findings(session: LaunchSession) -> list[Finding]:
    # the host's checks are read at ctrl+l: their rule modules stay out of the first frame
    from sglaunch.host import host_findings

    return host_findings(session)
