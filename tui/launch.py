"""Start the TUI with the real collaborators: NVML, the model loader, sglang's oracle, the runtime."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from sglaunch.errors import UserError
from sglaunch.examples import DEFAULT_EXAMPLE
from sglaunch.exitcodes import ExitCode
from sglaunch.facts.hf_cache import hf_cache_dirs
from sglaunch.flags.schema import bundled_schema
from sglaunch.oracle.interpreter import find_sglang_python

if TYPE_CHECKING:
    from sglaunch.release import FlagFacts
    from sglaunch.runtime import LaunchSpec, Monitor
    from sglaunch.runtime.attach_target import AttachTarget
    from sglaunch.session import LaunchSession
    from sglaunch.tui.app import SglaunchApp
    from sglaunch.validators.facts import GpuFacts, ModelFacts
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
    from sglaunch.release import parse_named

    parse_named(sglang_version)  # a release sglaunch has no rules for is a one-line error now
    if profile is not None:
        from sglaunch.profiles import ProfileStore  # only to open one

        ProfileStore(None).load(profile)  # a missing or broken profile is a one-line error now
    need_terminal()
    resume = pause_collection()
    try:
        app = build_app(
            model=model,
            profile=profile,
            gpu=gpu,
            sglang_python=sglang_python,
            sglang_version=sglang_version,
            attach=attach,
            no_oracle_service=no_oracle_service,
            on_first_frame=resume,
        )
        result = app.run()
    finally:
        resume()  # an app that ended before its first frame
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


def pause_collection() -> Callable[[], None]:
    """Cyclic garbage collection off while the TUI starts; call the result to turn it on.

    The start-up makes a few hundred thousand objects (Textual's and sglaunch's modules, the
    widgets, the flag schema) that live as long as the app: a collection before the first
    frame only walks them, ~12% of that frame's CPU (bench/startup.py). Turned back on once,
    with them frozen, so that later collections skip them too.
    """
    was_on = gc.isenabled()
    gc.disable()

    def resume() -> None:
        if was_on and not gc.isenabled():
            gc.freeze()
            gc.enable()

    return resume


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
    on_first_frame: Callable[[], None] | None = None,
) -> SglaunchApp:
    # heavy: textual, only after the terminal check above
    from sglaunch.tui.app import SglaunchApp
    from sglaunch.tui.collaborators import Collaborators  # heavy: textual, as above
    from sglaunch.tui.css_cache import open_cache  # heavy: textual, as above

    collab = Collaborators(
        gpu_probe=_probe_gpus,
        model_loader=_load_model_facts,
        hf_cache_dirs=tuple(hf_cache_dirs(os.environ)),
        css_rules=open_cache(),
    )
    try:
        if not with_oracle:
            raise ImportError("oracle disabled")
        # inside the try: an oracle client that cannot load leaves the TUI without one
        from sglaunch.oracle.service_client import connect

        # the shared, warm service (one per user and interpreter) unless told otherwise
        collab.oracle = connect(sglang_python, use_service=not no_oracle_service)
        collab.flag_facts = lambda named: _flag_facts(sglang_python, named)
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
        on_first_frame=on_first_frame,
    )
    return app


# NVML's and the model's readers load in the workers that call them, after the first frame


def _flag_facts(sglang_python: str | None, named: str | None) -> FlagFacts:
    from sglaunch.release import load_flag_facts

    return load_flag_facts(sglang_python, named)


def _probe_gpus() -> GpuFacts:
    from sglaunch.facts.gpu import probe_gpus

    return probe_gpus()


def _load_model_facts(source: str, *, sglang_version: str | None = None) -> ModelFacts:
    from sglaunch.facts.model import load_model_facts

    return load_model_facts(source, sglang_version=sglang_version)


def _monitor(spec: LaunchSpec) -> Monitor:
    # the runtime is imported at the first launch, not before the first frame
    from sglaunch.runtime import Monitor

    return Monitor(spec, startup_timeout=1800.0)


def _host_findings(session: LaunchSession) -> list[Finding]:
    # the host's checks are read at ctrl+l: their rule modules stay out of the first frame
    from sglaunch.host import host_findings

    return host_findings(session)
