"""The oracle service's rendezvous: a private folder, one socket per interpreter, JSON lines.

The folder is the user's runtime directory (`$XDG_RUNTIME_DIR/sglaunch`, else
`/tmp/sglaunch-UID`; `SGLAUNCH_HOME/run` when SGLAUNCH_HOME is set;
`SGLAUNCH_RUNTIME_DIR` overrides all three). It must be a real folder of this
user with mode 0700, and the socket a socket of this user with mode 0600:
anything else is refused, never repaired, because whoever can answer on that
socket decides what "sglang's verdict" is. Both ends also check the peer's
uid on the connection itself (SO_PEERCRED).

Per service, three files share a key (the sglang interpreter, this sglaunch):
`oracle-KEY.sock`, `oracle-KEY.lock` (flock held by the live service for its
whole life; its text says pid, interpreter and start time) and `oracle-KEY.log`.
The GPU facts travel as `gpu_payload` writes them, to the service or a worker.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import select
import socket
import stat
import struct
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sglaunch import __version__
from sglaunch.oracle.interpreter import cache_key_path

if TYPE_CHECKING:
    from sglaunch.validators.facts import GpuFacts

PROTOCOL = 1
# what a request carries from its client's environment; the service drops its own copies
FORWARDED_PREFIXES = ("SGLANG_", "SGL_", "HF_", "HUGGINGFACE_", "TRANSFORMERS_")
RUNTIME_ENV = "SGLAUNCH_RUNTIME_DIR"
IDLE_ENV = "SGLAUNCH_ORACLE_IDLE_TIMEOUT"
DEFAULT_IDLE_S = 600.0
MAX_LINE = 64 << 20  # a resolved config is ~50 KB; anything this big is not ours
# sockaddr_un.sun_path is 108 bytes on Linux, including the final NUL
MAX_SOCKET_PATH = 107


class ServiceRefused(Exception):
    """The service's folder or socket is unsafe or unusable: one line, with the way out."""


class ChannelClosed(Exception):
    """The other end closed the connection (or never answered by the deadline)."""


def gpu_payload(gpu: GpuFacts) -> dict[str, Any]:
    """The GPU facts the worker emulates, as JSON."""
    return {
        "devices": [
            {
                "name": d.name,
                "memory_total": int(d.memory_total),
                "memory_free": d.memory_free,
                "capability": list(d.capability),
                "uuid": d.uuid,
            }
            for d in gpu.devices
        ],
        "driver_version": gpu.driver_version,
        "cuda_version": gpu.cuda_version,
    }


