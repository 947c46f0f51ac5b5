"""The oracle worker: sglang's own argument resolution, warm, with the GPU emulated.

Runs under the *sglang* interpreter, by path (`PYTHON oracle_worker.py`): it imports
only the standard library, sglang, and its siblings in this folder loaded by path; never
sglaunch, which the sglang environment does not have.

Protocol: JSON lines. Requests arrive on stdin; answers leave on a private
duplicate of the original stdout, and fd 1 is then pointed at stderr, so that
nothing sglang prints or logs can corrupt the stream. Events, in order:

    {"event": "hello", "protocol": 1, "sglang_version": "0.5.23" | null, ...}
    {"event": "ready", "import_s": 3.4, "canary": ANSWER}   or
    {"event": "failed", "reason": "one line"}
    then one ANSWER per request: {"id": N, "argv": [...], "env": {...}, "gpu": {...},
    "timeout": S}

Each request is answered by a fresh forked child: resolution writes os.environ
and caches the parsed HF config, and a record resolves once, so a child that
has resolved is spoiled. The child for the next request is forked ahead, as the
previous answer leaves (`Spare`), and waits for its one request. The parent imports everything resolution needs while
the process still looks CPU-only (modules branch on is_cuda() at import), so
the fork costs tens of milliseconds instead of seconds.

After "ready" the worker's own stdout and stderr go to /dev/null (sglang logs
every resolution at INFO; WARNING+ records reach the answers anyway) unless
SGLAUNCH_ORACLE_DEBUG is set. Two request env vars exist for the tests only:
SGLAUNCH_ORACLE_TEST_HANG (the child sleeps) and SGLAUNCH_ORACLE_TEST_CRASH
(the child kills itself).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import importlib.util
import json
import logging
import math
import os
import random
import select
import signal
import sys
import tempfile
import time
import traceback
import warnings
from typing import Any

PROTOCOL = 1
MIB = 1024**2

# The GPU facts the canary runs on: two H100s, the machine its launch line needs.
CANARY_GPU: dict[str, Any] = {
    "devices": [
        {"name": "NVIDIA H100 80GB HBM3", "memory_total": 81559 * MIB, "capability": [9, 0]},
        {"name": "NVIDIA H100 80GB HBM3", "memory_total": 81559 * MIB, "capability": [9, 0]},
    ],
    "driver_version": "575.57.08",
    "cuda_version": "12.9",
}
CANARY_ERROR = "MiniCPM does not support DP attention"
# sglang registers the "minicpm_sala" config type itself, so this config loads
# without remote code; architectures[0] picks the MiniCPM provider.
CANARY_CONFIG: dict[str, Any] = {
    "architectures": ["MiniCPMForCausalLM"],
    "model_type": "minicpm_sala",
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "num_hidden_layers": 2,
    "vocab_size": 1024,
    "max_position_embeddings": 4096,
    "torch_dtype": "bfloat16",
}

# Test-only hooks, read from a request's env: the tests need a resolution that
# hangs and a child that dies, and sglang offers neither on demand.
TEST_HANG = "SGLAUNCH_ORACLE_TEST_HANG"
TEST_CRASH = "SGLAUNCH_ORACLE_TEST_CRASH"

_PR_SET_PDEATHSIG = 1


# --------------------------------------------------------------------------
# process plumbing


class _Channel:
    """The protocol stream: requests in on one fd, answers out on another."""

    def __init__(self, fd_in: int, fd_out: int) -> None:
        self.fd_in = fd_in
        self.fd_out = fd_out
        self._buf = b""

    def send(self, obj: dict[str, Any]) -> None:
        _write_all(self.fd_out, (json.dumps(obj, allow_nan=False) + "\n").encode())

    def readline(self, watch_parent: int) -> bytes | None:
        """The next request line; None at EOF or when the client is gone."""
        while b"\n" not in self._buf:
            ready, _, _ = select.select([self.fd_in], [], [], 0.5)
            if os.getppid() != watch_parent:
                return None
            if not ready:
                continue
            chunk = os.read(self.fd_in, 65536)
            if not chunk:
                return None
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line


def _claim_protocol_fds() -> _Channel:
    """Keep private copies of stdin/stdout for the protocol; sglang gets stderr and /dev/null."""
    fd_in = os.dup(0)
    fd_out = os.dup(1)
    os.dup2(2, 1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = sys.stderr
    return _Channel(fd_in, fd_out)


def _die_with_parent() -> None:
    """SIGKILL this process when its parent dies (Linux only; best effort)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except Exception:
        pass


