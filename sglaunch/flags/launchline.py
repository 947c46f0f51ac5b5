"""Read a pasted sglang launch line: `python -m sglang.launch_server ...` or `sglang serve ...`.

People paste these from READMEs, shell history and chat: with backslash
continuations, leading `$ `, environment assignments, `nohup`, trailing
redirections. This finds the sglang part and its flags; it never runs anything.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from sglaunch.errors import UserError

_ENV_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SHELL_STOP = {"|", "||", "&&", ";", "&", ">", ">>", "2>", "2>&1", "1>", "&>", "<"}
_WRAPPERS = {"nohup", "exec", "env", "time", "sudo", "command"}


@dataclass
class LaunchLine:
    argv: list[str]
    entry: str = "launch_server"  # or "serve"
    python: str | None = None
    env: dict[str, str] = field(default_factory=dict)


def _strip_comment(line: str) -> str:
    """Cut a shell comment: an unquoted # at the start of a word."""
    quote = ""
    prev = " "
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and prev.isspace():
            return line[:i]
        prev = ch
    return line


def _join_continuations(text: str) -> str:
    lines = []
    for raw in text.replace("\r\n", "\n").split("\n"):
        line = _strip_comment(raw).rstrip()
        stripped = line.lstrip()
        if stripped.startswith("#"):
            continue
        if stripped.startswith("$ "):
            line = stripped[2:]
        lines.append(line[:-1] if line.endswith("\\") else line)
    return " ".join(lines)


def parse_launch_line(text: str) -> LaunchLine:
    """Split a pasted command into sglang's argv; raises UserError when it is not an sglang launch."""
    joined = _join_continuations(text).strip()
    if not joined:
        raise UserError(
            "the launch line is empty: paste a `python -m sglang.launch_server ...` or `sglang serve ...` command"
        )
    try:
        tokens = shlex.split(joined, comments=False)
    except ValueError as exc:
        raise UserError(f"cannot read the launch line ({exc}); check its quotes") from exc

    env: dict[str, str] = {}
    python: str | None = None
    entry: str | None = None
    start = None
    for i, tok in enumerate(tokens):
        if tok == "-m" and i + 1 < len(tokens) and tokens[i + 1] == "sglang.launch_server":
            entry, start = "launch_server", i + 2
            if i > 0 and "python" in tokens[i - 1].rsplit("/", 1)[-1]:
                python = tokens[i - 1]
            break
        if tok.rsplit("/", 1)[-1] == "sglang" and i + 1 < len(tokens) and tokens[i + 1] == "serve":
            entry, start = "serve", i + 2
            if "/" in tok:
                # the script belongs to an environment: name it by its interpreter, the
                # way a launch_server line does (sglaunch.program puts the script back)
                python = tok.rsplit("/", 1)[0] + "/python"
            break
        if tok.endswith("sglang/launch_server.py"):
            entry, start = "launch_server", i + 1
            break
    if entry is None or start is None:
        raise UserError(
            "no sglang launch found in that line: expected `python -m sglang.launch_server ...` or `sglang serve ...`"
        )
    for tok in tokens[: start - (2 if entry == "serve" else 0)]:
        if _ENV_ASSIGN.match(tok) and tok.split("=", 1)[0] not in _WRAPPERS:
            name, value = tok.split("=", 1)
            env[name] = value
    argv: list[str] = []
    for tok in tokens[start:]:
        if tok in _SHELL_STOP or tok.startswith(("2>", "1>", ">", "&>")):
            break
        argv.append(tok)
    if entry == "serve":
        argv = _serve_argv(argv)
    return LaunchLine(argv=argv, entry=entry, python=python, env=env)


def _serve_argv(argv: list[str]) -> list[str]:
    """`sglang serve` strips --model-type and takes a leading positional model path (cli/serve.py)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--model-type":
            i += 2
            continue
        if tok.startswith("--model-type="):
            i += 1
            continue
        out.append(tok)
        i += 1
    if out and not out[0].startswith("-"):
        out = ["--model-path", out[0], *out[1:]]
    return out
