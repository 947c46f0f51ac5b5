"""What the App needs from the outside world.

The App takes these in its constructor, so tests and snapshots pass fakes and never touch
NVML, sglang, the network or a real server. `tui.launch` wires the real ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from sglaunch.release import FlagFacts
    from sglaunch.session import LaunchSession
    from sglaunch.tui.css_cache import CssRulesCache
    from sglaunch.tui.server import ServerFactory
    from sglaunch.validators.facts import GpuFacts, ModelFacts
    from sglaunch.validators.findings import Finding
    from sglaunch.verdict import OracleClient


class ModelLoader(Protocol):
    """sglaunch.facts.model.load_model_facts, or a fake."""

    def __call__(self, source: str, *, sglang_version: str | None = None) -> ModelFacts: ...


@dataclass
class Collaborators:
    gpu_probe: Callable[[], GpuFacts]
    model_loader: ModelLoader
    # sglang's own resolution: sglaunch.oracle.client.Oracle, the shared service, or a fake
    oracle: OracleClient | None = None
    # the runtime: LaunchSpec -> sglaunch.runtime.Monitor (tests add the stand-in server)
    server_factory: ServerFactory | None = None
    # the interpreter that runs sglang for a launch (the oracle's, when found)
    launch_python: str | None = None
    # the installed sglang's flags (with help text) and the release the checks are for,
    # read off the event loop: named release -> sglaunch.release.FlagFacts
    flag_facts: Callable[[str | None], FlagFacts] | None = None
    profile_dir: Path | None = None
    # where the palette's multi-node exports are written; None: the current directory
    export_dir: Path | None = None
    hf_cache_dirs: Sequence[Path] = field(default_factory=tuple)
    # the host before ctrl+l launches (sglaunch.host.host_findings); None: not checked
    host_check: Callable[[LaunchSession], list[Finding]] | None = None
    # Textual's parsed CSS kept between runs (tui/css_cache.py); None: parsed every start
    css_rules: CssRulesCache | None = None