def _load_by_path(rel: str, name: str) -> Any:
    """A sibling file as a module, once: this interpreter may not have sglaunch installed."""
    if name in sys.modules:
        return sys.modules[name]
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), rel)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _shim() -> Any:
    """sglang_import.py (standard library only): import shims, sglang's folder
    and version, shared with the flag extractor."""
    return _load_by_path("sglang_import.py", "_sglaunch_sglang_import")


def _memory_probe() -> Any:
    """memory_probe.py: sglang's own KV-pool arithmetic under emulated memory (issue 9)."""
    return _load_by_path("memory_probe.py", "_sglaunch_oracle_memory_probe")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _one_line(text: str, limit: int = 400) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


# --------------------------------------------------------------------------
# warm-up: everything resolution imports, while the process looks CPU-only


def _modules_resolution_imports(sglang_dir: str) -> list[str]:
    """Every sglang module that server_args.py, configs/model_config.py and
    arg_groups/** import, at module level or inside a function.

    Read from the source rather than listed here, so a patch release that adds
    a hook is still warmed. Imports inside functions matter most: they run
    during resolution, when the process already looks like a GPU machine and
    a module importing then would take its CUDA branch.
    """
    import ast

    root = os.path.dirname(sglang_dir)
    files = [
        os.path.join(sglang_dir, "srt", "server_args.py"),
        os.path.join(sglang_dir, "srt", "configs", "model_config.py"),
    ]
    for folder, _, names in os.walk(os.path.join(sglang_dir, "srt", "arg_groups")):
        files += [os.path.join(folder, n) for n in sorted(names) if n.endswith(".py")]
    wanted: set[str] = set()
    for path in files:
        module = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
        is_pkg = module.endswith(".__init__")
        module = module.removesuffix(".__init__")
        wanted.add(module)
        package = module if is_pkg else module.rpartition(".")[0]
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                wanted.update(a.name for a in node.names if a.name.startswith("sglang"))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    base = parts[: len(parts) - node.level + 1]
                    name = ".".join([*base, node.module] if node.module else base)
                else:
                    name = node.module or ""
                if name.startswith("sglang"):
                    wanted.add(name)
                    # `from pkg import sub` may name a submodule
                    wanted.update(f"{name}.{a.name}" for a in node.names)
    return sorted(wanted)


def _import_if_module(name: str) -> None:
    try:
        found = importlib.util.find_spec(name) is not None
    except (ImportError, ValueError, AttributeError):
        found = False  # a class or function imported by name, not a module
    if found:
        importlib.import_module(name)


def warm_up() -> dict[str, Any]:
    """Import sglang and every module resolution needs; returns what it learned."""
    t0 = time.perf_counter()
    global _EMULATION
    _EMULATION = _load_by_path("gpu_emulation.py", "_sglaunch_oracle_gpu_emulation")
    _EMULATION.hide_cuda()
    shim = _shim()
    shim.prepare()
    with warnings.catch_warnings():
        # import-time warnings ("Only CUDA ... support AWQ") are about this CPU box
        warnings.simplefilter("ignore")
        sglang_dir = shim.sglang_dir()
        for name in _modules_resolution_imports(sglang_dir):
            _import_if_module(name)
        import argparse

        from sglang.srt import server_args as sa_mod
        from sglang.srt.platforms import cuda as _cuda  # noqa: F401

        _memory_probe().warm()

        # A parser whose every default is SUPPRESS tells which dests the argv set.
        explicit = argparse.ArgumentParser(prog="sglang serve", add_help=False, exit_on_error=False)
        sa_mod.ServerArgs.add_cli_args(explicit)
        for action in explicit._actions:
            action.default = argparse.SUPPRESS
            action.required = False
    global _EXPLICIT_PARSER, _SGLANG_DIR, _BINDINGS
    _EXPLICIT_PARSER = explicit
    _SGLANG_DIR = sglang_dir
    _BINDINGS = _EMULATION.find_bindings()
    # Freeze the warm heap: forked children then share it copy-on-write for real.
    gc.collect()
    gc.freeze()
    return {"import_s": round(time.perf_counter() - t0, 3)}


