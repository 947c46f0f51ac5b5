"""An error only sglang's check finds opens its catalogue card, with the fixes sglang accepted."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from textual.widgets import OptionList, Static

from sglaunch.oracle.answer import OracleAnswer, OracleError
from sglaunch.tui.screens.card import CardScreen
from sglaunch.tui.widgets.findings import FindingsPanel
from sglaunch.validators.facts import GpuFacts
from tests.fakes.oracle import FakeOracle
from tests.support.tui import make_app, settle_app

LMCACHE = "--enable-lmcache requires radix cache to be enabled"


@dataclass
class LmcacheOracle(FakeOracle):
    """sglang's kv_cache_hook check, which no built-in rule mirrors."""

    def resolve(
        self, argv: Sequence[str], env: Mapping[str, str] | None, gpu: GpuFacts
    ) -> OracleAnswer:
        answer = super().resolve(argv, env, gpu)
        if "--enable-lmcache" in argv and "--disable-radix-cache" in argv:
            self.requests.append((list(argv), dict(env or {}), gpu))
            error = OracleError("ValueError", LMCACHE, where="srt/arg_groups/kv_cache_hook.py:445")
            return OracleAnswer(ok=False, sglang_version=self.version, error=error)
        return answer


async def test_the_card_has_the_site_its_flags_and_vetted_fixes() -> None:
    oracle = LmcacheOracle()
    app = make_app(
        oracle=oracle, gpu_spec="H100x8", argv=["--enable-lmcache", "--disable-radix-cache"]
    )
    async with app.run_test(size=(160, 50)) as pilot:
        await settle_app(app, pilot)
        panel = app.main.query_one(FindingsPanel)
        finding = next(f for f in panel.findings if f.message == LMCACHE)
        assert finding.code == "sglang-enable-lmcache-requires-radix-cache-to-be"
        assert set(finding.flags) == {"enable_lmcache", "disable_radix_cache"}
        assert [f.label for f in finding.fixes] == [
            "remove --enable-lmcache",
            "remove --disable-radix-cache",
        ]
        panel.query_one(OptionList).focus()
        assert panel.highlight(finding)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, CardScreen)
        texts = " ".join(str(s.render()) for s in app.screen.query(Static))
        assert "Where sglang raises it" in texts and "kv_cache_hook.py:445" in texts
        assert "cfg.enable_lmcache" in texts  # the source around the raise
        await pilot.press("1")
        await settle_app(app, pilot)
        assert "enable_lmcache" not in app.session.flags
        assert LMCACHE not in [f.message for f in panel.findings]
