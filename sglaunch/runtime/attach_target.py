"""What `sglaunch attach RUN | --url URL` attaches to: resolved, checked, with one-line errors.

    target = resolve_attach_target(run="20260101-1200")        # a run directory here
    target = resolve_attach_target(url="http://gpu-box:30000")  # any sglang server
    target.endpoint, target.local, target.log_path, target.pid, target.ready

UI-free and owning nothing: a run must be running on this machine and still be
the server its record names; a URL must answer like sglang (`/ready` or
`/health`). GPU memory can be read (NVML) only when `local`.
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from sglaunch.errors import UserError
from sglaunch.runtime.probe import Endpoint, request
from sglaunch.runtime.runs import RunInfo, RunState, load_run, printable, resolve_run

PROBE_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class AttachTarget:
    endpoint: Endpoint
    run: RunInfo | None = None  # when attached through a run directory
    local: bool = False  # on this machine: NVML's GPU memory means something
    log_path: Path | None = None  # the run's server.log (a run directory only)
    pid: int | None = None  # the verified server pid (a run directory only)
    ready: bool | None = None  # /ready (or /health) answered 200 when resolved; None: not asked

    @property
    def url(self) -> str:
        return self.endpoint.url


def endpoint_of(url: str, api_key: str | None = None) -> Endpoint:
    """http://HOST:PORT (or HOST:PORT) as an Endpoint; UserError naming what is wrong."""
    text = url.strip()
    shown = printable(text, 120)
    if not text:
        raise UserError("--url: give the server's address, e.g. http://127.0.0.1:30000")
    if "://" not in text:
        text = "http://" + text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise UserError(f"--url {shown}: {exc}; give http://HOST:PORT") from None
    if parts.scheme != "http":
        raise UserError(
            f"--url {shown}: attach speaks plain HTTP to sglang's port; give http://HOST:PORT"
        )
    if parts.username is not None or parts.password is not None:
        raise UserError(
            f"--url {printable(parts.hostname or '', 60)}: leave credentials out of the URL "
            "(sglang takes an API key as a bearer token, not in the address)"
        )
    if not parts.hostname:
        raise UserError(f"--url {shown}: no host; give http://HOST:PORT")
    if port is None or port == 0:
        raise UserError(
            f"--url {shown}: no port; give http://HOST:PORT (sglang's default is 30000)"
        )
    host = parts.hostname
    return Endpoint(f"[{host}]" if ":" in host else host, port, api_key)


def _local_addresses() -> set[str]:
    try:
        import psutil  # psutil (~40 ms): only when a process is looked at

        return {
            a.address.split("%", 1)[0]
            for addrs in psutil.net_if_addrs().values()
            for a in addrs
            if a.family in (socket.AF_INET, socket.AF_INET6)
        }
    except Exception:
        return set()


def is_local(host: str) -> bool:
    """Whether `host` is this machine, without asking DNS (a name it does not know is remote)."""
    name = host.strip("[]").lower()
    if name in ("localhost", "", "0.0.0.0", "::"):
        return True
    if name in (socket.gethostname().lower(), socket.getfqdn().lower()):
        return True
    try:
        addr = ipaddress.ip_address(name)
    except ValueError:
        return False
    return addr.is_loopback or str(addr) in _local_addresses()


def probe(endpoint: Endpoint, timeout: float = PROBE_TIMEOUT_S) -> bool:
    """True when the server is ready, False when it answers but is not ready yet.

    UserError when nothing answers there, or what answers is not an sglang server.
    """
    statuses = []
    for path in ("/ready", "/health"):
        try:
            res = request(endpoint, path, timeout=timeout)
        except TimeoutError:
            raise UserError(
                f"cannot reach {endpoint.url}: no answer within {timeout:g} s "
                "(a firewall, or the wrong host?)"
            ) from None
        except OSError as exc:
            why = exc.strerror or str(exc) or type(exc).__name__
            raise UserError(
                f"cannot reach {endpoint.url}: {printable(why, 120)} "
                "(is the server running, and are the host and port right?)"
            ) from None
        if res.status == 200:
            return True
        if res.status == 503:
            return False
        statuses.append(f"{path} {res.status}")
    raise UserError(
        f"{endpoint.url} answers, but not like an sglang server ({', '.join(statuses)})"
    )


def _remote_url(run: RunInfo) -> str:
    port = run.port or 30000
    return f"http://{run.host or 'HOST'}:{port}"


def _from_run(spec: str, root: Path | None) -> RunInfo:
    run = load_run(resolve_run(spec, root), tail=0)
    name = run.name
    if run.state is RunState.REMOTE:
        raise UserError(
            f"run {name} runs on {run.host}, not here: from this machine only its URL works, "
            f"`sglaunch attach --url {_remote_url(run)}` (if it listens beyond loopback)"
        )
    if run.state.final:
        raise UserError(
            f"run {name} has ended ({run.state}: {run.note}); nothing to attach to "
            f"(`sglaunch runs logs {name}` shows its log)"
        )
    if run.state is RunState.UNKNOWN:
        raise UserError(
            f"run {name}: {run.note}; attach by its address instead (--url {run.url or 'URL'})"
        )
    if run.state is RunState.CORRUPT:
        raise UserError(f"run {name} is unreadable: {run.note}")
    if not run.url:
        raise UserError(f"run {name} recorded no URL; attach with --url http://HOST:PORT")
    return run


def resolve_attach_target(
    run: str | None = None,
    url: str | None = None,
    *,
    root: Path | None = None,
    api_key: str | None = None,
    check: bool = True,
    timeout: float = PROBE_TIMEOUT_S,
) -> AttachTarget:
    """The server to attach to, from a run (name, prefix or path) or a URL; UserError if none.

    `check` asks the server once: a URL that does not answer is an error; a run
    that is still starting may not answer yet, which is not.
    """
    if (run is None) == (url is None):
        raise UserError(
            "attach: give a run (sglaunch attach RUN) or an address (--url URL), not both"
        )
    if url is not None:
        endpoint = endpoint_of(url, api_key)
        answered = probe(endpoint, timeout) if check else None
        return AttachTarget(endpoint, local=is_local(endpoint.host), ready=answered)
    assert run is not None
    info = _from_run(run, root)
    endpoint = endpoint_of(info.url or "", api_key)
    ready: bool | None = None
    if check:
        try:
            ready = probe(endpoint, timeout)
        except UserError:
            ready = False  # still loading, or hung: the monitor shows which
    return AttachTarget(
        endpoint, run=info, local=True, log_path=info.log_path, pid=info.pid, ready=ready
    )
