"""What every follower of a server offers its readers: events, the state, the log.

`Monitor` (a server it owns) and `Watcher` (one it attached to) both derive from
`Observed`: subscribers get every event on the follower's threads; `snapshot()` is the
whole state at any time; the log is a bounded ring buffer with a sequence number, so a
reader pulls only what it has not seen.
"""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
from collections import deque
from collections.abc import Callable

from sglaunch.runtime.startup import StartupTracker
from sglaunch.runtime.state import MonitorEvent, MonitorState

Subscriber = Callable[[MonitorEvent], None]


class Observed:
    def __init__(self, log_buffer: int) -> None:
        self._lock = threading.RLock()
        self._subscribers: list[Subscriber] = []
        self._ring: deque[str] = deque(maxlen=log_buffer)
        self._seq = 0

    def _tracker(self) -> StartupTracker:
        """The reducer holding the current run's state."""
        raise NotImplementedError

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call `callback(event)` for every event, on the follower's threads."""
        with self._lock:
            self._subscribers.append(callback)

        def unsubscribe() -> None:
            with self._lock, contextlib.suppress(ValueError):
                self._subscribers.remove(callback)

        return unsubscribe

    def events(self) -> queue.Queue[MonitorEvent]:
        """A queue that receives every event from now on."""
        q: queue.Queue[MonitorEvent] = queue.Queue()
        self.subscribe(q.put)
        return q

    def _emit(self, events: list[MonitorEvent]) -> None:
        if not events:
            return
        with self._lock:
            subs = list(self._subscribers)
        for ev in events:
            for sub in subs:
                with contextlib.suppress(Exception):
                    sub(ev)

    def snapshot(self) -> MonitorState:
        with self._lock:
            state = self._tracker().state.copy()
            state.log_lines = self._seq
            return state

    def log_tail(self, n: int = 200) -> list[str]:
        with self._lock:
            return list(itertools.islice(self._ring, max(len(self._ring) - n, 0), None))

    def lines_since(self, seq: int) -> tuple[int, list[str]]:
        """(current sequence number, the lines after `seq` still in the ring buffer)."""
        with self._lock:
            missing = min(self._seq - seq, len(self._ring))
            start = len(self._ring) - missing
            lines = list(itertools.islice(self._ring, start, None)) if missing > 0 else []
            return self._seq, lines
