"""Import each module named on the command line as the first sglaunch module of a process.

One interpreter starts, loads the third-party libraries sglaunch's modules use (their import
order is not what is tested), and forks a child per module, which imports it and exits: each
child has no sglaunch module loaded before the one it imports, as in a fresh interpreter, for
a fraction of an interpreter's start-up. Prints one line per module that failed; exit 1 then.
"""

from __future__ import annotations

import importlib
import os
import sys

THIRD_PARTY = ("textual.app", "textual.widgets", "textual.containers", "textual.screen", "yaml")


def main(names: list[str]) -> int:
    for lib in THIRD_PARTY:
        importlib.import_module(lib)
    loaded = [m for m in sys.modules if m == "sglaunch" or m.startswith("sglaunch.")]
    assert not loaded, f"a third-party import loaded sglaunch: {loaded}"
    failed = 0
    for name in names:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            try:
                importlib.import_module(name)
                code = 0
            except BaseException as exc:  # the report is the point: any failure at import
                os.write(write, f"{name}: {type(exc).__name__}: {exc}".encode())
                code = 1
            os._exit(code)
        os.close(write)
        with os.fdopen(read, "rb") as fh:
            message = fh.read().decode(errors="replace")
        _, status = os.waitpid(pid, 0)
        if status != 0:
            failed += 1
            print(message or f"{name}: the import ended the process (status {status})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
