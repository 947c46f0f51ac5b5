"""Reading (and writing) what a user or a stranger hands sglaunch, within limits.

Every file sglaunch reads goes through here: model configs, safetensors headers
and indexes, `--config` YAML, profiles and imports. The rules, each for a reason
that was a hang, a crash or a leak before:

- only a regular file is opened: a FIFO would block forever, /dev/zero would
  fill the memory, a device may act on being opened; they are refused by name,
  and the kind is known from `stat` before anything is opened;
- a read stops at a size cap counted on the bytes read (`st_size` is 0 for
  /dev/zero and for /proc files);
- JSON and TOML nesting is measured before the parser recurses, YAML's while it
  is still a stream of events (aliases counted as the values they expand to);
- a number must be finite and fit in 64 bits: NaN compares false with every
  bound, and 5,000-digit integers stop Python's own int();
- a write goes to a regular file or a new path, never over a FIFO, a device or
  a /proc/self/fd link.

Every refusal is an `InputError` (a `UserError`: one line, exit 2) whose message
names the file and what it is.
"""

from __future__ import annotations

import errno
import io
import json
import math
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sglaunch.errors import UserError

if TYPE_CHECKING:
    import yaml

KIB = 1024
MIB = 1024 * KIB
# Most that sglaunch reads of a text input it did not write: a profile, a --config
# YAML, an imported script. Real ones are a few KB.
MAX_TEXT_BYTES = 1 * MIB
# A number beyond this means nothing to sglang (sizes, counts and offsets are 64-bit).
MAX_NUMBER = 2**63 - 1
DEFAULT_DEPTH = 64
# YAML values after alias expansion: a --config file sets a few dozen flags.
MAX_YAML_NODES = 100_000
# Longest text shown from a user's input in a message.
SHOWN_CHARS = 120

# C0, DEL, C1, and the two Unicode line separators YAML counts as line breaks.
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# Control characters a multi-line text (notes) may hold.
TEXT_WHITESPACE = "\n\t"


class InputError(UserError):
    """A file or text sglaunch will not read, or cannot read safely: one line, exit 2."""


class NotRegularFile(InputError):
    """A FIFO, device, socket or folder where a file was expected, or a link loop."""


class TooLarge(InputError):
    """More bytes than a file of that kind can hold."""


class TooComplex(InputError):
    """Nested deeper, or expanding to more values, than the limits allow."""


class BadContent(InputError):
    """Not valid text, JSON, TOML or YAML, or a number sglang cannot use."""


# --- showing user input in messages ---------------------------------------------


def escape_controls(text: str, keep: str = "") -> str:
    """`text` with control characters written as escapes (\\n, \\x1b): one line, no
    terminal escape sequences. Characters in `keep` stay as they are."""

    def esc(m: re.Match[str]) -> str:
        ch = m.group(0)
        if ch in keep:
            return ch
        return ch.encode("unicode_escape").decode("ascii")

    return CONTROL.sub(esc, text)


def shown(text: object, limit: int = SHOWN_CHARS) -> str:
    """User input as a message quotes it: control characters escaped, long text cut."""
    s = escape_controls(str(text))
    if len(s) > limit:
        keep = max(limit - 20, 10)
        s = f"{s[: keep // 2]}…{s[-(keep // 2) :]} ({len(s)} characters)"
    return s


def has_control(text: str, allow: str = "") -> bool:
    return any(ch not in allow for ch in CONTROL.findall(text))


# --- what a path is -----------------------------------------------------------------

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def kind_of(mode: int) -> str:
    """'a regular file', 'a folder', 'a FIFO (named pipe)', 'a character device', ..."""
    if stat.S_ISREG(mode):
        return "a regular file"
    return next((name for test, name in _KINDS if test(mode)), "a special file")


