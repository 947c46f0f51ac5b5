"""`sglaunch profiles`: list, show, export, import, delete and compare saved launch profiles.

    sglaunch profiles list [--json]
    sglaunch profiles show NAME [--json]
    sglaunch profiles export NAME --format yaml|command|script|slurm|lws|skypilot
                             [--node-rank R] [--image IMG] [--python PY] [-o FILE]
    sglaunch profiles import FILE-OR-COMMAND|- [--name NAME] [--force]
    sglaunch profiles delete NAME [--yes]
    sglaunch profiles diff A B

Data (listings, exports, --json) goes to stdout; messages to stderr.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from sglaunch.cli.args import Parser
from sglaunch.cli.render import Painter
from sglaunch.errors import UserError
from sglaunch.exitcodes import ExitCode
from sglaunch.facts.model import ModelNotCached, not_cached_note, resolve_model_dir
from sglaunch.profiles.argvform import Imported
from sglaunch.profiles.command import import_text, looks_like_launch, to_command, to_script
from sglaunch.profiles.diff import diff
from sglaunch.profiles.engines import ENGINE_FORMATS, engine_export, write_export
from sglaunch.profiles.launch import sglang_argv
from sglaunch.profiles.lws import DEFAULT_IMAGE
from sglaunch.profiles.nodes import check_python, node_lines
from sglaunch.profiles.profile import Profile, validate_name
from sglaunch.profiles.sglang_yaml import is_sglang_config, to_yaml
from sglaunch.profiles.store import ProfileStore
from sglaunch.profiles.tomlform import profile_from_toml
from sglaunch.safeio import (
    MAX_TEXT_BYTES,
    InputError,
    escape_controls,
    path_stat,
    read_stream,
    read_text,
    shown,
)

FORMATS = ("yaml", "command", "script", "slurm", "lws", "skypilot")
# a file name never holds a newline, and no path is longer than PATH_MAX
_MAX_ARG_PATH = 4096
_NOT_A_PROFILE = (
    "is not a profile: not sglang --config YAML (lines like `tp-size: 2`), not a launch "
    "line or script (python -m sglang.launch_server ...), not a profile .toml"
)


def parser() -> Parser:
    p = Parser(
        prog="sglaunch profiles",
        description="Saved launch profiles: a model, sglang's flags, environment and GPUs.",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True

    ls = sub.add_parser("list", help="every profile, with its model and when it changed")
    ls.add_argument("--json", action="store_true", help="a JSON list on stdout")

    show = sub.add_parser("show", help="one profile: model, GPUs, environment, flags")
    show.add_argument("name")
    show.add_argument("--json", action="store_true", help="the profile as JSON on stdout")

    ex = sub.add_parser(
        "export",
        help="as sglang --config YAML, a command line, a bash script, or for Slurm, "
        "a Kubernetes LeaderWorkerSet or SkyPilot (multi-node profiles)",
        epilog="example: sglaunch profiles export sala-tp2 --format yaml -o sala-tp2.yaml",
    )
    ex.add_argument("name")
    ex.add_argument("--format", "-f", choices=FORMATS, required=True)
    ex.add_argument(
        "--node-rank",
        type=int,
        metavar="R",
        help="--format command: only node R's line (multi-node profiles)",
    )
    ex.add_argument(
        "--image",
        metavar="IMG",
        help=f"--format lws: the container image (default {DEFAULT_IMAGE})",
    )
    ex.add_argument(
        "--python",
        metavar="PY",
        help="the interpreter on the nodes (default: the profile's, else python3)",
    )
    ex.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically)")

    im = sub.add_parser(
        "import",
        help="from sglang YAML, a launch line, a script, or - for stdin",
        epilog=(
            'example: sglaunch profiles import "python -m sglang.launch_server '
            '--model-path X --tp 2" --name x'
        ),
    )
    im.add_argument(
        "source",
        metavar="FILE-OR-COMMAND",
        help="a .yaml/.yml sglang config, a script or file with a launch line, a profile .toml, "
        "a quoted launch line, or - for stdin",
    )
    im.add_argument("--name", help="the profile's name (default: from the file or the model)")
    im.add_argument("--force", action="store_true", help="replace a profile with that name")

    rm = sub.add_parser("delete", help="delete a profile (kept as NAME.toml.bak)")
    rm.add_argument("name")
    rm.add_argument("--yes", "-y", action="store_true", help="do not ask")

    df = sub.add_parser("diff", help="what differs between two profiles")
    df.add_argument("a")
    df.add_argument("b")
    return p


def run(argv: Sequence[str], *, stdin: TextIO | None = None) -> int:
    args = parser().parse_args(list(argv))
    store = ProfileStore()
    out, err = sys.stdout, sys.stderr
    if args.command == "list":
        return _list(store, args.json, out, err)
    if args.command == "show":
        return _show(store, args.name, args.json, out)
    if args.command == "export":
        return _export(
            store,
            args.name,
            args.format,
            args.output,
            out,
            err,
            rank=args.node_rank,
            image=args.image,
            python=args.python,
        )
    if args.command == "import":
        return _import(store, args.source, args.name, args.force, stdin or sys.stdin, err)
    if args.command == "delete":
        return _delete(store, args.name, args.yes, stdin or sys.stdin, err)
    return _diff(store, args.a, args.b, out, err)


def _when(mtime: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(mtime))


def _list(store: ProfileStore, as_json: bool, out: TextIO, err: TextIO) -> int:
    infos = store.list()
    if as_json:
        rows = [
            {
                "name": i.name,
                "model": i.model,
                "path": str(i.path),
                "mtime": i.mtime,
                "error": i.error,
            }
            for i in infos
        ]
        print(json.dumps(rows, indent=2), file=out)
        return int(ExitCode.OK)
    if not infos:
        print(
            f"no profiles yet in {store.root}; import one with "
            '`sglaunch profiles import "python -m sglang.launch_server ..." --name NAME`',
            file=err,
        )
        return int(ExitCode.OK)
    names = {i.name: escape_controls(i.name) for i in infos}  # a file name can hold anything
    width = max(len(n) for n in names.values())
    for i in infos:
        what = (i.model or "") if i.error is None else f"BROKEN: {i.error}"
        print(f"{names[i.name]:<{width}}  {_when(i.mtime)}  {escape_controls(what)}", file=out)
    broken = sum(1 for i in infos if i.error)
    if broken:
        print(f"{broken} profile(s) cannot be read; fix or delete them", file=err)
    return int(ExitCode.OK)


def _model_status(profile: Profile) -> str | None:
    """Why the profile's model cannot be found now, or None."""
    if not profile.model:
        return "no model set"

    try:
        resolve_model_dir(profile.model)
    except ModelNotCached as exc:
        return not_cached_note(exc.repo_id)  # a valid launch: sglang downloads it
    except UserError as exc:
        return exc.message
    return None


