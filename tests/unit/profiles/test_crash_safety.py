"""A process killed in the middle of a save leaves the old profile or the new one, never a
broken file, and the next save works (its lock died with it, its temporary file is swept)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from sglaunch.profiles import Profile, ProfileStore

ROOT = Path(__file__).resolve().parents[3]
BIG = 200_000  # large enough that a non-atomic write is caught half-done

CHILD = f"""
import random, sys, time
from sglaunch import atomic
from sglaunch.profiles import ProfileStore

# sleep at every step of the write, so SIGKILL lands inside one
atomic._pause_hook = lambda stage: time.sleep(random.uniform(0, 0.004))
store = ProfileStore()
p = store.load("p")
print("ready", flush=True)
i = 0
while True:
    i += 1
    version = "ab"[i % 2]
    p.flags["max_running_requests"] = {{"a": 1, "b": 2}}[version]
    p.notes = version * {BIG}
    store.save(p)
"""


def version_of(p: Profile) -> str:
    value = p.flags["max_running_requests"]
    expected = {1: "a", 2: "b"}[value]
    assert p.notes == expected * BIG, "notes and flags from different versions"
    return expected


def test_sigkill_during_saves_never_leaves_a_broken_profile() -> None:
    store = ProfileStore()
    store.save(Profile(name="p", model="/m", flags={"max_running_requests": 1}, notes="a" * BIG))
    rng = random.Random(6)
    seen: set[str] = set()
    for _ in range(12):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            cwd=ROOT,
        )
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.25))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        # the file parses and is one whole version
        seen.add(version_of(store.load("p")))
        if store.backup_path("p").exists():
            backup = store.backup_path("p").read_bytes()
            assert b"max_running_requests" in backup and len(backup) > BIG
    # the next save takes the lock the killed child held and sweeps its temp file
    p = store.load("p")
    store.save(p)
    leftovers = [f.name for f in store.root.iterdir() if f.name.endswith(".tmp")]
    assert leftovers == []
    assert seen <= {"a", "b"}
