"""Where the Hugging Face cache is: the folders `HF_HUB_CACHE`, `HF_HOME` and XDG point to.

Apart from the model facts so that the TUI knows them before its first frame without
loading the config readers.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def hf_cache_dirs(env: Mapping[str, str]) -> list[Path]:
    dirs = []
    if env.get("HF_HUB_CACHE"):
        dirs.append(Path(env["HF_HUB_CACHE"]))
    if env.get("HF_HOME"):
        dirs.append(Path(env["HF_HOME"]) / "hub")
    xdg = env.get("XDG_CACHE_HOME")
    dirs.append((Path(xdg) if xdg else Path.home() / ".cache") / "huggingface" / "hub")
    return dirs