def _os_problem(exc: OSError, label: str, path: str) -> InputError:
    """The one-line error for an OSError on `path`."""
    code = exc.errno
    if code == errno.ELOOP:
        return NotRegularFile(f"{label} is a symlink loop; fix or remove the link")
    if code == errno.ENAMETOOLONG:
        return InputError(f"{label}: {exc.strerror or 'File name too long'}; use a shorter path")
    if code == errno.ENOENT:
        if os.path.islink(path):
            return InputError(f"{label} is a symlink to a file that does not exist")
        return InputError(f"{label} does not exist")
    if code == errno.ENOTDIR:
        return InputError(f"{label}: a part of the path is a file, not a folder")
    if code in (errno.EACCES, errno.EPERM):
        return InputError(f"cannot read {label}: permission denied")
    return InputError(f"cannot read {label}: {exc.strerror or exc}")


def path_stat(path: str | os.PathLike[str], label: str | None = None) -> os.stat_result | None:
    """`stat` of `path` (links followed), or None when nothing is there.

    A loop, a name too long, or a folder that cannot be entered is an InputError.
    """
    p = os.fspath(path)
    try:
        return os.stat(p)
    except FileNotFoundError:
        if os.path.islink(p):
            raise _os_problem(
                FileNotFoundError(errno.ENOENT, "dangling"), label or shown(p), p
            ) from None
        return None
    except OSError as exc:
        raise _os_problem(exc, label or shown(p), p) from None


def _refuse_kind(st: os.stat_result, label: str) -> NotRegularFile:
    return NotRegularFile(
        f"{label} is {kind_of(st.st_mode)}, not a regular file; sglaunch reads only regular files"
    )


# --- reading --------------------------------------------------------------------------


def _open_regular(path: str, label: str) -> int:
    """A read-only descriptor of the regular file at `path`; InputError for anything else.

    The kind is checked with `stat` before the open (opening a device can act on it,
    opening a FIFO blocks); O_NONBLOCK covers a FIFO swapped in between, and the
    descriptor's own `fstat` must show the same regular file.
    """
    st = path_stat(path, label)
    if st is None:
        raise InputError(f"{label} does not exist")
    if not stat.S_ISREG(st.st_mode):
        raise _refuse_kind(st, label)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise _os_problem(exc, label, path) from None
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode) or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            raise NotRegularFile(f"{label} changed while sglaunch opened it; try again")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _size_text(n: int) -> str:
    return f"{n // MIB} MB" if n >= MIB else f"{n // KIB} KB" if n >= KIB else f"{n} bytes"


def _read_capped(fd: int, limit: int, label: str, noun: str) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, min(limit + 1 - total, MIB))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise TooLarge(
                f"{label} is over {_size_text(limit)} — far too large for {noun}; is it the right file?"
            )


