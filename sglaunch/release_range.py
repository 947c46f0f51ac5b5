"""The releases sglaunch mirrors, and what holds for an sglang outside them, in plain lines.

Below both `release` (which release a verdict is for) and `oracle` (which sglang it can ask):
each says the same words about the same range.
"""

from __future__ import annotations

from sglaunch.validators.release_spans import (
    NEWEST,
    OLDEST,
    after_range,
    before_range,
    is_supported,
    key,
    semantics,
)

SUPPORTED_RANGE = f"{OLDEST}–{NEWEST}"


def out_of_range_line(version: str | None) -> str | None:
    """What holds for a release outside the supported range, in one line (None inside it)."""
    if not version or is_supported(version):
        return None
    if before_range(version):
        return (
            f"sglang {version} is older than the releases sglaunch mirrors ({SUPPORTED_RANGE}): "
            f"the flag checks use sglang {version}'s own flags and the general rules run as in "
            f"{OLDEST}; the MiniCPM rules do not exist in sglang {version}, and the sglang check "
            f"(oracle) needs sglang {OLDEST} or later"
        )
    if after_range(version):
        return (
            f"sglang {version} is newer than the releases sglaunch mirrors ({SUPPORTED_RANGE}): "
            f"the flag checks use sglang {version}'s own flags, but the built-in rules (MiniCPM "
            f"too) are {NEWEST}'s and may have changed; sglang's own verdict (the oracle) decides"
        )
    return (
        f"sglang {version} is not a release sglaunch knows ({SUPPORTED_RANGE}): "
        f"the built-in rules run as in {semantics(version)}"
    )


def oracle_refusal(version: str | None) -> str | None:
    """Why the oracle cannot run this sglang (None when it can)."""
    if not key(version):
        return f"sglang reports the version {version!r}, which sglaunch cannot read"
    if before_range(version):
        return (
            f"sglang {version} found; the sglang check needs sglang {OLDEST} or later "
            f"(sglaunch mirrors {SUPPORTED_RANGE}): before {OLDEST} sglang has no "
            "resolution pipeline to ask"
        )
    return None
