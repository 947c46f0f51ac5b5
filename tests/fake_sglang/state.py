"""What the main process shares between its threads, and the scheduler-died error."""

from __future__ import annotations

import threading


class SchedulerDied(Exception):
    """The text Python prints for the uncaught RuntimeError from _wait_for_scheduler_ready."""


class ServerState:
    STARTING, UP, UNHEALTHY = "Starting", "Up", "UnHealthy"

    def __init__(self) -> None:
        self.status = self.STARTING
        self.gracefully_exit = False
        self.first_generate = False
        self.running = 0
        self.queue = 0
        self.token_usage = 0.0
        self.gen_tps = 0.0
        self.inflight = 0
        self.rids: list[str] = []
        self.forward_iter = 0
        self.lock = threading.Lock()