_EXPLICIT_PARSER: Any = None
_SGLANG_DIR = ""
_EMULATION: Any = None  # gpu_emulation.py, loaded by path
_BINDINGS: Any = None  # its Bindings, found once in the warm parent


# --------------------------------------------------------------------------
# sglang's parser, built by the spare before its request arrives

# prepare_server_args builds `argparse.ArgumentParser(prog=PARSER_PROG)` then
# `ServerArgs.add_cli_args(parser)` (0.5.19 to 0.5.23): ~15-20 ms of each answer
PARSER_PROG = "sglang serve"
# what ArgumentParser's constructor sets: a parser prepare_server_args made differently
# does not get the prebuilt one's actions
_PARSER_CONSTRUCTED = (
    "prog",
    "usage",
    "description",
    "epilog",
    "formatter_class",
    "prefix_chars",
    "fromfile_prefix_chars",
    "argument_default",
    "conflict_handler",
    "add_help",
    "allow_abbrev",
    "exit_on_error",
)
# Set in the warm parent after the canary: a parser built while the process looks
# CPU-only equals one built under the canary's emulated GPUs (`_parser_fingerprint`).
# Without that proof no spare builds ahead: every child builds its own, after emulation.
_PREBUILD_OK = False


def _constructed(parser: Any) -> tuple[Any, ...]:
    state = vars(parser)
    return (
        tuple(state.get(k) for k in _PARSER_CONSTRUCTED),
        tuple(tuple(a.option_strings) for a in parser._actions),
    )


class PrebuiltParser:
    """sglang's parser as prepare_server_args builds it, built ahead in the spare, with
    its key: each environment variable that building it read, and the value it had
    (None: unset). SGLANG_KV_CANARY_ENABLE_TOKEN_ORACLE adds a --sampling-backend
    choice, LANG translates argparse's texts: a request whose environment gives any of
    them another value gets a parser built after its environment is in place, as before.
    `whole` holds the whole environment when building it iterated os.environ; `cwd` the
    working directory when building it asked for it (the request's child is in the
    client's)."""

    def __init__(
        self,
        parser: Any,
        blank: tuple[Any, ...],
        read: dict[str, str | None],
        whole: dict[str, str] | None,
        cwd: str | None,
        built_s: float,
    ) -> None:
        self.parser = parser
        self.blank = blank  # `_constructed` of the parser before add_cli_args filled it
        self.read = read
        self.whole = whole
        self.cwd = cwd
        self.built_s = built_s

    def fits(self, environ: Any) -> bool:
        if self.cwd is not None and _cwd() != self.cwd:
            return False
        if self.whole is not None:
            return dict(environ) == self.whole
        return all(environ.get(k) == v for k, v in self.read.items())


def _build_parser() -> Any:
    import argparse

    from sglang.srt.server_args import ServerArgs

    parser = argparse.ArgumentParser(prog=PARSER_PROG)
    ServerArgs.add_cli_args(parser)
    return parser


