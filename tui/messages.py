"""What workers and the runtime tell the App: each message says what happened, past tense.

Workers (threads) and the monitor's callbacks only post these; the App's `@on` handlers
own the state they change.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from sglaunch.oracle.answer import OracleStatus
    from sglaunch.release import FlagFacts
    from sglaunch.runtime import Diagnosis, MonitorEvent
    from sglaunch.validators.facts import GpuFacts, ModelFacts
    from sglaunch.validators.findings import Finding
    from sglaunch.validators.memory.baseline import MemoryFacts
    from sglaunch.verdict import OracleReply


class GpusProbed(Message):
    def __init__(self, gpu: GpuFacts, memory: MemoryFacts | None = None) -> None:
        super().__init__()
        self.gpu = gpu
        self.memory = memory  # what is known of their start-up cost (calibration)


class ModelLoaded(Message):
    def __init__(
        self, source: str, facts: ModelFacts, started: float, release: str | None = None
    ) -> None:
        super().__init__()
        self.source = source
        self.facts = facts
        self.started = started
        self.release = release  # the sglang release the facts were read for


class ModelFailed(Message):
    def __init__(self, source: str, message: str, *, not_cached: bool = False) -> None:
        super().__init__()
        self.source = source
        self.message = message
        self.not_cached = not_cached  # a repo id sglang will download: still the user's model


class OracleStarted(Message):
    """sglang's check came up, or said why it cannot (`status` None: no client)."""

    def __init__(self, status: OracleStatus | None) -> None:
        super().__init__()
        self.status = status


class OracleAnswered(Message):
    def __init__(self, reply: OracleReply) -> None:
        super().__init__()
        self.reply = reply


class MemoryFactsRead(Message):
    """The calibration store was read again (a launch measured a start-up cost)."""

    def __init__(self, memory: MemoryFacts) -> None:
        super().__init__()
        self.memory = memory


class FlagFactsLoaded(Message):
    """The installed sglang's flags were read, and which release the checks are for."""

    def __init__(self, facts: FlagFacts) -> None:
        super().__init__()
        self.facts = facts


class CachedModelsListed(Message):
    def __init__(self, repos: list[str]) -> None:
        super().__init__()
        self.repos = repos


class ServerReported(Message):
    """The running server's monitor sent an event (on its own thread)."""

    def __init__(self, event: MonitorEvent) -> None:
        super().__init__()
        self.event = event


class ServerNotStarted(Message):
    """A launch failed before any process ran (port taken, no such program, …)."""

    def __init__(self, message: str, diagnosis: Diagnosis | None = None) -> None:
        super().__init__()
        self.message = message
        self.diagnosis = diagnosis


class HostChecked(Message):
    """The host checks before a launch finished (`revision`: the session they were for)."""

    def __init__(self, findings: list[Finding], revision: int) -> None:
        super().__init__()
        self.findings = findings
        self.revision = revision
