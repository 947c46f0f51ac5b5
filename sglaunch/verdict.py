"""The two-tier verdict: the built-in rules at once, then sglang's own resolution.

`TwoTier` owns sglang's check (the oracle client) for its whole life — start, the
latest-request-wins bookkeeping per session revision, retry, close — and turns both tiers
into one `Verdict`: the merged findings and the status line that says which tier spoke.
`check`, `--apply` and the TUI all go through it, so a verdict reads the same everywhere.
The TUI runs the slow calls (`start`, `ask`) in worker threads and hands their results
back; the headless commands call `check`, which does all of it in line.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

from sglaunch.flags.schema import FlagSchema, bundled_schema
from sglaunch.oracle.answer import OracleStatus
from sglaunch.validators.findings import Finding, Severity, sort_findings

if TYPE_CHECKING:
    from sglaunch.oracle.answer import OracleAnswer
    from sglaunch.session import LaunchSession
    from sglaunch.validators.engine import Report
    from sglaunch.validators.facts import GpuFacts


class OracleClient(Protocol):
    """sglang's own resolution: `sglaunch.oracle.client.Oracle`, the shared service, or a fake."""

    def start(self) -> OracleStatus: ...

    def resolve(
        self, argv: Sequence[str], env: Mapping[str, str] | None, gpu: GpuFacts
    ) -> OracleAnswer: ...

    def close(self) -> None: ...


FindingsOf = Callable[["OracleAnswer"], list[Finding]]
# `sglaunch.catalogue.vetting.vet_findings`, imported where an answer is read
VetFindings = Callable[
    [
        Sequence[Finding],
        Sequence[str],
        FlagSchema,
        Callable[[Sequence[str]], "OracleAnswer"],
        str | None,
    ],
    list[Finding],
]


class Phase(StrEnum):
    OFF = "off"  # no sglang check configured (--no-oracle, or none found)
    STARTING = "starting"
    READY = "ready"
    UNAVAILABLE = "unavailable"


class Tone(StrEnum):
    PENDING = "pending"
    OK = "ok"
    WARN = "warn"
    ERROR = "error"


@dataclass(frozen=True)
class OracleRequest:
    """One question for sglang: a session revision's launch."""

    revision: int
    argv: tuple[str, ...]
    env: Mapping[str, str]
    gpu: GpuFacts
    # across nodes every node resolves its own line: the same launch at another
    # --node-rank (a worker for the head's line, the head for a worker's), asked too
    other_rank: int | None = None
    other_argv: tuple[str, ...] = ()


@dataclass(frozen=True)
class OracleReply:
    revision: int
    answer: OracleAnswer | None
    findings: tuple[Finding, ...] = ()
    fault: str = ""  # no verdict: why (the worker restarts on the next request)


@dataclass(frozen=True)
class Verdict:
    """Both tiers on one revision of a launch."""

    findings: tuple[Finding, ...]
    builtin: Report
    answer: OracleAnswer | None  # sglang's answer for this very revision, when in
    status: str  # one line for the screen: which tier decided, and what it said
    tone: Tone
    oracle_status: str  # the short form headless output prints after "sglang check:"
    sglang_version: str | None = None

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def answered(self) -> bool:
        return self.answer is not None and not self.answer.fault


@dataclass
class _State:
    phase: Phase
    reason: str = ""
    version: str | None = None
    asked: int = -1  # the revision last sent
    replied: int = -1  # the revision the kept reply answers
    reply: OracleReply | None = None


