"""The compiled methods of dataclasses, kept between processes, as bytecode is.

Python 3.11 and 3.12 make a dataclass's methods (__init__, __repr__, __eq__, __hash__,
a frozen class's __setattr__ and __delattr__) by compiling generated source text, one
`exec` per method, every time the class is created: about 0.5 ms a class, ~35 ms of the
~0.2 s a `sglaunch check` takes (70 dataclasses: the facts, the rules, the memory plan).
`install` gives the dataclasses module an `exec` that compiles each text once and keeps
the code in a file beside sglaunch's own bytecode (same folder, so the same trust as a
.pyc), keyed by the exact text: every method is the one its text compiles to, only not
compiled again. Python 3.13 builds a class's methods in one `exec`: nothing is done there.
"""

from __future__ import annotations

import atexit
import builtins
import marshal
import os
import sys
from typing import Any

from sglaunch.kept_blobs import KeptBlobs

# Past this many texts (~1.4 KB each: classes of older versions of sglaunch, of other
# programs' runs) a file keeps only what the process writing it used (KeptBlobs.write):
# every process reads the whole file, ~1 ms per 600 texts. A check uses ~400, the TUI and
# the CLI ~550.
MAX_TEXTS = 1500


class CodeCache(KeptBlobs):
    """Code objects by the source text they were compiled from, read from `path` once;
    what was compiled anew is written back by `save`."""

    def exec(self, source: Any, globals: dict[str, Any] | None = None, locals: Any = None) -> None:
        """`exec` as the builtin does it, a source text compiled only the first time."""
        if not isinstance(source, str):
            builtins.exec(source, globals, locals)
            return
        code = None
        blob = self.find(source)
        if blob is not None:
            try:
                code = marshal.loads(blob)
            except (EOFError, ValueError, TypeError):
                code = None
            else:
                self.used.add(source)
        if code is None:
            # dont_inherit: compiled as the dataclasses module's own exec compiles it, with
            # no __future__ flag of this module's
            code = compile(source, "<string>", "exec", dont_inherit=True)
            self.new[source] = marshal.dumps(code)
        builtins.exec(code, globals, locals)

    def save(self) -> None:
        self.write(MAX_TEXTS)


def cache_path(folder: str | None = None) -> str:
    """The file for this interpreter's bytecode (its cache tag and optimisation level)."""
    if folder is None:
        folder = os.path.join(os.path.dirname(os.path.dirname(__file__)), "__pycache__")
    tag = sys.implementation.cache_tag or "python"
    opt = f".opt-{sys.flags.optimize}" if sys.flags.optimize else ""
    return os.path.join(folder, f"dataclass-methods.{tag}{opt}.marshal")


def install(folder: str | None = None) -> CodeCache | None:
    """Route the dataclasses module's `exec` through a `CodeCache` (once per process);
    written back at exit unless bytecode is not written (PYTHONDONTWRITEBYTECODE)."""
    import dataclasses

    if sys.version_info >= (3, 13) or not hasattr(dataclasses, "_create_fn"):
        return None
    current = vars(dataclasses).get("exec")
    if current is not None:  # installed already (or another override): never stacked
        owner = getattr(current, "__self__", None)
        return owner if isinstance(owner, CodeCache) else None
    cache = CodeCache(cache_path(folder))
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]
    if not sys.dont_write_bytecode:
        atexit.register(cache.save)
    return cache
