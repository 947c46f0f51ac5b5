"""No oracle service is started for an sglang the oracle refuses (older than 0.5.19)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from sglaunch.oracle.service_admin import list_services
from sglaunch.oracle.service_client import ServiceOracle
from tests.support.oracle_models import fake_python as stand_in
from tests.support.service import service_processes


def old_sglang(folder: Path, version: str) -> str:
    """An interpreter that is sglang `version`: the version probe gets it, and its worker
    says hello and then stays, as a real one importing sglang would."""
    hello = json.dumps({"event": "hello", "protocol": 1, "sglang_version": version})
    body = (
        'case "$1" in\n'
        f"  -c) echo {shlex.quote(version)};;\n"
        f"  *) echo {shlex.quote(hello)}; sleep 30;;\n"
        "esac"
    )
    folder.mkdir(parents=True, exist_ok=True)
    return stand_in(folder, "python", body)


def test_a_refused_sglang_gets_no_service(tmp_path: Path, folder: Path) -> None:
    python = old_sglang(tmp_path / "old", "0.5.18")
    with ServiceOracle(python, folder=folder, start_timeout=20.0) as oracle:
        status = oracle.start()
        assert not status.available
        assert status.sglang_version == "0.5.18"
        assert "needs sglang 0.5.19 or later" in status.reason
        assert list_services(folder) == []  # `oracle status` lists nothing to wait for
        assert service_processes(folder) == []


def test_a_supported_sglang_still_gets_one(tmp_path: Path, folder: Path, fake_python: str) -> None:
    # the fake worker answers the version probe with no version: the service decides
    with ServiceOracle(fake_python, folder=folder, start_timeout=20.0) as oracle:
        assert oracle.start().available
        assert [s.state for s in list_services(folder)] == ["ready"]