class TwoTier:
    """sglang's check for one sglaunch process, and the verdict both tiers give together."""

    def __init__(self, oracle: OracleClient | None, findings_of: FindingsOf | None = None) -> None:
        self.oracle = oracle
        self._findings_of = findings_of
        self._s = _State(Phase.STARTING if oracle is not None else Phase.OFF)
        # a question sent ahead (`send_early`) and how to read its answer
        self._pending: tuple[OracleRequest, Callable[[], OracleAnswer]] | None = None
        if oracle is None:
            self._s.reason = "no sglang interpreter configured"

    # --- the oracle's lifetime ------------------------------------------------------

    @property
    def phase(self) -> Phase:
        return self._s.phase

    @property
    def reason(self) -> str:
        return self._s.reason

    @property
    def version(self) -> str | None:
        return self._s.version

    def switch_off(self, reason: str) -> None:
        """No sglang check for this run (`--no-oracle`): say so in every status."""
        self._s = _State(Phase.OFF, reason=reason)

    def start(self) -> OracleStatus | None:
        """Start sglang's check (blocking: seconds; the TUI calls it in a worker)."""
        if self.oracle is None:
            return None

        try:
            return self.oracle.start()
        except Exception as exc:  # a client bug must not stop the built-in tier
            return OracleStatus(available=False, reason=f"{type(exc).__name__}: {exc}")

    def started(self, status: OracleStatus | None) -> None:
        """Record what `start` returned."""
        if status is None:
            return
        if status.available:
            self._s.phase = Phase.READY
            self._s.version = status.sglang_version
            self._s.reason = ""
        else:
            self._s.phase = Phase.UNAVAILABLE
            self._s.reason = status.reason
        self._s.asked = -1

    def retry(self) -> bool:
        """Look for sglang again (after `sglaunch oracle setup`, say); False when there is no client."""
        if self.oracle is None:
            return False
        self._s.phase = Phase.STARTING
        self._s.reason = ""
        self._s.asked = -1
        self._s.replied = -1
        self._s.reply = None
        return True

    def close(self) -> None:
        if self.oracle is not None:
            try:
                self.oracle.close()
            except Exception:  # closing must never stop an exit
                return

    # --- asking ---------------------------------------------------------------------

    def waits_for(self, session: LaunchSession) -> str | None:
        """Why sglang is not asked about this revision, or None when it can be."""
        if self._s.phase is not Phase.READY:
            return self._s.reason or str(self._s.phase)
        if session.model is None:
            # a repo not in the local cache: sglang would download its config to check it
            return session.model_note or "sglang's check waits for a model"
        if session.issues:
            return "sglang's parser would stop at the flag errors first"
        return None

    def request(self, session: LaunchSession) -> OracleRequest | None:
        """The question to send for the session's current revision, once; None if not now."""
        if self.waits_for(session) is not None or self._s.asked == session.revision:
            return None
        self._s.asked = session.revision
        other = session.other_rank()
        return OracleRequest(
            revision=session.revision,
            argv=tuple(session.argv()),
            env=session.check_env(),
            gpu=session.gpu,
            other_rank=other,
            other_argv=tuple(session.rank_argv(other)) if other is not None else (),
        )

    def send_early(self, session: LaunchSession) -> None:
        """Start sglang's check and send this revision's question now, when the client can
        answer later (`submit`): sglang works it out while the caller builds the rest of its
        output, and `check` reads it. Otherwise nothing happens here. A question sent ahead
        (`send_ahead`) that is this very one stands for it: its answer is this revision's."""
        submit = getattr(self.oracle, "submit", None)
        if submit is None:
            return
        if self._s.phase is Phase.STARTING:
            self.started(self.start())
        request = self.request(session)
        if request is None:
            return
        pending = self._pending
        if pending is not None and _same_question(pending[0], request):
            self._pending = (request, pending[1])
            return
        if pending is not None:
            self._pending = None
            # another launch's answer leaves the connection first; a fault reading it shows
            # on the next question, if at all
            with contextlib.suppress(Exception):
                pending[1]()
        self._submit(submit, request)

    def send_ahead(self, argv: Sequence[str], env: Mapping[str, str], gpu: GpuFacts) -> None:
        """Send sglang's question before there is a session to ask it (`check`: worked out
        from the launch alone, while the rule modules have not loaded yet). `send_early`
        then keeps it only if the session asks the very same question, so an answer is
        never taken for another launch's."""
        submit = getattr(self.oracle, "submit", None)
        if submit is None:
            return
        if self._s.phase is Phase.STARTING:
            self.started(self.start())
        if self._s.phase is not Phase.READY:
            return
        self._submit(submit, OracleRequest(revision=-1, argv=tuple(argv), env=dict(env), gpu=gpu))

    def _submit(
        self, submit: Callable[..., Callable[[], OracleAnswer]], request: OracleRequest
    ) -> None:
        try:
            self._pending = (request, submit(list(request.argv), dict(request.env), request.gpu))
        except Exception:  # a client bug: `check` asks again the usual way
            self._pending = None
            self._s.asked = -1

    def ask(self, request: OracleRequest) -> OracleReply:
        """sglang's answer (blocking; the TUI calls it in a worker thread)."""
        assert self.oracle is not None
        # what reads the answer loads before it is read: sglang is still working out a
        # question sent early, so its wait pays for them (the catalogue, every card)
        from sglaunch.catalogue.vetting import vet_findings
        from sglaunch.oracle.answer_findings import oracle_findings

        pending, self._pending = self._pending, None
        try:
            if pending is not None and pending[0] is request:
                answer = pending[1]()
            else:
                if pending is not None:
                    pending[1]()  # its reply is read off the connection before the next
                answer = self.oracle.resolve(list(request.argv), dict(request.env), request.gpu)
        except Exception as exc:
            return OracleReply(request.revision, None, fault=f"{type(exc).__name__}: {exc}")
        if answer.fault:
            return OracleReply(request.revision, answer, fault=answer.fault)
        answer, request, rank = self._other_rank(answer, request)
        findings = self._findings_of(answer) if self._findings_of else oracle_findings(answer)
        if answer.error is not None:
            findings = _vetted(vet_findings, findings, request, answer, self.oracle)
        if rank is not None:
            findings = [_at_rank(f, rank) for f in findings]
        return OracleReply(request.revision, answer, tuple(findings))

    def _other_rank(
        self, answer: OracleAnswer, request: OracleRequest
    ) -> tuple[OracleAnswer, OracleRequest, int | None]:
        """The line at its other rank, when the line's own was accepted: its rejection is
        the verdict (with the rank that was rejected), else the line's own answer stands."""
        if not answer.ok or request.other_rank is None or self.oracle is None:
            return answer, request, None
        try:
            other = self.oracle.resolve(list(request.other_argv), dict(request.env), request.gpu)
        except Exception:  # the line's own verdict stands without it
            return answer, request, None
        if other.fault or other.ok:
            return answer, request, None
        return other, replace(request, argv=request.other_argv), request.other_rank

    def answered(self, reply: OracleReply, session: LaunchSession) -> bool:
        """Keep `reply` if it answers the session's current revision; False when stale."""
        if reply.revision != session.revision:
            return False
        self._s.replied = reply.revision
        self._s.reply = reply
        if reply.answer is not None and reply.answer.sglang_version:
            self._s.version = reply.answer.sglang_version
        return True

    def check(self, session: LaunchSession) -> Verdict:
        """Both tiers, in line: start sglang's check if needed, ask it, and merge."""
        if self._s.phase is Phase.STARTING:
            self.started(self.start())
        request = self.request(session)
        if request is None and self._pending is not None:
            sent = self._pending[0]
            request = sent if sent.revision == session.revision else None
        if request is not None:
            self.answered(self.ask(request), session)
        return self.verdict(session)

    # --- the verdict ------------------------------------------------------------------

    def reply_for(self, session: LaunchSession) -> OracleReply | None:
        s = self._s
        return s.reply if s.reply is not None and s.replied == session.revision else None

    def verdict(self, session: LaunchSession) -> Verdict:
        report = session.report
        reply = self.reply_for(session)
        answer = reply.answer if reply is not None and not reply.fault else None
        if answer is not None and reply is not None:
            findings = merge_findings(report.findings, answer.ok, reply.findings)
        else:
            extra = list(reply.findings) if reply is not None else []
            findings = sort_findings([*report.findings, *extra])
        status, tone, short = self._status(session, reply, findings)
        return Verdict(
            findings=tuple(findings),
            builtin=report,
            answer=answer,
            status=status,
            tone=tone,
            oracle_status=short,
            sglang_version=self._s.version,
        )

    def _status(
        self, session: LaunchSession, reply: OracleReply | None, findings: Sequence[Finding]
    ) -> tuple[str, Tone, str]:
        s = self._s
        version = s.version or ""
        if s.phase is Phase.OFF:
            return f"sglang check off: {s.reason} — built-in rules only", Tone.WARN, s.reason
        if s.phase is Phase.STARTING:
            return (
                "⋯ starting sglang's own check (built-in rules are live)",
                Tone.PENDING,
                "starting",
            )
        if s.phase is Phase.UNAVAILABLE:
            return (
                f"sglang check unavailable: {s.reason} — built-in rules only",
                Tone.WARN,
                f"unavailable: {s.reason}",
            )
        if reply is not None and reply.fault:
            return (
                f"sglang check failed: {reply.fault} — built-in rules only",
                Tone.WARN,
                f"unavailable: {reply.fault}",
            )
        if reply is None or reply.answer is None:
            waiting = self.waits_for(session)
            if waiting is not None:
                return f"⋯ {waiting}", Tone.PENDING, f"skipped: {waiting}"
            return "⋯ checking with sglang…", Tone.PENDING, "checking"
        answer = reply.answer
        took = f" ({answer.elapsed_s * 1000:.0f} ms)" if answer.elapsed_s else ""
        if not answer.ok:
            return (
                f"✗ confirmed by sglang {version}: it rejects this launch",
                Tone.ERROR,
                f"rejected by sglang {version}{took}",
            )
        # errors sglang's resolution cannot see: they fail later, while the server starts
        later = sum(1 for f in findings if f.severity is Severity.ERROR and f.source == "builtin")
        if later:
            plural = "s" if later != 1 else ""
            return (
                f"! sglang {version} accepts these flags; {later} error{plural} would stop "
                "the launch later",
                Tone.WARN,
                f"accepted by sglang {version}{took}; {later} launch-time error{plural}",
            )
        return (
            f"✓ confirmed by sglang {version}: it accepts this launch",
            Tone.OK,
            f"accepted by sglang {version}{took}",
        )


