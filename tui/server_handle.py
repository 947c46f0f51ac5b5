"""What the monitor screen asks of the server it shows: below both the screen and the App's
`ServerControl`, which creates the screen and hands itself in."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from sglaunch.runtime import Monitor
    from sglaunch.runtime.watch import Watcher


class ServerHandle(Protocol):
    @property
    def monitor(self) -> Monitor | Watcher | None:
        """The server being followed (a Watcher while attached), None before a start."""

    @property
    def owned(self) -> bool:
        """False while watching a server sglaunch did not start here (attach)."""

    def stop(self) -> None: ...