def profile_json(profile: Profile) -> dict[str, Any]:
    v = profile.validated
    return {
        "name": profile.name,
        "model": profile.model,
        "entry": profile.entry,
        "sglang_python": profile.sglang_python,
        "gpus": {
            "cuda_visible_devices": profile.gpus.cuda_visible_devices,
            "preset": profile.gpus.preset,
        },
        "flags": profile.flags,
        "env": profile.env,
        "secrets": profile.secrets,
        "notes": profile.notes,
        "nodes": profile.nodes,
        "validated": None
        if v is None
        else {
            "sglang_version": v.sglang_version,
            "gpu_names": v.gpu_names,
            "gpu_count": v.gpu_count,
            "at": v.at.isoformat(),
        },
        "argv": sglang_argv(profile),
    }


def _show(store: ProfileStore, name: str, as_json: bool, out: TextIO) -> int:
    profile = store.load(name)
    problem = _model_status(profile)
    if as_json:
        data = profile_json(profile)
        data["model_problem"] = problem
        print(json.dumps(data, indent=2, default=str), file=out)
        return int(ExitCode.OK)
    paint = Painter(out)
    rows: list[tuple[str, str]] = [("model", profile.model or "(none)")]
    if problem:
        rows.append(("", paint(f"! {problem}", "33")))
    rows.append(("entry", profile.entry))
    if profile.nodes > 1:
        rows.append(("nodes", f"{profile.nodes} (one server across them)"))
    if profile.sglang_python:
        rows.append(("sglang python", profile.sglang_python))
    if profile.gpus.cuda_visible_devices is not None:
        rows.append(("GPUs", f"CUDA_VISIBLE_DEVICES={profile.gpus.cuda_visible_devices}"))
    if profile.gpus.preset:
        rows.append(("planned for", profile.gpus.preset))
    for k, value in profile.env.items():
        rows.append(("env", f"{k}={value}"))
    for dest, var in profile.secrets.items():
        rows.append(
            ("secret", f"{dest} from ${var}" + ("" if os.environ.get(var) else " (not set)"))
        )
    if profile.validated:
        done = profile.validated
        gpus = ", ".join(done.gpu_names) or "?"
        rows.append(
            (
                "validated",
                f"{done.at.isoformat()} with sglang {done.sglang_version} on {done.gpu_count}× {gpus}",
            )
        )
    print(paint.bold(f"profile {profile.name}") + paint.dim(f"  {store.path(name)}"), file=out)
    for label, value in rows:
        print(f"  {label:<14}{escape_controls(value, keep=chr(27) if paint.on else '')}", file=out)
    if profile.notes:
        print("  notes", file=out)
        for line in profile.notes.splitlines():
            print(f"    {escape_controls(line, keep=chr(9))}", file=out)
    print("", file=out)
    if profile.nodes > 1:
        try:
            lines = node_lines(profile)  # one per node: the line alone would start one node
        except UserError as exc:
            lines = [f"# {exc.message}"]
        print("\n".join(lines), file=out)
    else:
        print(to_command(profile), file=out)
    return int(ExitCode.OK)


