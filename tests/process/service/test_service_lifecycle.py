"""The oracle service's life and faults, with a stand-in worker (no sglang needed).

Stale sockets, unsafe folders and sockets, the idle exit, a client that keeps it
alive, what reaches the worker (cwd, environment), malformed requests, and a
service that does not answer.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
from pathlib import Path
from typing import Any

import pytest

from sglaunch.oracle.ipc import (
    Channel,
    ServicePaths,
    ServiceRefused,
    check_private_dir,
    check_private_socket,
    idle_timeout,
)
from sglaunch.oracle.service_admin import list_services, stop_services
from sglaunch.oracle.service_client import ServiceOracle, connect
from tests.support.processes import alive, wait_for, wait_gone
from tests.support.service import H100X2, live_service_pids, service_processes


def started(python: str, folder: Path, **kw: float) -> ServiceOracle:
    oracle = ServiceOracle(python, folder=folder, **kw)
    status = oracle.start()
    assert status.available, status.reason
    return oracle


def ask_ok(oracle: ServiceOracle, *argv: str, env: dict[str, str] | None = None) -> dict:
    answer = oracle.resolve(list(argv), env or {}, H100X2)
    assert answer.ok and answer.resolved is not None, answer.fault
    return answer.resolved


def test_first_use_starts_one_service_and_the_next_client_reuses_it(
    fake_python: str, folder: Path
) -> None:
    first = started(fake_python, folder)
    second = started(fake_python, folder)
    try:
        assert first.service_pid is not None and first.service_pid == second.service_pid
        assert service_processes(folder) == [first.service_pid]
        assert first.status.sglang_version == "0.5.23"
        # both answered by the one worker
        assert ask_ok(first, "--a")["worker_pid"] == ask_ok(second, "--b")["worker_pid"]
        paths = ServicePaths.for_python(fake_python, folder)
        assert paths.socket.exists() and oct(paths.socket.stat().st_mode & 0o777) == "0o600"
    finally:
        first.close()
        second.close()


def test_a_stale_socket_is_replaced(fake_python: str, folder: Path) -> None:
    paths = ServicePaths.for_python(fake_python, folder)
    # a socket nobody listens on, as a crashed service leaves it
    leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    leftover.bind(str(paths.socket))
    leftover.close()
    paths.socket.chmod(0o600)
    stale_ino = paths.socket.stat().st_ino
    oracle = started(fake_python, folder)
    try:
        assert paths.socket.stat().st_ino != stale_ino
        assert ask_ok(oracle, "--x")["argv"] == ["--x"]
    finally:
        oracle.close()


def test_a_killed_service_is_replaced_by_the_next_request(fake_python: str, folder: Path) -> None:
    oracle = started(fake_python, folder)
    try:
        pid, worker = oracle.service_pid, oracle.worker_pid
        assert pid and worker
        os.kill(pid, signal.SIGKILL)
        assert wait_gone([pid, worker]) == set()  # its worker does not outlive it
        resolved = ask_ok(oracle, "--again")
        assert oracle.service_pid not in (None, pid)
        assert resolved["worker_pid"] != worker
    finally:
        oracle.close()


def test_the_service_exits_when_idle_and_takes_its_worker(fake_python: str, folder: Path) -> None:
    oracle = started(fake_python, folder, idle_timeout_s=1.0)
    pid, worker = oracle.service_pid, oracle.worker_pid
    assert pid and worker
    ask_ok(oracle, "--x")
    oracle.close()
    assert wait_gone([pid, worker], timeout=30) == set()
    assert wait_for(lambda: list_services(folder) == [])
    assert not ServicePaths.for_python(fake_python, folder).socket.exists()


def test_a_connected_client_keeps_the_service(fake_python: str, folder: Path) -> None:
    oracle = started(fake_python, folder, idle_timeout_s=0.3)
    try:
        pid = oracle.service_pid
        # four idle timeouts pass with the connection open
        assert not wait_for(lambda: not alive(pid), timeout=1.5)
        ask_ok(oracle, "--still-here")
        assert oracle.service_pid == pid
    finally:
        oracle.close()
    assert wait_gone([pid], timeout=30) == set()


def test_requests_carry_the_clients_cwd_and_environment_but_not_the_first_clients(
    fake_python: str, folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLANG_FIRST_CLIENT_ONLY", "1")
    first = started(fake_python, folder)  # the service inherits this process's environment
    first.close()
    monkeypatch.delenv("SGLANG_FIRST_CLIENT_ONLY")
    monkeypatch.setenv("SGLANG_FROM_SHELL", "shell")
    monkeypatch.chdir(tmp_path)
    oracle = started(fake_python, folder)
    try:
        show = "SGLANG_FIRST_CLIENT_ONLY,SGLANG_FROM_SHELL,SGLANG_ASKED"
        resolved = ask_ok(
            oracle, "--model-path", "rel", env={"FAKE_WORKER_SHOW": show, "SGLANG_ASKED": "yes"}
        )
    finally:
        oracle.close()
    assert resolved["cwd"] == str(tmp_path)
    assert resolved["env"] == {
        "SGLANG_FIRST_CLIENT_ONLY": None,
        "SGLANG_FROM_SHELL": "shell",
        "SGLANG_ASKED": "yes",
    }
    # nothing of the first client's shell reached the shared worker
    assert resolved["inherited"]["SGLANG_FIRST_CLIENT_ONLY"] is None


@pytest.mark.parametrize(
    "request_line",
    [
        b"not json\n",
        b"[1, 2]\n",
        b'{"op": "launch-missiles"}\n',
        b'{"op": "resolve", "argv": "--tp 2", "gpu": {}}\n',
        b'{"op": "resolve", "argv": [], "gpu": {"devices": [{"capability": "x"}]}}\n',
        b'{"op": "resolve", "argv": [], "gpu": {}, "timeout": "soon"}\n',
    ],
)
def test_malformed_requests_do_not_hurt_the_service(
    fake_python: str, folder: Path, request_line: bytes
) -> None:
    oracle = started(fake_python, folder)
    try:
        paths = ServicePaths.for_python(fake_python, folder)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(str(paths.socket))
        sock.sendall(request_line)
        sock.settimeout(10)
        # an error answer or a closed connection, never a dead service
        with contextlib.suppress(OSError):
            sock.recv(1 << 16)
        sock.close()
        assert ask_ok(oracle, "--ok")["argv"] == ["--ok"]
        assert live_service_pids(folder) == {oracle.service_pid}
    finally:
        oracle.close()


def test_a_folder_with_the_wrong_mode_is_refused(fake_python: str, folder: Path) -> None:
    folder.chmod(0o755)
    oracle = ServiceOracle(fake_python, folder=folder)
    status = oracle.start()
    assert not status.available
    assert f"{folder} has mode 0755" in status.reason and f"chmod 700 {folder}" in status.reason
    assert "\n" not in status.reason
    assert list(folder.iterdir()) == []  # nothing was created, nothing started
    assert service_processes(folder) == []
    answer = oracle.resolve(["--x"], {}, H100X2)
    assert not answer.ok and answer.fault == status.reason


def test_a_socket_with_the_wrong_mode_is_refused(fake_python: str, folder: Path) -> None:
    owner = started(fake_python, folder)
    try:
        paths = ServicePaths.for_python(fake_python, folder)
        paths.socket.chmod(0o666)
        status = ServiceOracle(fake_python, folder=folder).start()
        assert not status.available and "has mode 0666; it must be 0600" in status.reason
    finally:
        owner.close()


def test_something_else_at_the_socket_path_is_refused(fake_python: str, folder: Path) -> None:
    paths = ServicePaths.for_python(fake_python, folder)
    paths.socket.write_text("not a socket")
    status = ServiceOracle(fake_python, folder=folder).start()
    assert not status.available and "is not a socket; remove it" in status.reason
    assert service_processes(folder) == []


DIR = Path("/run/user/1000/sglaunch")
SOCK = DIR / "oracle-x.sock"


@pytest.mark.parametrize(
    ("checker", "path", "mode", "uid", "problem"),
    [
        (check_private_dir, DIR, 0o040700, 1000, None),
        (check_private_dir, DIR, 0o040750, 1000, "has mode 0750"),
        (check_private_dir, DIR, 0o040777, 1000, "has mode 0777"),
        (check_private_dir, DIR, 0o040700, 0, "belongs to uid 0, not to you (uid 1000)"),
        (check_private_dir, DIR, 0o120777, 1000, "is a symbolic link"),
        (check_private_dir, DIR, 0o100600, 1000, "is not a folder"),
        (check_private_socket, SOCK, 0o140600, 1000, None),
        (check_private_socket, SOCK, 0o140660, 1000, "has mode 0660"),
        (check_private_socket, SOCK, 0o140600, 1001, "belongs to uid 1001"),
        (check_private_socket, SOCK, 0o100600, 1000, "is not a socket"),
    ],
)
def test_the_folder_and_socket_checks(
    checker: Any, path: Path, mode: int, uid: int, problem: str | None
) -> None:
    st = os.stat_result((mode, 0, 0, 1, uid, 0, 0, 0, 0, 0))
    if problem is None:
        checker(path, st, 1000)
        return
    with pytest.raises(ServiceRefused, match=re.escape(problem)):
        checker(path, st, 1000)


def test_a_socket_path_over_the_limit_is_refused(fake_python: str, tmp_path: Path) -> None:
    deep = tmp_path / ("d" * 120)
    with pytest.raises(ServiceRefused, match="over the 107 a Unix socket allows"):
        ServicePaths.for_python(fake_python, deep)


@pytest.mark.parametrize("raw", ["0", "-5", "soon", "nan", "1e9"])
def test_a_bad_idle_timeout_is_one_clear_line(raw: str) -> None:
    with pytest.raises(ServiceRefused, match="SGLAUNCH_ORACLE_IDLE_TIMEOUT="):
        idle_timeout({"SGLAUNCH_ORACLE_IDLE_TIMEOUT": raw})
    assert idle_timeout({"SGLAUNCH_ORACLE_IDLE_TIMEOUT": "2.5"}) == 2.5
    assert idle_timeout({}) == 600.0


def test_a_service_that_does_not_answer_is_stopped_by_force(fake_python: str, folder: Path) -> None:
    oracle = started(fake_python, folder)
    pid, worker = oracle.service_pid, oracle.worker_pid
    oracle.close()
    assert pid and worker
    os.kill(pid, signal.SIGSTOP)
    try:
        [info] = list_services(folder)
        assert info.state == "not answering" and info.pid == pid
        [(_, outcome)] = stop_services(folder=folder, wait=1.0)
        assert outcome == "killed"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    assert wait_gone([pid, worker]) == set()


def test_the_factory_gives_either_kind(fake_python: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from sglaunch.oracle.client import Oracle

    assert isinstance(connect(fake_python), ServiceOracle)
    assert isinstance(connect(fake_python, use_service=False), Oracle)
    monkeypatch.setenv("SGLAUNCH_NO_ORACLE_SERVICE", "1")
    assert isinstance(connect(fake_python), Oracle)


def test_channel_refuses_oversized_and_non_object_messages() -> None:
    a, b = socket.socketpair()
    try:
        Channel(a).send({"x": 1})
        assert Channel(b).receive(None) == {"x": 1}
        a.sendall(b"[1]\n")
        with pytest.raises(Exception, match="not a JSON object"):
            Channel(b).receive(None)
    finally:
        a.close()
        b.close()


def test_a_new_sglang_in_the_interpreter_gets_a_new_worker(tmp_path: Path, folder: Path) -> None:
    """The service is per interpreter and version: reinstalling sglang under it (pip
    replaces the dist-info) restarts the worker on the next request."""
    import sys

    from tests.process.service.conftest import FAKE_WORKER

    site = tmp_path / "site"
    dist = site / "sglang-0.5.23.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.23\n")
    python = tmp_path / "python"
    python.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = "-c" ]; then PYTHONPATH="{site}" exec "{sys.executable}" "$@"; fi\n'
        f'exec "{sys.executable}" "{FAKE_WORKER}" "$@"\n'
    )
    python.chmod(0o755)
    oracle = started(str(python), folder)
    try:
        worker = ask_ok(oracle, "--a")["worker_pid"]
        assert ask_ok(oracle, "--b")["worker_pid"] == worker  # nothing changed: the same worker
        newer = site / "sglang-0.5.24.dist-info"
        dist.rename(newer)
        (newer / "METADATA").write_text("Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.24\n")
        assert wait_for(lambda: ask_ok(oracle, "--c")["worker_pid"] != worker, timeout=10)
        assert wait_gone([worker]) == set()
        assert live_service_pids(folder) == {oracle.service_pid}
    finally:
        oracle.close()
