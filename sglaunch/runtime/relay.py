"""The log relay of a detached server: `python -m sglaunch.runtime.relay LOG`.

A detached server must outlive sglaunch, so its output cannot go to sglaunch's pipes
(they would break) nor straight to a file (sglang prints the API key in `server_args=`).
This process reads the server's output on stdin, masks secrets, appends lines to the
log, and exits when the server and all its children have closed the pipe.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from sglaunch.runtime.lines import LineSplitter
from sglaunch.secrets import Masker

SECRETS_ENV = "SGLAUNCH_RELAY_SECRETS"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m sglaunch.runtime.relay LOGFILE", file=sys.stderr)
        return 2
    # The relay ends on EOF only: a stop of the server must not lose its last lines.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    mask = Masker(json.loads(os.environ.pop(SECRETS_ENV, "[]") or "[]"))
    splitter = LineSplitter()
    fd = sys.stdin.fileno()
    with open(argv[0], "a", encoding="utf-8", buffering=1) as log:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except InterruptedError:
                continue
            lines = splitter.feed(chunk) if chunk else splitter.flush()
            if lines:
                log.write("".join(mask(line) + "\n" for line in lines))
            if not chunk:
                return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