def _vetted(
    vet_findings: VetFindings,
    findings: Sequence[Finding],
    request: OracleRequest,
    answer: OracleAnswer,
    oracle: OracleClient,
) -> list[Finding]:
    """sglang's error from the catalogue with the one-flag fixes sglang accepts for this line
    (asked of the same oracle; a few questions at most)."""

    def resolve(argv: Sequence[str]) -> OracleAnswer:
        return oracle.resolve(list(argv), dict(request.env), request.gpu)

    schema = bundled_schema(answer.sglang_version)
    return vet_findings(findings, request.argv, schema, resolve, answer.sglang_version)


def _same_question(a: OracleRequest, b: OracleRequest) -> bool:
    """The same launch asked of sglang, whichever revision asked it."""
    return (a.argv, dict(a.env), a.gpu, a.other_rank, a.other_argv) == (
        b.argv,
        dict(b.env),
        b.gpu,
        b.other_rank,
        b.other_argv,
    )


def _at_rank(finding: Finding, rank: int) -> Finding:
    """sglang's finding on the line at another --node-rank: say which node it stops."""
    note = f"sglang's verdict for the node at --node-rank {rank}."
    return replace(finding, detail=f"{note} {finding.detail}" if finding.detail else note)


def merge_findings(
    builtin: Sequence[Finding], answer_ok: bool, oracle_found: Sequence[Finding]
) -> list[Finding]:
    """Both tiers in one list: one problem, one finding. sglang wins where they disagree.

    sglang's error that a built-in finding already names (same code) merges into the
    built-in one, which has the fixes and the card; sglang's words go into its detail.
    """
    # kept out of check's start-up: the engine imports every rule module
    from sglaunch.validators.engine import get_rule

    oracle_errors = [f for f in oracle_found if f.severity is Severity.ERROR]
    merged: list[Finding] = []
    if answer_ok and not oracle_errors:
        for f in builtin:
            rule = get_rule(f.code)
            mirrors = rule.mirrors if rule else ""
            if f.severity is Severity.ERROR and mirrors in ("resolution", "config"):
                # DESIGN: when the tiers disagree, the built-in tier is wrong
                merged.append(
                    replace(
                        f,
                        severity=Severity.WARNING,
                        detail=(f.detail + " " if f.detail else "")
                        + "sglang's own resolution accepted this launch; the built-in rule "
                        "disagrees (please report it).",
                    )
                )
            else:
                merged.append(f)
    else:
        merged.extend(builtin)
    builtin_overrides = {f.override.field: f for f in merged if f.override is not None}
    for f in oracle_found:
        if f.severity is Severity.ERROR:
            same = next((m for m in merged if m.is_error and m.code == f.code), None)
            if same is not None:
                merged = [_confirmed(m, f) if m is same else m for m in merged]
                continue
            merged.append(f)
        elif f.override is not None and f.override.field in builtin_overrides:
            # sglang confirms a silent change the built-in tier predicted
            old = builtin_overrides[f.override.field]
            if old.override is not None and old.override.value == f.override.value:
                merged = [replace(m, source=f.source) if m is old else m for m in merged]
                continue
            merged.append(f)
        else:
            merged.append(f)
    return sort_findings(merged)


def _confirmed(builtin: Finding, sglang: Finding) -> Finding:
    """The built-in finding, marked as sglang's too, with sglang's own text when it differs."""
    detail = builtin.detail
    if sglang.message != builtin.message:
        words = f"sglang's own words: {sglang.message}"
        detail = f"{detail} {words}".strip() if detail else words
    return replace(builtin, source=sglang.source, detail=detail)