def read_bytes(
    path: str | os.PathLike[str],
    *,
    limit: int,
    label: str | None = None,
    noun: str = "a file of this kind",
) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them (else TooLarge)."""
    p = os.fspath(path)
    label = label or shown(p)
    fd = _open_regular(p, label)
    try:
        return _read_capped(fd, limit, label, noun)
    except OSError as exc:
        raise _os_problem(exc, label, p) from None
    finally:
        os.close(fd)


def decode_text(data: bytes, label: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadContent(
            f"{label} is not UTF-8 text (byte {exc.start}); is it the right file?"
        ) from None


def read_text(
    path: str | os.PathLike[str],
    *,
    limit: int = MAX_TEXT_BYTES,
    label: str | None = None,
    noun: str = "a file of this kind",
) -> str:
    """The UTF-8 text of the regular file at `path`, at most `limit` bytes of it."""
    label = label or shown(os.fspath(path))
    return decode_text(read_bytes(path, limit=limit, label=label, noun=noun), label)


def read_stream(stream: io.TextIOBase | Any, *, limit: int, label: str, noun: str) -> str:
    """At most `limit` characters from an open text stream (stdin)."""
    text = stream.read(limit + 1)
    if len(text) > limit:
        raise TooLarge(
            f"{label} is over {_size_text(limit)} — far too large for {noun}; is it the right input?"
        )
    return str(text)


class RegularFile:
    """A regular file opened for bounded reads (safetensors: a length, then a header)."""

    def __init__(self, path: str | os.PathLike[str], label: str | None = None) -> None:
        self.path = os.fspath(path)
        self.label = label or shown(self.path)
        self.fd = _open_regular(self.path, self.label)

    def read_exact(self, n: int) -> bytes | None:
        """Exactly `n` bytes, or None at an early end of file."""
        out = bytearray()
        while len(out) < n:
            chunk = os.read(self.fd, min(n - len(out), MIB))
            if not chunk:
                return None
            out += chunk
        return bytes(out)

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> RegularFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --- parsing with limits ----------------------------------------------------------------

# Strings first (a bracket inside one is text), then the brackets that nest.
_JSON_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.S)
_TOML_TOKENS = re.compile(
    r'"""(?:\\[\s\S]|[^\\])*?"""(?:"{1,2}(?!"))?'
    r"|'''[\s\S]*?'''(?:'{1,2}(?!'))?"
    r'|"(?:[^"\\\n]|\\.)*"'
    r"|'[^'\n]*'"
    r"|#[^\n]*"
    r"|[\[\]{}.=,\n]"
)
_OPENERS = "[{"


def _max_nesting(text: str, tokens: re.Pattern[str], limit: int) -> bool:
    """True when brackets outside strings (and comments) nest deeper than `limit`, or a
    dotted TOML key (`a.b.c = 1`, which nests tables too) has more than `limit` parts."""
    if text.count("[") + text.count("{") <= limit and text.count(".") <= limit:
        return False
    depth = 0
    dots = 0  # dots in the current dotted key: "1.5" counts one; = , and a newline end it
    for m in tokens.finditer(text):
        tok = m.group(0)
        if len(tok) != 1:
            continue  # a string or a comment
        if tok == ".":
            dots += 1
            if dots > limit:
                return True
            continue
        dots = 0
        if tok in _OPENERS:
            depth += 1
            if depth > limit:
                return True
        elif tok in "]}":
            depth = max(depth - 1, 0)
    return False


def number_problem(value: object) -> str | None:
    """Why a parsed number is one sglang cannot use (NaN, infinite, beyond 64 bits), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN is not a number sglang can use"
        if math.isinf(value):
            return "an infinite number is not one sglang can use"
        if abs(value) > MAX_NUMBER:
            return f"{value:g} is beyond what sglang can use (at most 2**63)"
    elif isinstance(value, int) and abs(value) > MAX_NUMBER:
        return f"{shown(value, 40)} is beyond what sglang can use (at most 2**63)"
    return None