def prebuild_parser() -> PrebuiltParser | None:
    """The parser for this child's request, built now, with what it read from the
    environment; None when building it did more than build it (warned, logged, wrote
    the environment, raised): then the request's child builds its own, as before."""
    import argparse

    environ_type = type(os.environ)
    getitem, iterate = environ_type.__getitem__, environ_type.__iter__
    read: dict[str, str | None] = {}
    iterated = [False]

    # every read of os.environ (os.getenv, .get, `in`) passes through __getitem__
    def recording_getitem(self: Any, key: str) -> Any:
        try:
            value = getitem(self, key)
        except KeyError:
            read.setdefault(key, None)
            raise
        read.setdefault(key, value)
        return value

    def recording_iter(self: Any) -> Any:
        iterated[0] = True
        return iterate(self)

    getcwd = os.getcwd
    asked_cwd = [False]

    def recording_getcwd() -> str:  # os.path.abspath asks it too
        asked_cwd[0] = True
        return getcwd()

    before = dict(os.environ)
    logged: list[str] = []
    handler = _Capture(logged)
    root = logging.getLogger()
    root.addHandler(handler)
    t0 = time.perf_counter()
    environ_type.__getitem__ = recording_getitem  # type: ignore[method-assign]
    environ_type.__iter__ = recording_iter  # type: ignore[method-assign]
    os.getcwd = recording_getcwd
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            parser = argparse.ArgumentParser(prog=PARSER_PROG)
            blank = _constructed(parser)
            from sglang.srt.server_args import ServerArgs

            ServerArgs.add_cli_args(parser)
    except BaseException:
        parser = None
    finally:
        environ_type.__getitem__ = getitem  # type: ignore[method-assign]
        environ_type.__iter__ = iterate  # type: ignore[method-assign]
        os.getcwd = getcwd
        root.removeHandler(handler)
    built_s = round(time.perf_counter() - t0, 4)
    if parser is None or caught or logged or dict(os.environ) != before:
        os.environ.clear()
        os.environ.update(before)
        return None
    cwd = _cwd() if asked_cwd[0] else None
    if asked_cwd[0] and cwd is None:
        return None
    whole = before if iterated[0] else None
    return PrebuiltParser(parser, blank, read, whole, cwd, built_s)


def _cwd() -> str | None:
    try:
        return os.getcwd()
    except OSError:
        return None


_PREBUILT: PrebuiltParser | None = None  # the spare's, for its first resolution only


@contextlib.contextmanager
def _prebuilt_for_this_request(timing: dict[str, float]) -> Any:
    """While active, prepare_server_args gets the spare's parser, when it fits the
    environment as the request left it; else (and for a batch's later launches) it
    builds its own. Timing says which: `parser_prebuilt_s`, the seconds built ahead."""
    global _PREBUILT
    prebuilt, _PREBUILT = _PREBUILT, None
    if prebuilt is None or not prebuilt.fits(os.environ):
        yield
        return
    from sglang.srt.server_args import ServerArgs

    original = ServerArgs.__dict__["add_cli_args"]

    def add_cli_args(parser: Any) -> None:
        ServerArgs.add_cli_args = original  # one parser, one use
        if _constructed(parser) != prebuilt.blank:
            ServerArgs.add_cli_args(parser)
            return
        # the prebuilt parser's whole state: its actions, groups and registries
        vars(parser).update(vars(prebuilt.parser))
        timing["parser_prebuilt_s"] = prebuilt.built_s

    ServerArgs.add_cli_args = staticmethod(add_cli_args)
    try:
        yield
    finally:
        ServerArgs.add_cli_args = original


def _describe(value: Any) -> str:
    """A value's text with no address in it: functions and classes by name."""
    if isinstance(value, set | frozenset):
        return repr(sorted(_describe(v) for v in value))
    if isinstance(value, list | tuple):
        return repr([_describe(v) for v in value])
    name = getattr(value, "__qualname__", None)
    if callable(value) and isinstance(name, str):
        return f"{getattr(value, '__module__', '')}.{name}"
    return repr(value)


