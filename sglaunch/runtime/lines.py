"""Bytes from a pipe to text lines, splitting on `\\r` too: tqdm redraws its bar with `\\r`."""

from __future__ import annotations

import codecs
import re

_BREAK = re.compile(r"\r\n|\r|\n")
# A stream that never breaks its lines must not grow memory without bound.
MAX_PARTIAL = 1 << 20


class LineSplitter:
    """Incremental: a line or a multi-byte character may span two reads."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._partial = ""

    def feed(self, data: bytes) -> list[str]:
        text = self._partial + self._decoder.decode(data)
        if "\r" not in text and "\n" not in text:
            if len(text) > MAX_PARTIAL:
                self._partial = ""
                return [text]
            self._partial = text
            return []
        parts = _BREAK.split(text)
        self._partial = parts.pop()
        # "\r\n" split across two reads leaves an empty piece; so does tqdm's leading "\r".
        return [p for p in parts if p]

    def flush(self) -> list[str]:
        text = self._partial + self._decoder.decode(b"", final=True)
        self._partial = ""
        return [p for p in _BREAK.split(text) if p]
