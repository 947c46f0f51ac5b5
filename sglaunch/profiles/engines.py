"""A multi-node profile's exports as text and as a file: per-node command lines, a Slurm
batch script, a Kubernetes LeaderWorkerSet, a SkyPilot task. The one exporter `profiles
export` and the TUI's palette share."""

from __future__ import annotations

from pathlib import Path

from sglaunch.atomic import atomic_write
from sglaunch.errors import UserError
from sglaunch.profiles.lws import DEFAULT_IMAGE, to_lws
from sglaunch.profiles.nodes import node_lines
from sglaunch.profiles.profile import Profile
from sglaunch.profiles.skypilot import to_skypilot
from sglaunch.profiles.slurm import to_sbatch
from sglaunch.safeio import InputError, shown

ENGINE_FORMATS = ("slurm", "lws", "skypilot")
# the formats whose file runs as it is (a shell script, a batch script)
EXECUTABLE_FORMATS = ("script", "slurm")
# a node export's file name after the profile's: NAME + this
_SUFFIX = {
    "command": ".nodes.sh",
    "slurm": ".sbatch",
    "lws": ".lws.yaml",
    "skypilot": ".sky.yaml",
}


def engine_export(
    profile: Profile,
    fmt: str,
    *,
    rank: int | None = None,
    image: str | None = None,
    python: str | None = None,
) -> str:
    """The text of a per-node or engine export; UserError (one line) when it cannot be."""
    if fmt == "command":
        if profile.nodes < 2:
            raise UserError(
                f"--node-rank picks one node's line, and profile '{profile.name}' has nodes = 1: "
                "drop --node-rank, or set `nodes = 2` (or more) in the profile"
            )
        return "\n".join(node_lines(profile, rank=rank, python=python)) + "\n"
    if fmt == "slurm":
        return to_sbatch(profile, python=python)
    if fmt == "lws":
        return to_lws(profile, image=image or DEFAULT_IMAGE, python=python)
    return to_skypilot(profile, python=python)


def write_export(path: Path, text: str, fmt: str) -> Path:
    """`text` written to `path` atomically (executable for a script); UserError when it
    cannot be."""
    path = path.expanduser()
    try:
        atomic_write(path, text.encode("utf-8"), mode=0o755 if fmt in EXECUTABLE_FORMATS else None)
    except InputError as exc:
        raise UserError(f"-o {exc.message}") from None
    except OSError as exc:
        raise UserError(f"cannot write {shown(path)}: {exc.strerror or exc}") from None
    return path


def export_nodes(profile: Profile, fmt: str, folder: Path) -> Path:
    """`profile`'s per-node or engine export written into `folder` as NAME.sbatch,
    NAME.lws.yaml, NAME.sky.yaml or NAME.nodes.sh; the path. UserError when it cannot be."""
    text = engine_export(profile, fmt)
    return write_export(folder / f"{profile.name}{_SUFFIX[fmt]}", text, fmt)
