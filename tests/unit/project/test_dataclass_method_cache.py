"""A command process compiles each dataclass method's text once, ever: the code is kept
beside sglaunch's bytecode and read back by the next process, and a class made from it
is the class Python makes without it."""

from __future__ import annotations

import builtins
import dataclasses
import inspect
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sglaunch.cli import dataclass_cache
from sglaunch.cli.dataclass_cache import CodeCache, cache_path, install

# 3.11 and 3.12 compile each method on its own: what the cache saves; 3.13 one text a class
PER_METHOD = sys.version_info < (3, 13)


def _make() -> type:
    @dataclasses.dataclass(frozen=True, order=True)
    class Point:
        """A point."""

        x: int
        y: int = 2
        tags: tuple[str, ...] = dataclasses.field(default_factory=tuple)

    return Point


def _with(cache: CodeCache | None, monkeypatch: pytest.MonkeyPatch) -> type:
    """The class made through `cache`, or as Python makes it (None): importing sglaunch.cli
    installed a cache in this process too."""
    with monkeypatch.context() as m:
        m.setattr(
            dataclasses, "exec", builtins.exec if cache is None else cache.exec, raising=False
        )
        return _make()


def test_a_class_made_through_the_cache_is_the_class_python_makes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = _with(None, monkeypatch)
    first = CodeCache(cache_path(str(tmp_path)))
    compiled = _with(first, monkeypatch)
    assert first.new, "the first process compiles each text"
    first.save()

    second = CodeCache(cache_path(str(tmp_path)))
    cached = _with(second, monkeypatch)
    assert second.new == {}, "the next process compiles nothing"

    for cls in (compiled, cached):
        for name in ("__init__", "__repr__", "__eq__", "__lt__", "__hash__", "__setattr__"):
            assert getattr(cls, name).__code__ == getattr(plain, name).__code__, name
        assert str(inspect.signature(cls)) == str(inspect.signature(plain))
        p = cls(1, tags=("a",))
        assert (
            repr(p) == repr(plain(1, tags=("a",))) == "_make.<locals>.Point(x=1, y=2, tags=('a',))"
        )
        assert p == cls(1, 2, ("a",)) and p < cls(1, 3) and hash(p) == hash(cls(1, 2, ("a",)))
        with pytest.raises(dataclasses.FrozenInstanceError):
            p.x = 3  # type: ignore[misc]


def test_a_damaged_or_unwritable_cache_is_compiled_around(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = Path(cache_path(str(tmp_path)))
    path.write_bytes(b"\x00 not marshal")
    cache = CodeCache(str(path))
    assert cache.entries == {}
    cls = _with(cache, monkeypatch)
    assert repr(cls(1)) == "_make.<locals>.Point(x=1, y=2, tags=())"
    missing = CodeCache(str(tmp_path / "no-such-folder" / path.name))
    _with(missing, monkeypatch)
    missing.save()  # nothing to write to: no error, nothing left behind
    assert not (tmp_path / "no-such-folder").exists()


def test_a_cache_past_its_size_keeps_what_the_process_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = cache_path(str(tmp_path))
    first = CodeCache(path)
    _with(first, monkeypatch)
    junk = {f"x = {i}": marshal.dumps(compile(f"x = {i}", "<string>", "exec")) for i in range(10)}
    Path(path).write_bytes(marshal.dumps({**first.new, **junk}))
    monkeypatch.setattr(dataclass_cache, "MAX_TEXTS", len(first.new) + 5)

    second = CodeCache(path)
    _with(second, monkeypatch)  # every text read from the file
    with monkeypatch.context() as m:
        m.setattr(dataclasses, "exec", second.exec, raising=False)

        @dataclasses.dataclass
        class Other:
            z: float = 0.0

    used, new = set(second.used), set(second.new)
    assert used == set(first.new) and new
    second.save()
    assert set(CodeCache(path).entries) == used | new, "the texts nobody used are dropped"


def test_a_command_process_reads_the_cache_the_previous_one_wrote(tmp_path: Path) -> None:
    # the module by its path, installed on a folder of the test's before sglaunch.cli
    # (which installs the default one) is imported
    code = (
        "import dataclasses, importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('cache', {dataclass_cache.__file__!r})\n"
        "mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)\n"
        f"cache = mod.install({str(tmp_path)!r})\n"
        "import sglaunch.cli.check, sglaunch.validators.registry\n"
        "assert cache is None or dataclasses.exec == cache.exec\n"
        "print(len(cache.entries) if cache else 0, len(cache.new) if cache else 0)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    runs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
        )
        assert done.returncode == 0, done.stderr
        runs.append(tuple(int(n) for n in done.stdout.split()))
    (read1, new1), (read2, new2) = runs
    if PER_METHOD:
        assert read1 == 0 and new1 > 50 and new2 == 0 and read2 == new1, runs
    else:
        assert runs == [(0, 0), (0, 0)], "nothing installed where a class is one exec"


def test_installing_twice_keeps_one_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as m:
        m.delattr(dataclasses, "exec", raising=False)
        m.setattr(sys, "dont_write_bytecode", True)  # nothing registered to write at exit
        first = install(str(tmp_path))
        assert (first is not None) is PER_METHOD
        assert vars(dataclasses).get("exec") == (first.exec if first else None)
        assert install(str(tmp_path)) is first