def runtime_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The folder the service sockets live in (see the module docstring)."""
    env = os.environ if environ is None else environ
    explicit = env.get(RUNTIME_ENV)
    if explicit:
        return Path(explicit).expanduser()
    home = env.get("SGLAUNCH_HOME")
    if home:
        return Path(home).expanduser() / "run"
    xdg = env.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "sglaunch"
    import tempfile  # only for this last resort: its import costs a check ~2 ms

    return Path(tempfile.gettempdir()) / f"sglaunch-{os.getuid()}"


def idle_timeout(environ: Mapping[str, str] | None = None) -> float:
    """SGLAUNCH_ORACLE_IDLE_TIMEOUT seconds, else 10 minutes; a bad value is a one-line error."""
    env = os.environ if environ is None else environ
    raw = env.get(IDLE_ENV)
    if not raw:
        return DEFAULT_IDLE_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value <= 7 * 86400:
        raise ServiceRefused(
            f"{IDLE_ENV}={raw}: give the seconds an idle oracle service waits before it exits "
            "(more than 0, at most a week)"
        )
    return value


def _mode(st: os.stat_result) -> str:
    return f"{stat.S_IMODE(st.st_mode):04o}"


def check_private_dir(path: Path, st: os.stat_result, uid: int) -> None:
    """Refuse a folder that is not a real folder of `uid` with mode 0700."""
    if stat.S_ISLNK(st.st_mode):
        raise ServiceRefused(
            f"the oracle service folder {path} is a symbolic link; remove it, or use --no-oracle-service"
        )
    if not stat.S_ISDIR(st.st_mode):
        raise ServiceRefused(
            f"the oracle service folder {path} is not a folder; remove it, or use --no-oracle-service"
        )
    if st.st_uid != uid:
        raise ServiceRefused(
            f"the oracle service folder {path} belongs to uid {st.st_uid}, not to you (uid {uid}); "
            f"set {RUNTIME_ENV} to a folder of yours, or use --no-oracle-service"
        )
    if stat.S_IMODE(st.st_mode) & 0o077:
        raise ServiceRefused(
            f"the oracle service folder {path} has mode {_mode(st)}; it must be 0700 "
            f"(chmod 700 {path}), or use --no-oracle-service"
        )


def check_private_socket(path: Path, st: os.stat_result, uid: int) -> None:
    """Refuse a socket that is not a socket of `uid` with mode 0600."""
    if not stat.S_ISSOCK(st.st_mode):
        raise ServiceRefused(f"{path} is not a socket; remove it (no oracle service uses it)")
    if st.st_uid != uid:
        raise ServiceRefused(
            f"the oracle service socket {path} belongs to uid {st.st_uid}, not to you (uid {uid})"
        )
    if stat.S_IMODE(st.st_mode) & 0o177:
        raise ServiceRefused(
            f"the oracle service socket {path} has mode {_mode(st)}; it must be 0600 "
            "(`sglaunch oracle stop`, then remove it)"
        )


def private_dir(path: Path, *, create: bool = True) -> Path:
    """`path` once it is a safe folder (created 0700 when missing); ServiceRefused otherwise."""
    if create:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise ServiceRefused(
                f"cannot create the oracle service folder {path}: {exc.strerror or exc}"
            ) from None
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise ServiceRefused(
            f"cannot use the oracle service folder {path}: {exc.strerror or exc}"
        ) from None
    check_private_dir(path, st, os.getuid())
    return path


def service_key(python: str) -> str:
    """One service per sglang interpreter and per sglaunch installation (code and version)."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    text = f"{cache_key_path(python)}\0{here}\0{__version__}\0{PROTOCOL}"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class ServicePaths:
    folder: Path
    key: str

    @property
    def socket(self) -> Path:
        return self.folder / f"oracle-{self.key}.sock"

    @property
    def lock(self) -> Path:
        return self.folder / f"oracle-{self.key}.lock"

    @property
    def log(self) -> Path:
        return self.folder / f"oracle-{self.key}.log"

    @classmethod
    def for_python(cls, python: str, folder: Path | None = None) -> ServicePaths:
        paths = cls(folder or runtime_dir(), service_key(python))
        size = len(os.fsencode(str(paths.socket)))
        if size > MAX_SOCKET_PATH:
            raise ServiceRefused(
                f"the oracle service socket path {paths.socket} is {size} bytes, over the "
                f"{MAX_SOCKET_PATH} a Unix socket allows: set {RUNTIME_ENV} to a shorter folder, "
                "or use --no-oracle-service"
            )
        return paths

    @classmethod
    def from_lock(cls, lock: Path) -> ServicePaths:
        return cls(lock.parent, lock.name.removeprefix("oracle-").removesuffix(".lock"))


def open_private(path: Path, flags: int) -> int:
    """An fd on `path` (created 0600), refusing symlinks and files of other users."""
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise ServiceRefused(f"cannot open {path}: {exc.strerror or exc}") from None
    st = os.fstat(fd)
    if st.st_uid != os.getuid() or not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise ServiceRefused(f"{path} is not a file of yours; remove it")
    return fd


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end (Linux SO_PEERCRED), or None where unknown."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    try:
        data = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    except OSError:
        return None
    _, uid, _ = struct.unpack("3i", data)
    return int(uid)


def read_info(paths: ServicePaths) -> dict[str, Any]:
    """What the service wrote in its lock file (pid, python, started_at), or {}."""
    try:
        with open(paths.lock, "rb") as fh:
            data = json.loads(fh.read(1 << 16) or b"{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


class Channel:
    """JSON lines over a connected stream socket, every read with a deadline."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buf = b""

    def send(self, obj: Mapping[str, Any]) -> None:
        try:
            self.sock.sendall((json.dumps(obj, allow_nan=False, default=str) + "\n").encode())
        except OSError as exc:
            raise ChannelClosed(f"the connection broke ({exc.strerror or exc})") from exc

    def receive(self, deadline: float | None) -> dict[str, Any]:
        """The next object, by `deadline` (time.monotonic(); None: wait for ever)."""
        while b"\n" not in self._buf:
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                raise ChannelClosed("no answer in time")
            try:
                ready, _, _ = select.select([self.sock], [], [], wait)
                chunk = self.sock.recv(1 << 20) if ready else None
            except (OSError, ValueError) as exc:
                raise ChannelClosed("the connection broke") from exc
            if chunk is None:
                continue
            if not chunk:
                raise ChannelClosed("the other end closed the connection")
            self._buf += chunk
            if len(self._buf) > MAX_LINE:
                raise ChannelClosed("the other end sent an oversized message")
        line, _, self._buf = self._buf.partition(b"\n")
        try:
            data = json.loads(line)
        except ValueError as exc:
            raise ChannelClosed("the other end sent something that is not JSON") from exc
        if not isinstance(data, dict):
            raise ChannelClosed("the other end sent something that is not a JSON object")
        return data

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
