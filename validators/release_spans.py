"""The sglang releases the built-in rules mirror, and the facts that differ between them.

Every release that has the MiniCPM rules is supported: 0.5.19 (where the MiniCPM
provider, the `minicpm_sala` config and the resolution pipeline first appear) to
0.5.23. A rule names the range it exists in (`@rule(..., since=..., until=...)`);
a rule's body reads the release it runs for from `CheckInput.sglang_version`.
Outside the range the engine runs the general rules with the semantics of the
nearest supported release and never the MiniCPM rules of a release that has none.
Standard library only.
"""

from __future__ import annotations

from functools import lru_cache

SUPPORTED = ("0.5.19", "0.5.20", "0.5.21", "0.5.22", "0.5.23")
OLDEST = SUPPORTED[0]
NEWEST = SUPPORTED[-1]

# --attn-dp-size, and the step that rewrites --enable-dp-attention --dp-size N
# into it (parallel_hook.py:39 handle_deprecated_dp_attention), first appear here.
# Before it, --enable-dp-attention --dp-size N *is* attention DP, with no warning.
ATTN_DP_SIZE = "0.5.22"

# sglang's memory defaults that changed inside the range (srt/arg_groups/memory_hook.py):
# the 20-35 GiB tier (RTX 5090) gets chunked prefill 4096 and decode max_bs 48/160, and an
# unknown GPU's default fraction is 0.95 (0.5.19: 2048, 24/80 and 0.88)
MEMORY_TIERS_0_5_20 = "0.5.20"
# an unset decode graph max_bs is capped by --max-running-requests (memory_hook.py:182-188)
DECODE_BS_CAPPED = "0.5.22"
# the MLA prefill graph's max_bs default is min(8192, chunked prefill) (before: 2048)
MLA_PREFILL_BS_8192 = "0.5.23"
# a hybrid-SWA model's pool is sized for its PP stage's layers (0.5.19-0.5.20: every layer's)
SWA_POOL_PER_STAGE = "0.5.21"


# the rules ask these on every check, and fixes are vetted by re-running them: memoised
# (bounded: a hostile version string costs one entry, never a growing table)
@lru_cache(maxsize=256)
def key(version: str | None) -> tuple[int, ...]:
    """'0.5.21' -> (0, 5, 21); 'v0.5.22rc1' -> (0, 5, 22); unparsable -> ()."""
    if not version:
        return ()
    parts: list[int] = []
    for piece in str(version).strip().lstrip("vV").split("."):
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
        if len(digits) != len(piece):
            break  # "22rc1": the release number ends at the first non-digit
    return tuple(parts[:3])


def at_least(version: str | None, floor: str) -> bool:
    return key(version) >= key(floor)


def is_supported(version: str | None) -> bool:
    return key(version) in {key(v) for v in SUPPORTED}


def before_range(version: str | None) -> bool:
    k = key(version)
    return bool(k) and k < key(OLDEST)


def after_range(version: str | None) -> bool:
    return key(version) > key(NEWEST)


@lru_cache(maxsize=256)
def semantics(version: str | None) -> str:
    """The supported release whose rules hold for `version`: itself, else the nearest one."""
    if before_range(version):
        return OLDEST
    if not key(version) or after_range(version):
        return NEWEST
    for v in SUPPORTED:
        if key(v) == key(version):
            return v
    return NEWEST  # a patch between releases we do not know: the newest rules


@lru_cache(maxsize=1024)
def in_span(version: str | None, since: str | None, until: str | None) -> bool:
    """Whether `version` lies in [since, until]; None is open on that side.

    An unknown or unparsable version is the newest supported one.
    """
    k = key(version) or key(NEWEST)
    if since is not None and k < key(since):
        return False
    return not (until is not None and k > key(until))


def span_text(since: str | None, until: str | None) -> str:
    """'0.5.19–0.5.21', '0.5.22 and later', 'every release'."""
    if since and until:
        return since if since == until else f"{since}–{until}"
    if since:
        return f"{since} and later"
    if until:
        return f"up to {until}"
    return "every release"


def has_attn_dp_size(version: str | None) -> bool:
    """The release has --attn-dp-size (and deprecates --enable-dp-attention)."""
    return at_least(semantics(version), ATTN_DP_SIZE)


def memory_since(version: str | None, change: str) -> bool:
    """The release's memory defaults include `change` (one of the constants above)."""
    return at_least(semantics(version), change)
