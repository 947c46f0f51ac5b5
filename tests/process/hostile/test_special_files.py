"""Class "special files": sglaunch writes only to a regular file or a new path, and reads
nothing but regular files; what it refuses it names (an export onto /dev/full replaced
the device; importing /etc/shadow echoed its first line)."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from tests.support.hostile import (
    GOOD_PROFILE,
    Case,
    assert_outcome,
    run_case,
    run_cli,
    saved_profile,
)

MARKER = "root:$6$Sh4d0wSecretHash$:19000:0:99999:7:::"


def _export_to(target: object) -> object:
    def make(tmp: Path) -> list[str]:
        saved_profile(tmp / "home", "p", GOOD_PROFILE)
        path = target(tmp) if callable(target) else target
        return ["profiles", "export", "p", "--format", "command", "-o", str(path)]

    return make


def _fifo(tmp: Path) -> Path:
    os.mkfifo(tmp / "out.sh")
    return tmp / "out.sh"


def _link_to_fd(tmp: Path) -> Path:
    (tmp / "out.sh").symlink_to("/proc/self/fd/1")
    return tmp / "out.sh"


def _link_to_devnull(tmp: Path) -> Path:
    (tmp / "out.sh").symlink_to("/dev/null")
    return tmp / "out.sh"


def _socket(tmp: Path) -> Path:
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(tmp / "sock"))
    s.close()  # the socket file stays
    return tmp / "sock"


def _loop(tmp: Path) -> Path:
    (tmp / "a").symlink_to(tmp / "b")
    (tmp / "b").symlink_to(tmp / "a")
    return tmp / "a"


def _import(target: object) -> object:
    def make(tmp: Path) -> list[str]:
        path = target(tmp) if callable(target) else target
        return ["profiles", "import", str(path), "--name", "x"]

    return make


def _shadow_like(tmp: Path) -> Path:
    (tmp / "shadow").write_text(MARKER + "\ndaemon:*:19000:0:99999:7:::\n")
    return tmp / "shadow"


def _shadow_yaml(tmp: Path) -> Path:
    (tmp / "shadow.yaml").write_text(MARKER + "\n")
    return tmp / "shadow.yaml"


CASES = [
    Case("export-onto-fifo", _export_to(_fifo), 2, "is a FIFO (named pipe)"),
    Case("export-onto-proc-self-fd", _export_to("/proc/self/fd/1"), 2, "leads into /proc"),
    Case("export-onto-link-to-proc-fd", _export_to(_link_to_fd), 2, "leads into /proc"),
    Case("export-onto-dev-full", _export_to("/dev/full"), 2, "leads into /dev"),
    Case("export-onto-link-to-dev-null", _export_to(_link_to_devnull), 2, "leads into /dev"),
    Case("export-onto-folder", _export_to(lambda t: t), 2, "is a folder"),
    Case("export-onto-socket", _export_to(_socket), 2, "is a socket"),
    Case("export-onto-link-loop", _export_to(_loop), 2, "symlink loop"),
    Case(
        "export-into-missing-folder", _export_to(lambda t: t / "no" / "x.sh"), 2, "does not exist"
    ),
    Case("import-shadow-like-file", _import(_shadow_like), 2, "is not a profile"),
    Case("import-shadow-named-yaml", _import(_shadow_yaml), 2, "is not an sglang --config file"),
    Case("import-fifo", _import(_fifo), 2, "is a FIFO (named pipe)"),
    Case("import-socket", _import(_socket), 2, "is a socket"),
    Case("import-dev-null", _import("/dev/null"), 2, "is a character device"),
    Case("import-link-loop", _import(_loop), 2, "is a symlink loop"),
    Case("import-folder", _import(lambda t: t), 2, "is a folder"),
    Case(
        "model-is-a-fifo",
        lambda t: ["check", "--no-oracle", "--model", str(_fifo(t))],
        2,
        "is a FIFO (named pipe), not a model folder",
    ),
    Case(
        "model-is-a-link-loop",
        lambda t: ["check", "--no-oracle", "--model", str(_loop(t))],
        2,
        "is a symlink loop",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_special_files_are_refused_by_name(case: Case, tmp_path: Path) -> None:
    res = run_case(case, tmp_path)
    assert MARKER not in res.output and "Sh4d0w" not in res.output
    fifo = tmp_path / "out.sh"
    if case.id == "export-onto-fifo":
        assert stat.S_ISFIFO(fifo.lstat().st_mode)  # left as it was
    if case.id in ("export-onto-link-to-proc-fd", "export-onto-link-to-dev-null"):
        assert fifo.is_symlink()  # not replaced by a regular file


def test_an_export_through_a_link_to_a_regular_file_writes_that_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    saved_profile(home, "p", GOOD_PROFILE)
    (tmp_path / "real.sh").write_text("old")
    (tmp_path / "link.sh").symlink_to(tmp_path / "real.sh")
    res = run_cli(
        ["profiles", "export", "p", "--format", "command", "-o", "link.sh"], home=home, cwd=tmp_path
    )
    assert_outcome(res, 0, "wrote")
    assert (tmp_path / "link.sh").is_symlink()
    assert "sglang.launch_server" in (tmp_path / "real.sh").read_text()


def test_a_broken_special_profile_can_still_be_deleted(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = home / "config" / "profiles"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "pipe.toml")
    res = run_cli(["profiles", "delete", "pipe", "--yes"], home=home, cwd=tmp_path)
    assert_outcome(res, 0, "deleted profile 'pipe'")
    assert not (folder / "pipe.toml").exists()
