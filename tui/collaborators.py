"""What the App needs from the outside world, as protocols.

The App takes these in its constructor, so tests and snapshots pass fakes and
never touch NVML, sglang, the network or a real server. `tui.launch` wires the
real ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from sglaunch.validators.facts import GpuFacts, ModelFacts
from sglaunch.validators.findings import Finding


class OracleStatusLike(Protocol):
    available: bool
    reason: str
    sglang_version: str | None


class OracleAnswerLike(Protocol):
    ok: bool
    sglang_version: str | None
    changed: dict[str, Any] | None
    resolved: dict[str, Any] | None


class OracleLike(Protocol):
    """sglang's own resolution (sglaunch.oracle.client.Oracle), or a fake."""

    def start(self) -> OracleStatusLike: ...

    def resolve(self, argv: list[str], env: dict[str, str], gpu: GpuFacts) -> OracleAnswerLike: ...

    def close(self) -> None: ...


@dataclass
class Collaborators:
    gpu_probe: Callable[[], GpuFacts]
    model_loader: Callable[[str], ModelFacts]
    oracle: OracleLike | None = None
    # answer -> findings (sglaunch.oracle.findings.oracle_findings for the real oracle)
    oracle_findings: Callable[[Any], list[Finding]] | None = None
    # the runtime: LaunchSpec -> sglaunch.runtime.Monitor (tests add the stand-in server)
    server_factory: Callable[[Any], Any] | None = None
    # the interpreter that runs sglang for a launch (the oracle's, when found)
    launch_python: str | None = None
    # the installed sglang's own flag schema (with help text), read off the event loop
    schema_loader: Callable[[], Any] | None = None
    profile_dir: Path | None = None
    hf_cache_dirs: Sequence[Path] = field(default_factory=tuple)
