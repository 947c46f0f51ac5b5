"""Prometheus text format 0.0.4: parsing, and quantiles from histogram buckets.

Just enough of the format for sglang's /metrics: samples with labels, `# TYPE` lines,
histograms as `_bucket{le=...}` / `_count` / `_sum`. Quantiles follow Prometheus's own
`histogram_quantile` (linear interpolation inside the bucket that holds the rank).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')
_ESCAPES = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}

Labels = tuple[tuple[str, str], ...]


@dataclass
class Metrics:
    """Samples by metric name; each sample is (labels, value)."""

    samples: dict[str, list[tuple[Labels, float]]] = field(default_factory=dict)
    types: dict[str, str] = field(default_factory=dict)

    def series(self, name: str) -> list[tuple[Labels, float]]:
        return self.samples.get(name, [])

    def total(
        self, name: str, where: Callable[[dict[str, str]], bool] | None = None
    ) -> float | None:
        """The sum over a metric's series (optionally filtered), or None when absent."""
        values = [v for labels, v in self.series(name) if where is None or where(dict(labels))]
        values = [v for v in values if not math.isnan(v)]
        return sum(values) if values else None

    def largest(self, name: str) -> float | None:
        values = [v for _, v in self.series(name) if not math.isnan(v)]
        return max(values) if values else None

    def buckets(self, name: str) -> dict[float, float]:
        """A histogram's cumulative bucket counts, summed over all its other labels."""
        out: dict[float, float] = {}
        for labels, value in self.series(name + "_bucket"):
            le = dict(labels).get("le")
            if le is None:
                continue
            bound = math.inf if le in ("+Inf", "Inf") else float(le)
            out[bound] = out.get(bound, 0.0) + value
        return out


def _unescape(text: str) -> str:
    if "\\" not in text:
        return text
    return re.sub(r'\\\\|\\"|\\n', lambda m: _ESCAPES[m.group(0)], text)


def _value(text: str) -> float:
    low = text.lower()
    if low in ("+inf", "inf"):
        return math.inf
    if low == "-inf":
        return -math.inf
    if low == "nan":
        return math.nan
    return float(text)


def parse_prometheus(text: str) -> Metrics:
    """Parse exposition text; malformed lines are skipped, never fatal."""
    out = Metrics()
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line[0] == "#":
            parts = line.split(None, 3)
            if len(parts) >= 4 and parts[1] == "TYPE":
                out.types[parts[2]] = parts[3].strip()
            continue
        try:
            brace = line.find("{")
            if brace >= 0:
                name = line[:brace]
                end = line.rindex("}")
                labels = tuple(
                    sorted((k, _unescape(v)) for k, v in _LABEL.findall(line[brace + 1 : end]))
                )
                rest = line[end + 1 :].split()
            else:
                name, *rest = line.split()
                labels = ()
            value = _value(rest[0])
        except (ValueError, IndexError):
            continue
        out.samples.setdefault(name, []).append((labels, value))
    return out


def histogram_quantile(q: float, buckets: Mapping[float, float]) -> float | None:
    """Prometheus's histogram_quantile over cumulative buckets {upper bound: count}.

    None when the histogram is empty. A rank in the +Inf bucket returns the largest
    finite bound, as Prometheus does.
    """
    if not buckets or not 0 <= q <= 1:
        return None
    bounds = sorted(buckets)
    if bounds[-1] != math.inf:
        return None  # a histogram always ends with +Inf; anything else is not one
    total = buckets[math.inf]
    if total <= 0:
        return None
    rank = q * total
    prev_bound, prev_count = 0.0, 0.0
    for i, bound in enumerate(bounds):
        count = buckets[bound]
        if count >= rank:
            if bound == math.inf:
                return bounds[-2] if len(bounds) > 1 else None
            if i == 0 and bound <= 0:
                return bound
            in_bucket = count - prev_count
            if in_bucket <= 0:
                return bound
            return prev_bound + (bound - prev_bound) * (rank - prev_count) / in_bucket
        prev_bound, prev_count = bound, count
    return bounds[-2] if len(bounds) > 1 else None


def bucket_delta(now: Mapping[float, float], before: Mapping[float, float]) -> dict[float, float]:
    """Observations between two scrapes. A counter that went down was reset: use `now`."""
    delta = {b: now[b] - before.get(b, 0.0) for b in now}
    if any(v < 0 for v in delta.values()):
        return dict(now)
    return delta


def quantiles(
    buckets: Mapping[float, float], qs: Iterable[float] = (0.5, 0.9, 0.99)
) -> list[float | None]:
    return [histogram_quantile(q, buckets) for q in qs]
