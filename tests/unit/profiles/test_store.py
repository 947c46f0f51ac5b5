"""The profile store: atomic saves that keep the previous version, broken files that are
reported and never overwritten, and concurrent saves that never lose a change silently."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from sglaunch.errors import UserError
from sglaunch.exitcodes import ExitCode
from sglaunch.paths import profiles_dir
from sglaunch.profiles import ConflictError, Profile, ProfileStore

ROOT = Path(__file__).resolve().parents[3]


def sample(name: str = "p", tp: int = 2) -> Profile:
    return Profile(
        name=name,
        model="example:minicpm-sala",
        flags={"tp_size": tp},
        env={"SGLANG_MINICPM_FORCE_DENSE": "1"},
    )


def test_save_load_list_delete() -> None:
    store = ProfileStore()
    assert store.root == profiles_dir()
    assert store.list() == []
    p = store.save(sample())
    assert p.revision is not None
    assert store.exists("p")
    loaded = store.load("p")
    assert loaded == sample() and loaded.revision == p.revision
    [info] = store.list()
    assert (info.name, info.model, info.error) == ("p", "example:minicpm-sala", None)
    assert info.mtime > 0
    backup = store.delete("p")
    assert not store.exists("p")
    assert backup.name == "p.toml.bak" and backup.is_file()
    with pytest.raises(UserError):
        store.delete("p")


def test_save_keeps_the_previous_version_in_bak() -> None:
    store = ProfileStore()
    p = store.save(sample(tp=2))
    first = store.path("p").read_bytes()
    p.flags["tp_size"] = 4
    store.save(p)
    assert store.backup_path("p").read_bytes() == first
    assert store.load("p").flags["tp_size"] == 4


@pytest.mark.parametrize("name", ["../evil", "a/b", "", ".hidden", "a b", "x" * 101, "naïve"])
def test_bad_names_are_refused(name: str) -> None:
    store = ProfileStore()
    with pytest.raises(UserError) as exc:
        store.save(sample(name=name))
    assert "\n" not in exc.value.message
    assert not any(store.root.parent.rglob("evil*")) if store.root.parent.exists() else True


def test_good_names() -> None:
    store = ProfileStore()
    for name in ("MiniCPM4-8B", "sala_tp2", "v1.2", "9"):
        store.save(sample(name=name))
    assert store.names() == sorted(["MiniCPM4-8B", "sala_tp2", "v1.2", "9"])


def test_unknown_profile_suggests_a_close_name() -> None:
    store = ProfileStore()
    store.save(sample(name="sala-tp2"))
    with pytest.raises(UserError) as exc:
        store.load("sala-tp3")
    assert "did you mean sala-tp2" in exc.value.message
    assert exc.value.code == ExitCode.USAGE


# --- broken files ------------------------------------------------------------------

CORRUPT = b'schema_version = 1\nmodel = "example:minicpm-sala"\n[flags\ntp_size = 2\n'


def test_corrupt_profile_is_reported_with_its_line_number() -> None:
    store = ProfileStore()
    store.root.mkdir(parents=True)
    store.path("bad").write_bytes(CORRUPT)
    with pytest.raises(UserError) as exc:
        store.load("bad")
    message = exc.value.message
    assert "bad.toml" in message and "line 3" in message
    assert "\n" not in message
    assert exc.value.code == ExitCode.USAGE == 2
    # the listing still works and says which one is broken
    [info] = store.list()
    assert info.name == "bad" and info.error and "line 3" in info.error


def test_corrupt_profile_is_never_overwritten() -> None:
    store = ProfileStore()
    store.root.mkdir(parents=True)
    store.path("bad").write_bytes(CORRUPT)
    for force in (False, True):
        with pytest.raises(UserError) as exc:
            store.save(sample(name="bad"), force=force)
        assert "move it aside or fix it" in exc.value.message
    assert store.path("bad").read_bytes() == CORRUPT


@pytest.mark.parametrize(
    ("text", "needle", "line"),
    [
        ('[flags]\ntp_size = "two"\n', "expects an integer", 2),
        ("[flags]\ntp_sise = 2\n", "did you mean tp_size", 2),
        ('[flags]\napi_key = "sk-1"\n', "never stored as text", 2),
        ('[env]\nHF_TOKEN = "hf_1"\n', "looks like a secret", 2),
        ("[flag]\ntp_size = 2\n", "did you mean flags", 1),
        ("schema_version = 99\n", "newer", 1),
        ('entry = "run"\n', "launch_server or serve", 1),
        ('[flags]\nattention_backend = "nope"\n', "not one of", 2),
        ('[secrets]\napi_key = "not a var"\n', "names the environment variable", 2),
        ("[flags]\nenable_metrics = 1\n", "switch", 2),
    ],
)
def test_wrong_values_name_the_key_and_line(text: str, needle: str, line: int) -> None:
    store = ProfileStore()
    store.root.mkdir(parents=True)
    store.path("w").write_text(text)
    with pytest.raises(UserError) as exc:
        store.load("w")
    assert needle in exc.value.message
    assert f"(line {line})" in exc.value.message
    assert "\n" not in exc.value.message


def test_hand_written_profile_is_lenient_where_it_is_safe() -> None:
    store = ProfileStore()
    store.root.mkdir(parents=True)
    store.path("h").write_text(
        'name = "other-name"\nmodel = "/m"\n[flags]\nmem_fraction_static = 1\n'
        'enable_metrics = false\n[env]\nCUDA_VISIBLE_DEVICES = "0"\nSGLANG_X = 1\n'
    )
    p = store.load("h")
    assert p.name == "h"  # the file name is the identity
    assert p.flags == {"mem_fraction_static": 1.0}  # false switch == absent
    assert p.gpus.cuda_visible_devices == "0" and p.env == {"SGLANG_X": "1"}


# --- missing model ---------------------------------------------------------------


def test_a_profile_whose_model_is_gone(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    store = ProfileStore()
    store.save(Profile(name="gone", model=str(model), flags={"tp_size": 2}))
    (model / "config.json").unlink()
    model.rmdir()
    # listing and loading still work
    assert store.list()[0].error is None
    assert store.load("gone").model == str(model)
    # applying it names the profile and the missing folder, in one line
    res = subprocess.run(
        [sys.executable, "-m", "sglaunch", "--profile", "gone", "--apply", "--no-oracle"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2
    assert "profile 'gone'" in res.stderr and str(model) in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


# --- concurrent saves ------------------------------------------------------------


def test_second_of_two_saves_from_the_same_version_conflicts() -> None:
    store = ProfileStore()
    store.save(sample(tp=1))
    a, b = store.load("p"), store.load("p")
    a.flags["tp_size"] = 2
    b.flags["dp_size"] = 2
    store.save(a)
    with pytest.raises(ConflictError) as exc:
        store.save(b)
    assert "changed by someone else" in exc.value.message
    assert store.load("p").flags == {"tp_size": 2}
    store.save(b, force=True)
    assert store.load("p").flags == {"tp_size": 1, "dp_size": 2}


def test_creating_a_profile_that_appeared_meanwhile_conflicts() -> None:
    store = ProfileStore()
    store.save(sample(tp=1))
    with pytest.raises(ConflictError) as exc:
        store.save(sample(tp=8))
    assert "already exists" in exc.value.message
    assert store.load("p").flags == {"tp_size": 1}


def test_saving_a_profile_deleted_meanwhile_conflicts() -> None:
    store = ProfileStore()
    p = store.save(sample())
    store.delete("p")
    with pytest.raises(ConflictError):
        store.save(p)


def test_threads_saving_the_same_profile_lose_nothing_silently() -> None:
    store = ProfileStore()
    store.save(sample(tp=1))
    start = threading.Barrier(8)
    results: dict[int, str] = {}

    def worker(i: int) -> None:
        p = ProfileStore().load("p")
        p.flags["max_running_requests"] = 100 + i
        start.wait()
        try:
            ProfileStore().save(p)
            results[i] = "saved"
        except ConflictError:
            results[i] = "conflict"

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, r in results.items() if r == "saved"]
    assert len(results) == 8 and len(winners) == 1
    assert store.load("p").flags["max_running_requests"] == 100 + winners[0]


CHILD_SAVE = """
import sys, time
from sglaunch.profiles import ConflictError, ProfileStore
store = ProfileStore()
p = store.load("p")
p.flags["max_running_requests"] = int(sys.argv[1])
sys.stdout.write("loaded\\n"); sys.stdout.flush()
sys.stdin.readline()  # wait until both have loaded
try:
    store.save(p)
    print("saved")
