"""sglang's /metrics: samples by name (read by prometheus_client's parser), and quantiles.

prometheus_client parses the text format but computes no quantiles, so the histogram
arithmetic stays here: Prometheus's own `histogram_quantile` (linear interpolation inside
the bucket that holds the rank) over `_bucket{le=...}` counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

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


def parse_prometheus(text: str) -> Metrics:
    """Parse exposition text with prometheus_client's own parser; a malformed line is skipped.

    The library stops at the first line it cannot read; then each line is read on its
    own, so one bad line costs only itself, never the scrape.
    """
    out = Metrics()
    try:
        _collect(out, text)
    except ValueError:
        out = Metrics()
        for line in text.splitlines():
            try:
                _collect(out, line + "\n")
            except ValueError:
                continue
    return out


def _collect(out: Metrics, text: str) -> None:
    # prometheus_client (~65 ms): only once metrics are read
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(text):
        if family.type != "unknown":
            out.types[family.name] = family.type
        for sample in family.samples:
            labels = tuple(sorted(sample.labels.items()))
            out.samples.setdefault(sample.name, []).append((labels, float(sample.value)))


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
