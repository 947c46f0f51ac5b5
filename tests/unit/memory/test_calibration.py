"""The calibration store: round trip, running mean, corrupt files, bounds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sglaunch.errors import UserError
from sglaunch.memory import calibration

GIB = 1 << 30
H100 = "NVIDIA H100 80GB HBM3"


def test_round_trip_and_running_mean(tmp_path: Path) -> None:
    store = tmp_path / "cal.json"
    calibration.record(H100, "575.57.08", 2, 3 * GIB, source="run-a", path=store)
    cal = calibration.record(H100, "575.57.08", 2, 4 * GIB, source="run-b", path=store)
    assert (cal.samples, cal.startup_cost_bytes) == (2, int(3.5 * GIB))
    calibration.record(H100, "575.57.08", 8, 5 * GIB, path=store)
    calibration.record(H100, "580.00", 2, 9 * GIB, path=store)  # another driver: another key
    costs, source = calibration.costs_for(H100, "575.57.08", store)
    assert costs == {2: int(3.5 * GIB), 8: 5 * GIB}
    assert str(store) in source
    data = json.loads(store.read_text())
    assert data["schema_version"] == 1 and len(data["entries"]) == 3
    assert not list(tmp_path.glob(".cal.json.*"))  # no temporary file left behind


def test_the_store_lives_in_the_user_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SGLAUNCH_HOME", str(tmp_path))
    calibration.record(H100, "d", 1, GIB)
    assert (tmp_path / "data" / calibration.FILE_NAME).is_file()


@pytest.mark.parametrize(
    "content",
    ["{not json", "[]", '{"entries": 3}', "\xff\xfe"],
)
def test_a_corrupt_store_is_one_line_and_never_overwritten(tmp_path: Path, content: str) -> None:
    store = tmp_path / "cal.json"
    store.write_text(content, encoding="utf-8", errors="surrogateescape")
    before = store.read_bytes()
    with pytest.raises(UserError) as exc:
        calibration.record(H100, "d", 1, GIB, path=store)
    assert "\n" not in str(exc.value) and "remove it" in str(exc.value)
    assert store.read_bytes() == before
    # a plan still works: the estimate is used
    assert calibration.costs_for(H100, "d", store) == ({}, "")


def test_bad_entries_are_ignored(tmp_path: Path) -> None:
    store = tmp_path / "cal.json"
    entries = {
        f"{H100}|d|tp1": {"gpu_name": H100, "driver": "d", "tp_size": 1, "startup_cost_bytes": -5},
        f"{H100}|d|tp2": {
            "gpu_name": H100,
            "driver": "d",
            "tp_size": "two",
            "startup_cost_bytes": GIB,
        },
        f"{H100}|d|tp4": {
            "gpu_name": H100,
            "driver": "d",
            "tp_size": 4,
            "startup_cost_bytes": 2 * GIB,
        },
        "wrong-key": {"gpu_name": H100, "driver": "d", "tp_size": 8, "startup_cost_bytes": GIB},
    }
    store.write_text(json.dumps({"schema_version": 1, "entries": entries}))
    assert calibration.costs_for(H100, "d", store)[0] == {4: 2 * GIB}


@pytest.mark.parametrize(("tp", "cost"), [(0, GIB), (1, 0), (1, 1 << 50)])
def test_implausible_measurements_are_refused(tmp_path: Path, tp: int, cost: int) -> None:
    with pytest.raises(UserError):
        calibration.record(H100, "d", tp, cost, path=tmp_path / "cal.json")
    assert not (tmp_path / "cal.json").exists()


def test_a_huge_store_is_refused(tmp_path: Path) -> None:
    store = tmp_path / "cal.json"
    store.write_bytes(b" " * (calibration.MAX_BYTES + 1))
    with pytest.raises(UserError):
        calibration.load(store)
