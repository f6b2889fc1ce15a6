"""Cheap counters the broker keeps for /metrics: requests by API and error, and histograms.

These are plain ints, bumped inline where things happen (one dict update per request, one
list update per fsync); the metrics collector (console/metrics.py) turns them into
Prometheus families only when /metrics is scraped. A prometheus_client call per request
would cost a lock and several lookups on the hot path.
"""

from __future__ import annotations

import bisect
from typing import Any

# Seconds. Fsyncs take from tens of microseconds (page cache, tmpfs) to a second (a busy disk).
FSYNC_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
# Seconds. Rebalances last from a millisecond (one member, no delay) to minutes (a member
# that does not rejoin holds the group until the rebalance timeout).
REBALANCE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


class Buckets:
    """A histogram as Prometheus keeps one: counts per upper bound, a sum and a count."""

    __slots__ = ("bounds", "counts", "sum", "count")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * len(bounds)
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        i = bisect.bisect_left(self.bounds, value)
        if i < len(self.counts):
            self.counts[i] += 1
        self.sum += value
        self.count += 1

    def cumulative(self) -> list[tuple[str, int]]:
        """[(upper bound, observations at or below it), ..., ("+Inf", count)]."""
        out = []
        running = 0
        for bound, n in zip(self.bounds, self.counts):
            running += n
            out.append((repr(float(bound)), running))
        out.append(("+Inf", self.count))
        return out


class RequestStats:
    """Requests answered, by API key, and those with a top-level error, by (API key, code).

    The server bumps `by_api[api_key]` and, only for an error, `errors` inline (no call);
    `counts()` puts them together at scrape time.
    """

    __slots__ = ("by_api", "errors")

    def __init__(self) -> None:
        self.by_api = [0] * 256
        self.errors: dict[tuple[int, int], int] = {}

    def count(self, api_key: int, response: Any) -> None:
        """What the server does inline, as a call (for tests and other callers)."""
        self.by_api[api_key] += 1
        # The top-level error code where the response has one (group APIs, Fetch v7+);
        # per-partition errors of Produce/Fetch/OffsetCommit are not counted here.
        error = getattr(response, "error_code", 0)
        if error:
            self.count_error(api_key, error)

    def count_error(self, api_key: int, error: int) -> None:
        key = (api_key, int(error))
        self.errors[key] = self.errors.get(key, 0) + 1

    def counts(self) -> dict[tuple[int, int], int]:
        """(API key, error code) -> requests, error code 0 for the ones without an error."""
        out: dict[tuple[int, int], int] = {}
        for api_key, n in enumerate(self.by_api):
            if n:
                failed = sum(c for (a, _), c in self.errors.items() if a == api_key)
                if n - failed:
                    out[(api_key, 0)] = n - failed
        out.update(self.errors)
        return out