except ConflictError as exc:
    print("conflict", exc.message)
"""


def test_two_processes_saving_the_same_profile() -> None:
    store = ProfileStore()
    store.save(sample(tp=1))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD_SAVE, str(n)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        for n in (11, 22)
    ]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "loaded"
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("\n")
        p.stdin.flush()
    outs = [p.communicate(timeout=60)[0].strip() for p in procs]
    assert sorted(o.split()[0] for o in outs) == ["conflict", "saved"], outs
    winner = (11, 22)[[o.split()[0] for o in outs].index("saved")]
    assert store.load("p").flags["max_running_requests"] == winner


def test_paths_under_the_home_folder_are_shown_with_a_tilde(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sglaunch.paths import tilde

    monkeypatch.setenv("HOME", "/home/ann")
    assert tilde("/home/ann/.local/share/sglaunch/runs/r1") == "~/.local/share/sglaunch/runs/r1"
    assert tilde("/home/ann") == "~"
    assert tilde("/home/anna/runs") == "/home/anna/runs"  # another user's folder stays whole
    assert tilde("/tmp/runs") == "/tmp/runs"
    monkeypatch.setenv("HOME", "/")
    assert tilde("/tmp/runs") == "/tmp/runs"


def test_the_packages_diff_is_the_function_whatever_was_imported_first() -> None:
    import importlib
    import sys

    import sglaunch.profiles
    import sglaunch.profiles.diff  # the submodule of that name, on its own

    importlib.reload(sglaunch.profiles)
    from sglaunch.profiles import diff

    assert callable(diff) and diff is sys.modules["sglaunch.profiles.diff"].diff
