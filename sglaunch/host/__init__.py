"""The host before the launch: facts read from this machine, checked by pure rules.

`sglaunch doctor`, `check` (on this machine's GPUs), `--apply` and the TUI's ctrl+l all
call `host_findings`; the collectors live in `sglaunch.host.collect`, the checks in
`sglaunch.validators.rules.host`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from sglaunch.host.collect import Collectors, collect_host_facts
from sglaunch.validators.findings import Finding
from sglaunch.validators.rules.host import HostFacts, host_checks

if TYPE_CHECKING:
    from sglaunch.session import LaunchSession

__all__ = ["Collectors", "HostFacts", "collect_host_facts", "host_findings", "session_nodes"]


def session_nodes(session: LaunchSession) -> int:
    """The machines the launch spans (1 where the session does not know of nodes)."""
    nodes = getattr(session, "nodes", 1)
    return nodes if isinstance(nodes, int) and nodes > 0 else 1


def host_findings(
    session: LaunchSession,
    *,
    environ: Mapping[str, str] | None = None,
    nodes: int | None = None,
    collectors: Collectors | None = None,
) -> list[Finding]:
    """The host findings for the launch `session` describes, read from this machine now."""
    environ = os.environ if environ is None else environ
    nodes = nodes or session_nodes(session)
    flags = session.flags
    facts = collect_host_facts(
        flags,
        environ={**environ, **session.environment()},
        python=session.launch_python,
        model=session.launch_model_path(),
        nodes=nodes,
        collectors=collectors,
    )
    return host_checks(flags, facts, nodes=nodes, source=session.model_source or "")