def _walk(obj: Any, label: str, max_depth: int, what: str) -> None:
    """Check every number and the nesting depth of a parsed value, without recursion.

    TOML's dotted keys (`a.b.c = 1`) nest without a bracket, so depth is checked here too.
    """
    stack: list[tuple[Any, int]] = [(obj, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children: Any = value.values()
        elif isinstance(value, list | tuple):
            children = value
        else:
            problem = number_problem(value)
            if problem:
                raise BadContent(f"{label}: {problem}")
            continue
        if depth >= max_depth and children:
            raise _too_deep(label, max_depth, what)
        stack.extend((c, depth + 1) for c in children)


def _too_deep(label: str, max_depth: int, what: str) -> TooComplex:
    return TooComplex(f"{label} nests deeper than {max_depth} levels, more than any {what}")


class _NumberRefused(ValueError):
    pass


def _usable(value: float) -> float:
    problem = number_problem(value)
    if problem:
        raise _NumberRefused(problem)
    return value


def _json_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > 19:  # before int(), which stops at 4,300 digits and is slow well before
        raise _NumberRefused(f"a {digits}-digit integer is beyond what sglang can use")
    return int(_usable(int(text)))


def _json_float(text: str) -> float:
    return _usable(float(text))


def _json_constant(text: str) -> float:
    raise _NumberRefused(f"{text} is not a number sglang can use")


def parse_json(
    text: str | bytes,
    *,
    label: str,
    max_depth: int = DEFAULT_DEPTH,
    what: str = "JSON file of this kind",
) -> Any:
    """JSON with its nesting measured before parsing and every number checked."""
    if isinstance(text, bytes):
        text = decode_text(text, label)
    if _max_nesting(text, _JSON_TOKENS, max_depth):
        raise _too_deep(label, max_depth, what)
    try:
        return json.loads(
            text, parse_int=_json_int, parse_float=_json_float, parse_constant=_json_constant
        )
    except _NumberRefused as exc:
        raise BadContent(f"{label}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise BadContent(  # the cause stays: a flag's value words its own error from it
            f"{label} is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        ) from exc
    except (ValueError, RecursionError) as exc:  # what the limits above should have caught
        raise BadContent(f"{label} is not valid JSON: {shown(exc, 80)}") from None


def parse_toml(
    text: str,
    *,
    label: str,
    max_depth: int = 16,
    what: str = "profile",
    hint: str = "",
) -> dict[str, Any]:
    """TOML with its nesting measured before parsing, and every number and depth checked after."""
    tail = f"; {hint}" if hint else ""
    if _max_nesting(text, _TOML_TOKENS, max_depth):
        raise TooComplex(
            f"{label} nests deeper than {max_depth} levels, more than any {what}{tail}"
        )
    import tomllib  # only to read TOML: its import costs every command ~2-3 ms

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        reason = escape_controls(str(exc))  # ends with "(at line N, column M)"
        raise BadContent(f"{label} is not valid TOML: {reason}{tail}") from None
    except (ValueError, RecursionError):  # int() refusing a 5,000-digit integer
        raise BadContent(
            f"{label} holds an integer of thousands of digits, beyond what sglang can use{tail}"
        ) from None
    try:
        _walk(doc, label, max_depth, what)
    except InputError as exc:
        raise type(exc)(exc.message + tail) from None
    return doc


def _yaml_loader() -> type[yaml.SafeLoader]:
    import yaml  # yaml (~35 ms): only when YAML is read or written

    # libyaml's parser when present: the pure-Python one takes seconds on a 1 MB file
    base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class BoundedLoader(base):  # type: ignore[valid-type,misc]
        """SafeLoader whose integers are refused before int() sees a 5,000-digit one."""

        def construct_yaml_int(self, node: yaml.Node) -> int:
            digits = sum(ch.isalnum() for ch in str(node.value))
            if digits > 70:  # 2**63 in binary is 64 digits, plus a prefix
                raise _NumberRefused(f"a {digits}-digit integer is beyond what sglang can use")
            return int(super().construct_yaml_int(node))

    BoundedLoader.add_constructor("tag:yaml.org,2002:int", BoundedLoader.construct_yaml_int)
    return BoundedLoader


def _yaml_events_ok(
    text: str, label: str, max_depth: int, max_nodes: int, loader: type[yaml.SafeLoader]
) -> None:
    """Walk the event stream (no recursion, nothing built): depth, and the number of
    values once every alias is expanded, which is what a billion-laughs file inflates."""
    import yaml  # yaml (~35 ms): only when YAML is read or written

    sizes: dict[str, int] = {}  # anchor -> values it expands to
    open_anchors: set[str] = set()
    frames: list[list[Any]] = [[None, 0]]  # [anchor, values so far], the root first
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.AliasEvent):
            anchor = str(event.anchor)
            if anchor in open_anchors:
                raise TooComplex(f"{label}: the YAML alias *{shown(anchor, 40)} refers to itself")
            n = sizes.get(anchor, 1)
        elif isinstance(event, yaml.ScalarEvent):
            n = 1
            if event.anchor:
                sizes[str(event.anchor)] = 1
        elif isinstance(event, yaml.CollectionStartEvent):
            if len(frames) > max_depth:
                raise _too_deep(label, max_depth, "sglang config")
            if event.anchor:
                open_anchors.add(str(event.anchor))
            frames.append([event.anchor, 1])
            continue
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, n = frames.pop()
            if anchor:
                sizes[str(anchor)] = n
                open_anchors.discard(str(anchor))
        else:
            continue
        frames[-1][1] += n
        if frames[-1][1] > max_nodes:
            raise TooComplex(
                f"{label} expands to more than {max_nodes} values (YAML aliases); "
                "an sglang config sets a few dozen flags — is it the right file?"
            )


def parse_yaml(
    text: str,
    *,
    label: str,
    max_depth: int = 32,
    max_nodes: int = MAX_YAML_NODES,
) -> Any:
    """YAML (safe types only) with depth and alias expansion bounded before anything is built."""
    import yaml  # yaml (~35 ms): only when YAML is read or written

    loader = _yaml_loader()
    try:
        _yaml_events_ok(text, label, max_depth, max_nodes, loader)
        data = yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        where = f" (at line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise BadContent(f"{label} is not valid YAML: {escape_controls(problem)}{where}") from None
    except _NumberRefused as exc:
        raise BadContent(f"{label}: {exc}") from None
    except (ValueError, TypeError, RecursionError) as exc:
        raise BadContent(f"{label} holds a value sglang cannot use ({shown(exc, 80)})") from None
    _walk(data, label, max_depth, "sglang config")
    return data


# --- writing ----------------------------------------------------------------------------

_SPECIAL_ROOTS = ("/proc/", "/sys/", "/dev/")


def _special(path: str) -> str | None:
    """/proc, /sys or /dev when `path` lies there (/dev/shm is an ordinary tmpfs)."""
    full = os.path.normpath(os.path.abspath(path)) + "/"
    if full.startswith("/dev/shm/") and full != "/dev/shm/":
        return None
    return next((root[:-1] for root in _SPECIAL_ROOTS if full.startswith(root)), None)


def _through_special(path: str) -> str | None:
    """Where `path`'s symlink chain first enters /proc, /sys or /dev, if it does."""
    hop = path
    for _ in range(40):  # the kernel's own limit on links followed
        root = _special(hop)
        if root is not None:
            return root
        if not os.path.islink(hop):
            return None
        target = os.readlink(hop)
        hop = os.path.join(os.path.dirname(os.path.abspath(hop)), target)
    return None  # a loop: stat reports it


def writable_target(path: str | os.PathLike[str], label: str | None = None) -> Path:
    """Where a write to `path` may go: the path itself when it is new or a regular file,
    the file a symlink points to when that is a regular file; InputError otherwise.

    Never a FIFO, a device, a socket, a folder, or anything reached through /proc,
    /sys or /dev (/proc/self/fd/1 is the terminal, a pipe, or the file a shell
    redirected into; /dev/full is a device).
    """
    p = os.fspath(path)
    label = label or shown(p)
    try:
        special = _through_special(p)
        lst = os.lstat(p)
    except FileNotFoundError:
        lst = None
    except OSError as exc:
        raise _os_problem(exc, label, p) from None
    if special is not None:
        raise NotRegularFile(
            f"{label} leads into {special}, not to a regular file; "
            "sglaunch writes only to a regular file or a new path"
        )
    if lst is None:
        parent = path_stat(os.path.dirname(p) or ".", label)
        if parent is None or not stat.S_ISDIR(parent.st_mode):
            raise InputError(f"{label}: the folder {shown(os.path.dirname(p))} does not exist")
        return Path(p)
    target = p
    if stat.S_ISLNK(lst.st_mode):
        try:
            target = os.path.realpath(p, strict=True)
        except OSError as exc:
            raise _os_problem(exc, label, p) from None
    st = path_stat(target, label)
    if st is None or not stat.S_ISREG(st.st_mode):
        kind = kind_of(st.st_mode) if st is not None else "a link to nothing"
        raise NotRegularFile(
            f"{label} is {kind}; sglaunch writes only to a regular file or a new path"
        )
    return Path(target)


def open_lock(path: str | os.PathLike[str]) -> int:
    """A descriptor for a lock file (created if missing); never blocks on a FIFO put there."""
    p = os.fspath(path)
    st = path_stat(p)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise _refuse_kind(st, shown(p))
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(p, flags, 0o644)
    except OSError as exc:
        raise _os_problem(exc, shown(p), p) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise _refuse_kind(st, shown(p))
    return fd
