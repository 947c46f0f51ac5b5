"""Textual's parsed CSS is kept between starts, as bytecode is: the next start parses none of
the stylesheets the last one parsed, and draws every cell as a start that parses them all."""

from __future__ import annotations

import marshal
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.css import stylesheet as textual_stylesheet
from textual.css.stylesheet import Stylesheet

from sglaunch.tui import css_cache
from sglaunch.tui.css_cache import (
    MAX_ENTRIES,
    CachedStylesheet,
    CssRulesCache,
    cache_path,
    open_cache,
    package_stamp,
)
from tests.fakes.oracle import FakeOracle
from tests.support.scenes import DP_LINE, pin_paths
from tests.support.tui import make_app, settle_app

APP_CSS = Path(__file__).resolve().parents[3] / "tui" / "app.tcss"


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Where each stylesheet Textual really parses (not looks up) was read from."""
    seen: list[str] = []
    parse = textual_stylesheet.parse

    def counted(scope, css, read_from, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(str(read_from))
        return parse(scope, css, read_from, *args, **kwargs)

    monkeypatch.setattr(textual_stylesheet, "parse", counted)
    yield seen


async def _main_screen(cache: CssRulesCache | None) -> str:
    app = make_app(oracle=FakeOracle(), gpu_spec="H100x8", argv=DP_LINE, css_rules=cache)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        return app.export_screenshot()


async def test_the_next_start_parses_nothing_and_draws_the_same(
    tmp_path: Path, parses: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pin_paths(monkeypatch.setattr)
    plain = await _main_screen(None)
    assert any("app.tcss" in p for p in parses), "the app's CSS is parsed without the cache"

    parses.clear()
    first = CssRulesCache(cache_path(str(tmp_path)), "stamp")
    assert await _main_screen(first) == plain
    kept = len(first.new)
    assert kept == len(parses) > 10  # every parse kept: app.tcss and each widget's
    first.save()

    parses.clear()
    second = CssRulesCache(cache_path(str(tmp_path)), "stamp")
    screen = await _main_screen(second)
    assert parses == [], "a start after one that kept them parses no stylesheet"
    assert second.new == {} and len(second.used) == kept
    assert screen == plain, "rules read back draw every cell as parsed ones"


def _parse(sheet: Stylesheet, css: str, name: str = "x") -> list[object]:
    return list(sheet._parse_rules(css, (name, ""), False, 0, ""))


def test_a_change_to_anything_parsing_reads_is_another_entry(tmp_path: Path) -> None:
    cache = CssRulesCache(cache_path(str(tmp_path)), "textual 8")
    base = ("theme", "Static { color: red; }", ("a.tcss", ""), False, 0, "")
    changed = [
        ("theme 2", *base[1:]),
        (base[0], "Static { color: blue; }", *base[2:]),
        (*base[:2], ("b.tcss", ""), *base[3:]),
        (*base[:3], True, *base[4:]),
        (*base[:4], 1, base[5]),
        (*base[:5], "Screen"),
    ]
    keys = {cache.key(*base)} | {cache.key(*c) for c in changed}  # type: ignore[arg-type]
    assert len(keys) == 1 + len(changed)
    other_install = CssRulesCache(cache.path, "textual 9")
    assert other_install.key(*base) != cache.key(*base)  # type: ignore[arg-type]


def test_a_theme_change_parses_again_with_its_variables(tmp_path: Path, parses: list[str]) -> None:
    cache = CssRulesCache(cache_path(str(tmp_path)), "stamp")
    css = "Static { color: $accent; }"
    dark = CachedStylesheet(cache, variables={"accent": "red"})
    light = CachedStylesheet(cache, variables={"accent": "blue"})
    reds, blues = _parse(dark, css), _parse(light, css)
    assert len(parses) == 2 and len(cache.new) == 2
    assert str(reds[0].styles.color) != str(blues[0].styles.color)  # type: ignore[attr-defined]
    parses.clear()
    dark.set_variables({"accent": "blue"})  # a theme change: Textual replaces the variables
    again = _parse(dark, css)
    assert parses == [], "the other theme's entry, kept a moment ago"
    assert str(again[0].styles.color) == str(blues[0].styles.color)  # type: ignore[attr-defined]


def test_css_with_errors_is_never_kept(tmp_path: Path) -> None:
    cache = CssRulesCache(cache_path(str(tmp_path)), "stamp")
    sheet = CachedStylesheet(cache)
    rules = _parse(sheet, "Static { colour: red; }")
    assert rules and rules[0].errors  # type: ignore[attr-defined]
    assert cache.new == {}


def test_a_damaged_file_or_entry_is_parsed_again(tmp_path: Path, parses: list[str]) -> None:
    path = cache_path(str(tmp_path))
    Path(path).write_bytes(b"\x00not marshal")
    assert CssRulesCache(path, "stamp").entries == {}

    cache = CssRulesCache(path, "stamp")
    _parse(CachedStylesheet(cache), "Static { color: red; }")
    cache.save()
    entries = marshal.loads(Path(path).read_bytes())
    Path(path).write_bytes(marshal.dumps({k: b"\x80\x05garbage" for k in entries}))
    parses.clear()
    again = CssRulesCache(path, "stamp")
    rules = _parse(CachedStylesheet(again), "Static { color: red; }")
    assert parses == ["('x', '')"] and len(rules) == 1


def test_an_unwritable_path_is_no_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the folder would be")
    cache = CssRulesCache(cache_path(str(blocker)), "stamp")
    _parse(CachedStylesheet(cache), "Static { color: red; }")
    cache.save()
    assert blocker.read_text().startswith("a file") and cache.new  # kept for nobody, no error
    assert not list(tmp_path.glob("*.tmp"))
    missing = CssRulesCache(cache_path(str(tmp_path / "no-such-folder")), "stamp")
    _parse(CachedStylesheet(missing), "Static { color: red; }")
    missing.save()
    assert not (tmp_path / "no-such-folder").exists()


def test_a_full_file_keeps_what_its_writer_used(tmp_path: Path) -> None:
    path = cache_path(str(tmp_path))
    Path(path).write_bytes(marshal.dumps({f"old{i}": b"x" for i in range(MAX_ENTRIES)}))
    cache = CssRulesCache(path, "stamp")
    _parse(CachedStylesheet(cache), "Static { color: red; }")
    cache.save()
    assert set(marshal.loads(Path(path).read_bytes())) == set(cache.new or cache.entries)
    assert len(cache.entries) == 1


def test_the_app_reads_its_css_through_the_cache(tmp_path: Path) -> None:
    cache = CssRulesCache(cache_path(str(tmp_path)), "stamp")
    app = make_app(css_rules=cache)
    assert isinstance(app.stylesheet, CachedStylesheet) and app.stylesheet.rules_cache is cache
    assert type(make_app().stylesheet) is Stylesheet  # tests without one parse as Textual does
    with pytest.raises(ValueError, match="nothing was read"):
        sheet = Stylesheet()
        sheet.read(APP_CSS)
        CachedStylesheet.replacing(sheet, cache)


def test_the_launcher_keeps_the_css_unless_bytecode_is_not_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registered: list[object] = []
    monkeypatch.setattr("atexit.register", registered.append)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    cache = open_cache(str(tmp_path))
    assert cache is not None and registered == [cache.save]
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    registered.clear()
    assert open_cache(str(tmp_path)) is not None and registered == []


def test_an_install_is_told_by_its_version_and_when_it_was_written(tmp_path: Path) -> None:
    package = tmp_path / "textual"
    package.mkdir()
    (package / "__init__.py").write_text("")
    assert package_stamp(str(package)) is None, "no dist-info: not told, nothing kept"
    (tmp_path / "textual-8.2.8.dist-info").mkdir()
    (tmp_path / "textual_dev-1.0.dist-info").mkdir()  # another project's
    first = package_stamp(str(package))
    assert first is not None and "textual-8.2.8.dist-info" in first and "textual_dev" not in first
    (tmp_path / "textual-8.2.8.dist-info").rename(tmp_path / "textual-8.3.0.dist-info")
    assert package_stamp(str(package)) not in (None, first)
    os.utime(package / "__init__.py", ns=(1, 1))  # reinstalled: written anew
    assert package_stamp(str(package)) != first


def test_no_cache_where_the_install_cannot_be_told(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(css_cache, "package_stamp", lambda package: None)
    assert open_cache(str(tmp_path)) is None