def _export(
    store: ProfileStore,
    name: str,
    fmt: str,
    output: str | None,
    out: TextIO,
    err: TextIO,
    *,
    rank: int | None = None,
    image: str | None = None,
    python: str | None = None,
) -> int:
    # options that mean nothing for the format are refused before anything is read
    if rank is not None and fmt != "command":
        raise UserError(
            f"--node-rank picks one line of --format command; --format {fmt} "
            "writes every node's rank itself: drop --node-rank"
        )
    if image is not None and fmt != "lws":
        raise UserError(f"--image is for --format lws (a container image); drop it for {fmt}")
    if python is not None and fmt in ("yaml",):
        raise UserError("--python is for command lines and engine exports; a YAML config has none")
    if python is not None:
        check_python(python)
    profile = store.load(name)
    warnings: list[str] = []
    if fmt in ENGINE_FORMATS or (fmt == "command" and (profile.nodes > 1 or rank is not None)):
        text = engine_export(profile, fmt, rank=rank, image=image, python=python)
    elif fmt == "yaml":
        if output and Path(output).suffix.lower() not in (".yaml", ".yml"):
            raise UserError(f"-o {output}: sglang reads --config only from a .yaml or .yml file")
        exported = to_yaml(profile, config_name=Path(output).name if output else None)
        text, warnings = exported.text, exported.warnings
    elif fmt == "command":
        text = to_command(profile, python=python) + "\n"
    else:
        text = to_script(profile, python=python)
    for w in warnings:
        print(f"sglaunch: note: {w}", file=err)
    if output is None:
        out.write(text)
        return int(ExitCode.OK)
    path = write_export(Path(output), text, fmt)
    print(f"wrote {shown(path)}", file=err)
    return int(ExitCode.OK)


def _read_source(source: str, stdin: TextIO) -> tuple[str, str, Path | None, bool | None]:
    """(text, label for messages, folder for relative --config, True if YAML by its name).

    A source is a file when there is one by that name; a FIFO, device or socket is
    refused by name (reading it would block), and a name the file system refuses
    (too long, a loop) is a launch line if it reads like one.
    """
    if source == "-":
        text = read_stream(stdin, limit=MAX_TEXT_BYTES, label="stdin", noun="a profile")
        return text, "stdin", None, None
    label = shown(source)
    st = None
    if "\n" not in source and len(source) < _MAX_ARG_PATH:
        try:
            st = path_stat(Path(source).expanduser(), label)
        except InputError:
            if not looks_like_launch(source):
                raise
    if st is not None:
        path = Path(source).expanduser()
        if stat.S_ISDIR(st.st_mode):
            raise UserError(f"{label} is a folder; give a .yaml file, a script or a launch line")
        text = read_text(path, limit=MAX_TEXT_BYTES, label=label, noun="a profile")
        is_yaml = True if path.suffix.lower() in (".yaml", ".yml") else None
        return text, str(path), path.parent, is_yaml
    if looks_like_launch(source):
        return source, "the launch line", None, False
    raise UserError(
        f"no such file {label!r}; give a .yaml/.yml file, a script, a quoted launch line "
        '("python -m sglang.launch_server ..."), or - for stdin'
    )


