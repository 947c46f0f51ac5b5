"""The flag schema read from the sglang interpreter, cached; the bundled one without sglang."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sglaunch.oracle.interpreter import ENV_VAR
from sglaunch.oracle.schema_cache import cache_file, load_flag_schema, schema_cache_dir
from tests.support.oracle_models import fake_python


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("SGLAUNCH_HOME", str(tmp_path))
    return tmp_path


@pytest.mark.oracle
def test_schema_comes_from_sglang_with_help_and_is_cached(home: Path, sglang_python: str) -> None:
    first = load_flag_schema(sglang_python)
    assert first.source == "extracted", first.reason
    assert first.reason == ""
    assert first.schema.sglang_version == "0.5.23"
    assert first.schema.help_included
    assert len(first.schema) > 500
    tp = first.schema.get("tp_size")
    assert tp is not None and "--tensor-parallel-size" in tp.options and tp.help
    assert first.path == cache_file(sglang_python, "0.5.23")
    assert first.path is not None and first.path.parent == schema_cache_dir()
    assert str(first.path).startswith(str(home))

    again = load_flag_schema(sglang_python)
    assert again.source == "cache"
    assert len(again.schema) == len(first.schema)

    # a damaged cache file is rebuilt, not trusted and not fatal
    first.path.write_text("{not json")
    rebuilt = load_flag_schema(sglang_python)
    assert rebuilt.source == "extracted"
    assert len(rebuilt.schema) == len(first.schema)


def test_without_sglang_the_bundled_schema_and_why(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    found = load_flag_schema(fake_python(home, "python", f'exec "{sys.executable}" "$@"'))
    assert found.source == "bundled"
    assert found.reason.startswith("sglang is not installed in ")
    assert found.schema.origin == "bundled"
    assert len(found.schema) > 500


def test_a_broken_sglang_falls_back_with_its_last_words(home: Path) -> None:
    python = fake_python(
        home,
        "python",
        'case "$1" in -c) echo 0.5.23;; *) echo "ImportError: libtorch_cpu.so: cannot open" >&2; exit 1;; esac',
    )
    found = load_flag_schema(python)
    assert found.source == "bundled" and found.failed and found.version == "0.5.23"
    assert found.reason == (
        "reading sglang's flags failed: ImportError: libtorch_cpu.so: cannot open; "
        "checking sglang 0.5.23's launch against the bundled sglang 0.5.23 schema instead"
    )
    assert not any(schema_cache_dir().glob("*.json"))


def _version_only_python(home: Path) -> str:
    # answers the version probe; anything else (extract_flags.py) fails
    return fake_python(home, "python", 'case "$1" in -c) echo 0.5.23;; *) exit 1;; esac')


def test_an_unusable_cache_folder_falls_back_with_why(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python = _version_only_python(home)
    blocker = home / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("SGLAUNCH_HOME", str(blocker))  # cache_dir() lies under a file
    found = load_flag_schema(python)
    assert found.source == "bundled"
    assert found.reason.startswith(f"cannot create the schema cache {blocker}")
    assert "\n" not in found.reason


def test_sglang_in_this_interpreter_is_versioned_in_process(
    home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from sglaunch.oracle import schema_cache

    site = tmp_path / "site"
    (site / "sglang").mkdir(parents=True)
    (site / "sglang" / "__init__.py").write_text("raise RuntimeError('never imported')\n")
    meta = site / "sglang-9.9.9.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: sglang\nVersion: 9.9.9\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delenv(ENV_VAR, raising=False)

    def no_subprocess(python: str, timeout: float = 30.0) -> tuple[str | None, str]:
        raise AssertionError("the version of this interpreter's sglang needs no subprocess")

    asked: list[Path] = []

    def extract(python: str, out: Path, timeout: float) -> str:
        asked.append(out)
        return "stop here"

    monkeypatch.setattr(schema_cache, "probe_sglang_version", no_subprocess)
    monkeypatch.setattr(schema_cache, "_extract", extract)
    found = load_flag_schema()
    assert found.python == sys.executable
    assert found.failed and found.version == "9.9.9"
    assert found.reason == (
        "stop here; checking sglang 9.9.9's launch against the bundled sglang 0.5.23 schema instead"
    )
    assert asked == [cache_file(sys.executable, "9.9.9")]  # keyed by the version it read
    assert "sglang" not in sys.modules