def _parser_fingerprint(parser: Any) -> str:
    """Everything a parser's actions say (options, dest, default, choices, type, help):
    equal for two parsers that parse every argv alike."""
    import hashlib

    rows = [_describe(_constructed(parser)[0])]
    for a in parser._actions:
        rows.append(
            "|".join(
                _describe(x)
                for x in (
                    type(a),
                    a.option_strings,
                    a.dest,
                    a.nargs,
                    a.const,
                    a.default,
                    a.type,
                    a.choices,
                    a.required,
                    a.help,
                    a.metavar,
                )
            )
        )
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


# --------------------------------------------------------------------------
# one resolution, inside the forked child


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((_jsonable(v) for v in value), key=repr)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    inner = getattr(value, "value", None)
    if isinstance(inner, str | int | float):  # enums
        return inner
    return str(value)


def _where(exc: BaseException) -> str:
    """The innermost frame inside the sglang package, as 'srt/...py:LINE'."""
    root = _SGLANG_DIR + os.sep
    where = ""
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename.startswith(root):
            where = f"{os.path.relpath(frame.filename, _SGLANG_DIR)}:{frame.lineno}"
    return where


class _Capture(logging.Handler):
    def __init__(self, sink: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            self.sink.append(record.getMessage())


def _capture_logging(sink: list[str]) -> None:
    """Collect WARNING+ records, even after sglang's basicConfig(force=True)."""
    handler = _Capture(sink)
    root = logging.getLogger()
    root.addHandler(handler)
    original = logging.basicConfig

    def basic_config(*args: Any, **kwargs: Any) -> None:
        original(*args, **kwargs)
        if handler not in root.handlers:
            root.addHandler(handler)

    logging.basicConfig = basic_config  # type: ignore[assignment]


def _record_fields(cls: type) -> Any:
    """ServerArgs' declared fields: sglang's `record_fields` (0.5.20+), else the dataclass's
    (0.5.19's ServerArgs is a dataclass; 0.5.20 made it a msgspec Struct)."""
    try:
        from sglang.srt.arg_groups.arg_utils import record_fields
    except ImportError:
        import dataclasses

        return dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else ()
    return record_fields(cls)


def _explicit_dests(argv: list[str]) -> list[str]:
    try:
        if "--config" in argv:
            from sglang.srt.utils.server_args_config_parser import ConfigArgumentMerger

            argv = ConfigArgumentMerger(_EXPLICIT_PARSER).merge_config_with_args(argv)
        namespace, _ = _EXPLICIT_PARSER.parse_known_args(argv)
        return sorted(vars(namespace))
    except (Exception, SystemExit):
        return []


def resolve(request: dict[str, Any]) -> dict[str, Any]:
    """Parse and resolve one launch line as sglang would; never raises."""
    import argparse

    t0 = time.perf_counter()
    argv = [str(a) for a in request.get("argv") or []]
    env = {str(k): str(v) for k, v in (request.get("env") or {}).items()}
    os.environ.update(env)
    if request.get("cwd"):
        # the oracle service's client: its relative paths (this process is a fork, so no harm)
        with contextlib.suppress(OSError):
            os.chdir(str(request["cwd"]))
    messages: list[str] = []
    _capture_logging(messages)
    out: dict[str, Any] = {"ok": False, "error": None, "resolved": None, "changed": None}
    parse_errors: list[str] = []
    original_error = argparse.ArgumentParser.error

    def error(self: argparse.ArgumentParser, message: str) -> Any:
        parse_errors.append(message)
        return original_error(self, message)

    argparse.ArgumentParser.error = error  # type: ignore[method-assign]
    stage = "emulation"
    timing: dict[str, float] = {}
    mark = [t0]

    def lap(name: str) -> None:
        """Seconds since the previous lap: each phase's own duration."""
        now = time.perf_counter()
        timing[name] = round(now - mark[0], 4)
        mark[0] = now

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            _EMULATION.emulate_gpu(request.get("gpu") or {}, _BINDINGS)
            lap("emulate_s")
            if env.get(TEST_HANG):
                time.sleep(10**6)
            if env.get(TEST_CRASH):
                os.kill(os.getpid(), signal.SIGKILL)
            from sglang.srt.server_args import prepare_server_args

            if request.get("parser_fingerprint"):
                # the canary's: a parser built under the emulated GPUs (`_PREBUILD_OK`)
                out["parser_fingerprint"] = _parser_fingerprint(_build_parser())
                lap("fingerprint_s")
            stage = "parse"
            with _prebuilt_for_this_request(timing):
                server_args = prepare_server_args(argv)
            lap("parse_s")
            out["explicit"] = _explicit_dests(argv)
            asked = {
                f.name: _jsonable(getattr(server_args, f.name))
                for f in _record_fields(type(server_args))
            }
            stage = "resolve"
            server_args.resolve_once()
            lap("resolve_s")
            # the launcher runs these right after resolution, before any
            # process starts (srt/entrypoints/engine.py:1165): part of the verdict
            stage = "check"
            server_args.check_server_args()
            lap("check_s")
            if request.get("memory"):
                stage = "memory"
                out["memory"] = _jsonable(
                    _memory_probe().pool_answer(server_args, request["memory"])
                )
            stage = "report"
            resolved = _jsonable(server_args.resolved_dict())
            out["resolved"] = resolved
            out["changed"] = {
                k: [asked[k], v] for k, v in resolved.items() if k in asked and asked[k] != v
            }
            out["ok"] = True
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
            message = parse_errors[-1] if parse_errors else f"argparse exited with status {code}"
            out["error"] = {
                "type": "SystemExit",
                "message": message,
                "where": _where(exc),
                "stage": stage,
                "exit_code": code,
            }
        except BaseException as exc:
            out["error"] = {
                "type": type(exc).__name__,
                "message": str(exc),
                "where": _where(exc),
                "stage": stage,
                "traceback": "".join(traceback.format_exception(exc)[-6:]),
            }
    for w in caught:
        messages.append(str(w.message))
    out["warnings"] = list(dict.fromkeys(messages))
    timing["total_s"] = round(time.perf_counter() - t0, 4)
    out["timing"] = timing
    return out


# --------------------------------------------------------------------------
# fork per request


def _runtime_context() -> Any:
    """sglang's runtime context module when it has snapshot_context/restore_context (the
    releases sglaunch mirrors do), else None."""
    try:
        from sglang.srt import runtime_context
    except ImportError:
        return None
    if hasattr(runtime_context, "snapshot_context") and hasattr(runtime_context, "restore_context"):
        return runtime_context
    return None


def resolve_isolated(request: dict[str, Any]) -> dict[str, Any]:
    """`resolve`, then put back what resolution changes in the process (the environment,
    the working directory, argparse's error hook, the root logger, sglang's runtime context
    through its own snapshot_context/restore_context), and reseed `random` as
    a fork does (sglang draws an unset `random_seed` from it): the next launch of a batch
    starts as a freshly forked child would. A batch's answers equal one child per
    launch (tests/sglang/oracle/test_oracle_batches.py compares them)."""
    import argparse

    environ = dict(os.environ)
    cwd = os.getcwd()
    random.seed()
    context = _runtime_context()
    published = context.snapshot_context() if context is not None else None
    error = argparse.ArgumentParser.error
    basic_config = logging.basicConfig
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        return resolve(request)
    finally:
        os.environ.clear()
        os.environ.update(environ)
        with contextlib.suppress(OSError):
            os.chdir(cwd)
        argparse.ArgumentParser.error = error  # type: ignore[method-assign]
        logging.basicConfig = basic_config
        root.handlers[:] = handlers
        root.setLevel(level)
        if context is not None:
            # what resolution and the memory probe publish (config bags, overrides, flags)
            context.restore_context(published)


def _answer(request: dict[str, Any]) -> dict[str, Any]:
    """One launch's answer, or a batch's (`{"answers": [...]}`, one child for them all)."""
    batch = request.get("batch")
    if isinstance(batch, list):
        answers = []
        for item in batch:
            answer = resolve_isolated(item if isinstance(item, dict) else {})
            answer["child_s"] = answer.get("timing", {}).get("total_s", 0.0)
            answers.append(answer)
        return {"ok": True, "answers": answers}
    return resolve(request)


def _child(request: dict[str, Any], write_fd: int, *, prepared: bool = False) -> None:
    try:
        if not prepared:
            _child_prepare()
        answer = _answer(request)
        try:
            data = json.dumps(answer, allow_nan=False).encode()
        except (TypeError, ValueError) as exc:
            data = json.dumps(
                {
                    "ok": False,
                    "error": {
                        "type": type(exc).__name__,
                        "message": str(exc),
                        "where": "",
                        "stage": "report",
                    },
                    "warnings": [],
                }
            ).encode()
        _write_all(write_fd, data)
        # EOF now: the parent answers without waiting for this process to tear down
        os.close(write_fd)
    finally:
        os._exit(0)


def _child_prepare() -> None:
    _die_with_parent()
    # the warm heap is frozen and this process lives for one answer
    gc.disable()


class Spare:
    """A child forked ahead, waiting for its one request on a pipe: the fork and the
    child's start-up happen between requests, not while a client waits. It answers one
    request and exits, as a child forked for the request would."""

    def __init__(self, pid: int, request_fd: int, answer_fd: int) -> None:
        self.pid = pid
        self.request_fd = request_fd
        self.answer_fd = answer_fd

    def discard(self) -> None:
        """Close its pipes (it exits at EOF) and reap it."""
        for fd in (self.request_fd, self.answer_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def fork_spare(close_fds: tuple[int, ...] = ()) -> Spare:
    """Fork the child for the next request; `close_fds` are the parent's own (the protocol).
    While it waits, it builds sglang's parser for its request (`prebuild_parser`)."""
    global _PREBUILT
    req_r, req_w = os.pipe()
    ans_r, ans_w = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(req_w)
            os.close(ans_r)
            for fd in close_fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            _child_prepare()
            if os.getppid() != parent:  # the parent died before the death signal was set
                os._exit(0)
            if _PREBUILD_OK:
                _PREBUILT = prebuild_parser()
            chunks: list[bytes] = []
            while chunk := os.read(req_r, 1 << 20):
                chunks.append(chunk)
            if not chunks:  # the parent exited (or discarded this spare): no request
                os._exit(0)
            _child(json.loads(b"".join(chunks)), ans_w, prepared=True)
        finally:
            os._exit(0)
    os.close(req_r)
    os.close(ans_w)
    return Spare(pid, req_w, ans_r)


def _hand_to_spare(spare: Spare, request: dict[str, Any]) -> tuple[int, int] | None:
    """Give the spare its request: its (pid, answer fd), or None when it is gone."""
    try:
        _write_all(spare.request_fd, json.dumps(request).encode())
        os.close(spare.request_fd)
    except OSError:  # it died meanwhile (killed): a child is forked for the request instead
        spare.discard()
        return None
    return spare.pid, spare.answer_fd


_UNREAPED: list[int] = []


def _reap() -> None:
    for pid in list(_UNREAPED):
        with contextlib.suppress(ChildProcessError):
            done, _ = os.waitpid(pid, os.WNOHANG)
            if not done:
                continue
        _UNREAPED.remove(pid)


def answer_in_child(
    request: dict[str, Any], timeout: float, spare: Spare | None = None
) -> dict[str, Any]:
    """Resolve in a child of its own (`spare`, else one forked now), and collect its answer
    within `timeout` seconds."""
    _reap()
    t0 = time.perf_counter()
    handed = _hand_to_spare(spare, request) if spare is not None else None
    if handed is not None:
        pid, read_fd = handed
    else:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            _child(request, write_fd)
        os.close(write_fd)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    timed_out = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([read_fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(read_fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_fd)
    elapsed = round(time.perf_counter() - t0, 4)
    if timed_out:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        return _fault(f"sglang's resolution did not finish within {timeout:g} s", timed_out=True)
    try:
        answer = json.loads(b"".join(chunks))
        _UNREAPED.append(pid)
    except ValueError:
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            why = f"killed by signal {os.WTERMSIG(status)}"
        else:
            why = f"exit status {os.waitstatus_to_exitcode(status)}"
        return _fault(f"the resolving process died without an answer ({why})", crashed=True)
    answer["child_s"] = elapsed
    return answer


def _fault(message: str, **flags: bool) -> dict[str, Any]:
    return {"ok": False, "error": None, "fault": message, "warnings": [], **flags}


def canary_flags() -> list[str]:
    """Attention DP on two GPUs, spelled the way this release spells it: --attn-dp-size
    from 0.5.22 on, --enable-dp-attention --dp-size before (where --attn-dp-size does not exist).

    Read from the warm parser, not the version string, so a patch release is asked
    in its own words."""
    known = getattr(_EXPLICIT_PARSER, "_option_string_actions", {})
    if "--attn-dp-size" in known:
        return ["--attn-dp-size", "2", "--tp-size", "2"]
    return ["--enable-dp-attention", "--dp-size", "2", "--tp-size", "2"]


def _canary(sglang_version: str | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="sglaunch-canary-") as tmp:
        with open(os.path.join(tmp, "config.json"), "w", encoding="utf-8") as fh:
            json.dump(CANARY_CONFIG, fh)
        flags = canary_flags()
        request: dict[str, Any] = {
            "argv": ["--model-path", tmp, *flags],
            "env": {},
            "gpu": CANARY_GPU,
            "parser_fingerprint": True,
        }
        answer = answer_in_child(request, timeout=120.0)
    error = answer.get("error") or {}
    answer["canary_argv"] = flags
    if error.get("message") == CANARY_ERROR:
        answer["canary_ok"] = True
    else:
        got = error.get("message") or answer.get("fault") or "no error at all"
        answer["canary_ok"] = False
        answer["canary_reason"] = _one_line(
            f"the GPU emulation does not work with this sglang ({sglang_version}): "
            f"the canary expected '{CANARY_ERROR}' and got: {got}"
        )
    return answer


def main() -> int:
    global _PREBUILD_OK
    channel = _claim_protocol_fds()
    parent = os.getppid()
    if "--pdeathsig" in sys.argv[1:]:
        _die_with_parent()
    version = _shim().sglang_version()
    channel.send(
        {
            "event": "hello",
            "protocol": PROTOCOL,
            "sglang_version": version,
            "python": sys.executable,
            "pid": os.getpid(),
        }
    )
    if version is None:
        return 3
    try:
        info = warm_up()
    except BaseException as exc:
        channel.send(
            {
                "event": "failed",
                "reason": _one_line(f"importing sglang failed: {type(exc).__name__}: {exc}"),
            }
        )
        return 4
    canary = _canary(version)
    # the spares build sglang's parser ahead only where this release's parser is the same
    # with and without the emulated GPUs: built before the request, it sees none
    _PREBUILD_OK = canary.get("parser_fingerprint") == _parser_fingerprint(_build_parser())
    channel.send({"event": "ready", **info, "canary": canary})
    if not os.environ.get("SGLAUNCH_ORACLE_DEBUG"):
        # sglang logs every resolution at INFO; warnings reach the answers anyway
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        os.close(devnull)
    spare: Spare | None = None
    while True:
        if spare is None:
            # after the answer went out: the next request finds its child ready
            spare = fork_spare((channel.fd_in, channel.fd_out))
        line = channel.readline(watch_parent=parent)
        if line is None:
            spare.discard()
            return 0
        try:
            request = json.loads(line)
        except ValueError:
            channel.send({"id": None, **_fault("the worker got a request that is not JSON")})
            continue
        timeout = float(request.get("timeout") or 20.0)
        if isinstance(request.get("batch"), list):
            # the whole batch within one launch's time each
            timeout *= max(1, len(request["batch"]))
        answer = answer_in_child(request, timeout, spare)
        spare = None
        answer["id"] = request.get("id")
        channel.send(answer)


if __name__ == "__main__":
    sys.exit(main())
