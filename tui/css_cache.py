"""Textual's parsed CSS, kept between processes as bytecode is.

Textual parses every stylesheet the app uses at start-up: `app.tcss` and the DEFAULT_CSS of
each widget class on the first screen, ~20 ms of the first frame's CPU (bench/startup.py;
the Button's alone ~4 ms). Parsing is a pure function of the text, where it was read from,
its place in the cascade and the theme's variables, so its result is kept: a
`CachedStylesheet` looks each parse up in a `CssRulesCache` before it parses, by a digest
of all of those and of the Textual and Rich installs that made and will read the objects.

The file (sglaunch/kept_blobs.py) sits beside `sglaunch.tui`'s bytecode (same folder, so
the same trust as a .pyc), is read once per process and written at exit, atomically and
only with what was parsed anew. An entry that does not load is parsed again; a read-only
install parses every time, as without the cache; nothing is written under
PYTHONDONTWRITEBYTECODE.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
from typing import TYPE_CHECKING

from textual.css.stylesheet import Stylesheet

from sglaunch.kept_blobs import KeptBlobs

if TYPE_CHECKING:
    from textual.css.model import RuleSet
    from textual.css.types import CSSLocation

# Past this many stylesheets (other themes' variables, older installs' widgets) a file keeps
# only what the process writing it used: every start reads it whole, ~0.5 ms per 70 (~4 KB
# each). The main screen parses ~30.
MAX_ENTRIES = 200


class CssRulesCache(KeptBlobs):
    """Parsed rule sets by the digest of what parsing them read, from `path` (read once);
    what was parsed anew is written back by `save`."""

    def __init__(self, path: str, stamp: str) -> None:
        super().__init__(path)
        self.stamp = stamp  # the Textual and Rich installs: their objects are what is kept

    def key(
        self,
        theme: str,
        css: str,
        read_from: CSSLocation,
        is_default_rules: bool,
        tie_breaker: int,
        scope: str,
    ) -> str:
        """The entry for one parse; `theme` is `theme_digest` of the stylesheet's variables."""
        parts = (self.stamp, theme, css, read_from, is_default_rules, tie_breaker, scope)
        return hashlib.sha256(repr(parts).encode("utf-8", "surrogatepass")).hexdigest()

    def get(self, key: str) -> list[RuleSet] | None:
        blob = self.find(key)
        if blob is None:
            return None
        try:
            rules = pickle.loads(blob)
        except Exception:  # a damaged entry, or one a changed class cannot take: parse it
            return None
        if not isinstance(rules, list):
            return None
        self.used.add(key)
        return rules

    def put(self, key: str, rules: list[RuleSet]) -> None:
        if any(rule.errors for rule in rules):
            return  # Textual reports these from the parse; never kept
        try:
            self.new[key] = pickle.dumps(rules, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # something in it does not pickle: parsed every time, as before
            return

    def save(self) -> None:
        self.write(MAX_ENTRIES)


class CachedStylesheet(Stylesheet):
    """Textual's stylesheet, each parse looked up in a `CssRulesCache` first."""

    def __init__(self, cache: CssRulesCache, *, variables: dict[str, str] | None = None) -> None:
        super().__init__(variables=variables)
        self.rules_cache = cache
        self._theme: tuple[dict[str, str], str] | None = None  # variables, and their digest

    @classmethod
    def replacing(cls, stylesheet: Stylesheet, cache: CssRulesCache) -> CachedStylesheet:
        """A cached twin of an App's new stylesheet (one nothing was read into yet)."""
        if stylesheet.source:
            raise ValueError("only a stylesheet nothing was read into is replaced")
        return cls(cache, variables=stylesheet._variables)

    def _theme_digest(self) -> str:
        # the variables are replaced, not changed, when the theme changes (set_variables)
        variables = self._variables
        if self._theme is None or self._theme[0] is not variables:
            self._theme = (variables, theme_digest(variables))
        return self._theme[1]

    def _parse_rules(
        self,
        css: str,
        read_from: CSSLocation,
        is_default_rules: bool = False,
        tie_breaker: int = 0,
        scope: str = "",
    ) -> list[RuleSet]:
        local = (css, read_from, is_default_rules, tie_breaker, scope)
        if local in self._parse_cache:  # parsed (or loaded) in this process already
            return super()._parse_rules(css, read_from, is_default_rules, tie_breaker, scope)
        key = self.rules_cache.key(self._theme_digest(), *local)
        rules = self.rules_cache.get(key)
        if rules is not None:
            self._parse_cache[local] = rules
            return rules
        rules = super()._parse_rules(css, read_from, is_default_rules, tie_breaker, scope)
        self.rules_cache.put(key, rules)
        return rules


def theme_digest(variables: dict[str, str]) -> str:
    return hashlib.sha256(
        repr(sorted(variables.items())).encode("utf-8", "surrogatepass")
    ).hexdigest()


def install_stamp() -> str | None:
    """Which Textual and Rich made the kept objects (and will read them back); None when
    either cannot be told, and then nothing is kept."""
    import rich
    import textual

    stamps = [package_stamp(os.path.dirname(m.__file__ or "")) for m in (textual, rich)]
    return None if None in stamps else ";".join(s for s in stamps if s)


def package_stamp(package: str) -> str | None:
    """An installed package's version, by its dist-info folder's name, and when its
    `__init__.py` was written (a reinstall); None without either. importlib.metadata
    would give the version too, but importing it costs more than the parsing saved."""
    site, name = os.path.split(package)
    prefix = name.lower() + "-"
    try:
        infos = sorted(
            n for n in os.listdir(site) if n.lower().startswith(prefix) and n.endswith(".dist-info")
        )
        stat = os.stat(os.path.join(package, "__init__.py"))
    except OSError:
        return None
    if not infos:
        return None
    return f"{package}|{','.join(infos)}|{stat.st_mtime_ns}|{stat.st_size}"


def cache_path(folder: str | None = None) -> str:
    """The file for this interpreter (its cache tag, as its bytecode's)."""
    if folder is None:
        folder = os.path.join(os.path.dirname(__file__), "__pycache__")
    tag = sys.implementation.cache_tag or "python"
    return os.path.join(folder, f"textual-css-rules.{tag}.marshal")


def open_cache(folder: str | None = None) -> CssRulesCache | None:
    """The cache for this interpreter, written back at exit unless bytecode is not written
    (PYTHONDONTWRITEBYTECODE); None where the Textual install cannot be told."""
    import atexit

    stamp = install_stamp()
    if stamp is None:
        return None
    cache = CssRulesCache(cache_path(folder), stamp)
    if not sys.dont_write_bytecode:
        atexit.register(cache.save)
    return cache