def _import_guessed(text: str, name: str | None, label: str, base_dir: Path | None) -> Imported:
    """A file or stdin of no telling name: a launch line or script if it reads like one,
    else sglang YAML; anything else is "not a profile", quoting none of its content."""
    if looks_like_launch(text):
        return import_text(text, name=name, source=label, yaml_hint=False, base_dir=base_dir)
    try:
        return import_text(text, name=name, source=label, yaml_hint=True, base_dir=base_dir)
    except UserError as exc:
        if is_sglang_config(text):
            raise
        raise UserError(f"{shown(label)} {_NOT_A_PROFILE}", exc.code) from None


def _import(
    store: ProfileStore,
    source: str,
    name: str | None,
    force: bool,
    stdin: TextIO,
    err: TextIO,
) -> int:
    if name is not None:
        if not name:
            raise UserError(
                "--name is empty: give the profile a name (letters, digits, '-', '_', '.')"
            )
        validate_name(name)
    text, label, base_dir, is_yaml = _read_source(source, stdin)
    if name is None and base_dir is not None:
        name = Path(label).stem  # a file names its profile: sala-tp2.yaml -> sala-tp2
    if base_dir is not None and Path(label).suffix.lower() == ".toml":
        # a profile file someone shared: read it as a profile, save it as a new one
        shared = profile_from_toml(
            text.encode("utf-8"), name=validate_name(name or ""), path=Path(label)
        )
        imported = Imported(profile=shared)
    elif is_yaml is None:
        imported = _import_guessed(text, name, label, base_dir)
    else:
        imported = import_text(text, name=name, source=label, yaml_hint=is_yaml, base_dir=base_dir)
    profile = imported.profile
    if store.exists(profile.name) and not force:
        raise UserError(
            f"profile '{profile.name}' already exists; choose another --name or replace it with --force"
        )
    store.save(profile, force=force)
    for w in imported.warnings:
        print(f"sglaunch: warning: {w}", file=err)
    print(f"saved profile '{profile.name}' ({store.path(profile.name)})", file=err)
    return int(ExitCode.OK)


def _delete(store: ProfileStore, name: str, yes: bool, stdin: TextIO, err: TextIO) -> int:
    path = store.path(name)
    if not (store.exists(name) or path.is_symlink()):
        raise UserError(f"no profile named {name!r} (see `sglaunch profiles list`)")
    if not yes:
        if not (hasattr(stdin, "isatty") and stdin.isatty()):
            raise UserError(f"not deleting profile '{name}' without --yes (no terminal to ask on)")
        print(f"delete profile '{name}' ({path})? [y/N] ", end="", file=err, flush=True)
        answer = stdin.readline().strip().lower()
        if answer not in ("y", "yes"):
            print("kept it", file=err)
            return int(ExitCode.OK)
    backup = store.delete(name)
    print(f"deleted profile '{name}' (its last version is kept in {backup})", file=err)
    return int(ExitCode.OK)


def _show_value(value: Any) -> str:
    if value is None:
        return "(not set)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _diff(store: ProfileStore, a: str, b: str, out: TextIO, err: TextIO) -> int:
    left, right = store.load(a), store.load(b)
    lines = diff(left, right)
    if not lines:
        print(f"profiles '{a}' and '{b}' launch the same way", file=err)
        return int(ExitCode.OK)
    paint = Painter(out)
    width = max(len(d.label) for d in lines)
    for d in lines:
        mark, color = {"added": ("+", "32"), "removed": ("-", "31"), "changed": ("~", "33")}[d.kind]
        print(
            paint(f"{mark} {d.label:<{width}}", color)
            + f"  {_show_value(d.old)} → {_show_value(d.new)}",
            file=out,
        )
    return int(ExitCode.OK)
