"""What the oracle says: its status, and its answer for one launch line."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class OracleStatus:
    """Whether sglang's own resolution can be asked; `reason` is one line when it cannot."""

    available: bool
    reason: str = ""
    sglang_version: str | None = None
    python: str | None = None
    # seconds the worker took to import sglang and to start in all
    import_s: float | None = None
    start_s: float | None = None


@dataclass(frozen=True)
class OracleError:
    """The exception sglang raised: its type, exact message, and where (relative to sglang/)."""

    type: str
    message: str
    where: str = ""  # "srt/arg_groups/model_overrides/minicpm.py:18"
    # "parse" (argparse, prepare_server_args), "resolve" (resolve_once),
    # "emulation" or "report" (the oracle's own steps around them)
    stage: str = ""
    exit_code: int | None = None  # argparse's SystemExit status
    traceback: str = ""

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> OracleError:
        code = d.get("exit_code")
        return cls(
            type=str(d.get("type") or "Exception"),
            message=str(d.get("message") or ""),
            where=str(d.get("where") or ""),
            stage=str(d.get("stage") or ""),
            exit_code=int(code) if isinstance(code, int) else None,
            traceback=str(d.get("traceback") or ""),
        )

    def to_json(self) -> dict[str, Any]:
        """Every field, as from_json reads it back."""
        return {
            "type": self.type,
            "message": self.message,
            "where": self.where,
            "stage": self.stage,
            "exit_code": self.exit_code,
            "traceback": self.traceback,
        }


@dataclass(frozen=True)
class OracleAnswer:
    """sglang's verdict on one launch line, or why there is none (`fault`).

    `ok` with `resolved`: sglang accepts it, and `changed` holds every field
    resolution moved, as (asked, resolved). Not `ok` with `error`: sglang
    rejects it. Not `ok` with `fault`: the oracle could not ask sglang.
    """

    ok: bool
    error: OracleError | None = None
    resolved: dict[str, Any] | None = None
    changed: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    # the dests the launch line set explicitly (sglang's parser, defaults suppressed)
    explicit: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    sglang_version: str | None = None
    fault: str = ""
    timed_out: bool = False
    worker_died: bool = False
    timing: dict[str, float] = field(default_factory=dict)
    elapsed_s: float = 0.0
    # sglang's own pool sizing under emulated memory, when the request asked (memory_probe.py)
    memory: dict[str, Any] | None = None

    @property
    def answered(self) -> bool:
        """True when sglang gave a verdict (accepted or rejected)."""
        return not self.fault

    @classmethod
    def from_json(
        cls, d: Mapping[str, Any], *, sglang_version: str | None, elapsed_s: float = 0.0
    ) -> OracleAnswer:
        error = d.get("error")
        changed = d.get("changed") or {}
        timing = {k: float(v) for k, v in (d.get("timing") or {}).items()}
        if "child_s" in d:
            timing["child_s"] = float(d["child_s"])
        return cls(
            ok=bool(d.get("ok")),
            error=OracleError.from_json(error) if isinstance(error, Mapping) else None,
            resolved=d.get("resolved") if isinstance(d.get("resolved"), dict) else None,
            changed={str(k): (v[0], v[1]) for k, v in changed.items()},
            explicit=tuple(d.get("explicit") or ()),
            warnings=tuple(str(w) for w in d.get("warnings") or ()),
            sglang_version=sglang_version,
            fault=str(d.get("fault") or ""),
            timed_out=bool(d.get("timed_out")),
            worker_died=bool(d.get("worker_died")),
            timing=timing,
            elapsed_s=elapsed_s,
            memory=d.get("memory") if isinstance(d.get("memory"), dict) else None,
        )

    @classmethod
    def failed(
        cls,
        fault: str,
        *,
        sglang_version: str | None = None,
        timed_out: bool = False,
        worker_died: bool = False,
    ) -> OracleAnswer:
        return cls(
            ok=False,
            fault=fault,
            sglang_version=sglang_version,
            timed_out=timed_out,
            worker_died=worker_died,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "error": None if self.error is None else self.error.to_json(),
            "resolved": self.resolved,
            "changed": {k: list(v) for k, v in self.changed.items()},
            "explicit": list(self.explicit),
            "warnings": list(self.warnings),
            "sglang_version": self.sglang_version,
            "fault": self.fault or None,
            "timed_out": self.timed_out,
            "worker_died": self.worker_died,
            "timing": dict(self.timing),
            "elapsed_s": self.elapsed_s,
            "memory": self.memory,
        }
