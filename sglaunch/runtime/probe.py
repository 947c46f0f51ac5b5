"""HTTP to the server's own endpoints, and the port checks before a launch (stdlib only)."""

from __future__ import annotations

import contextlib
import errno
import http.client
import socket
from dataclasses import dataclass


def connect_host(host: str) -> str:
    """Where to reach a server bound to `host`: wildcard binds are reached over loopback."""
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host in ("::", "[::]"):
        return "::1"
    return host.strip("[]")


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int
    api_key: str | None = None

    @property
    def url(self) -> str:
        host = connect_host(self.host)
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"


@dataclass(frozen=True)
class Response:
    status: int
    body: bytes
    content_type: str = ""

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


MAX_BODY = 32 << 20


def request(
    endpoint: Endpoint, path: str, *, timeout: float = 2.0, method: str = "GET"
) -> Response:
    """One request on a fresh connection. Raises OSError (refused, reset, timeout).

    The bearer token goes with every request: sglang exempts /health, /ready and
    /metrics from auth, and sending it there is harmless.
    """
    conn = http.client.HTTPConnection(connect_host(endpoint.host), endpoint.port, timeout=timeout)
    headers = {"Connection": "close", "Accept": "*/*"}
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    try:
        conn.request(method, path, headers=headers)
        res = conn.getresponse()
        # a server's answers are small (a few MB of /metrics at most); an endless one is not
        body = res.read(MAX_BODY + 1)
        if len(body) > MAX_BODY:
            raise ConnectionError(f"{endpoint.url}{path} answered more than {MAX_BODY >> 20} MiB")
        return Response(res.status, body, res.getheader("content-type") or "")
    except http.client.HTTPException as exc:
        raise ConnectionError(f"bad HTTP response from {endpoint.url}{path}: {exc}") from exc
    finally:
        conn.close()


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def port_problem(host: str, port: int, *, name_holder: bool = True) -> str | None:
    """Why the server could not bind host:port, or None when it can.

    The test binds the way uvicorn does (SO_REUSEADDR, so a port in TIME_WAIT counts as
    free) and releases the port at once.
    """
    bind_host = host.strip("[]") or "0.0.0.0"
    try:
        infos = socket.getaddrinfo(
            bind_host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        return f"cannot resolve --host {host!r} ({exc.strerror})"
    family, _, _, _, addr = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(addr)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                holder = port_holder(port) if name_holder else None
                return f"port {port} on {host} is already in use" + (
                    f" by {holder}" if holder else ""
                )
            if exc.errno == errno.EADDRNOTAVAIL:
                return f"--host {host} is not an address of this machine"
            if exc.errno == errno.EACCES:
                return f"port {port} needs privileges to bind (use a port above 1023)"
            return f"cannot bind {host}:{port} ({exc.strerror or exc})"
    return None


def port_holder(port: int) -> str | None:
    """'pid 1234 (python)' for the listener on `port`, when this user may see it."""
    try:
        import psutil  # psutil (~40 ms): only when a process is looked at

        for conn in psutil.net_connections(kind="tcp"):
            if (
                conn.status == psutil.CONN_LISTEN
                and conn.laddr
                and conn.laddr.port == port
                and conn.pid
            ):
                with contextlib.suppress(psutil.Error):
                    return f"pid {conn.pid} ({psutil.Process(conn.pid).name()})"
                return f"pid {conn.pid}"
    except Exception:
        return None
    return None


def free_port(host: str, start: int, tries: int = 50) -> int | None:
    """The first port at or after `start` that `port_problem` accepts."""
    for port in range(max(start, 1024), min(start + tries, 65536)):
        if port_problem(host, port, name_holder=False) is None:
            return port
    return None
