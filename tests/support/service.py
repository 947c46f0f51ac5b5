"""Helpers for the service tests: the H100 facts, and finding the service processes."""

from __future__ import annotations

from pathlib import Path

import psutil

from sglaunch.facts.presets import parse_gpu_spec
from sglaunch.oracle.service_admin import list_services

H100X2 = parse_gpu_spec("H100x2")


def service_processes(folder: Path) -> list[int]:
    """Every live oracle service process that serves `folder`."""
    pids = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmd = proc.info["cmdline"] or []
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        if "sglaunch.oracle.service" in cmd and str(folder) in cmd:
            pids.append(proc.pid)
    return pids


def live_service_pids(folder: Path) -> set[int]:
    return {s.pid for s in list_services(folder) if s.pid is not None and s.state != "stale"}
