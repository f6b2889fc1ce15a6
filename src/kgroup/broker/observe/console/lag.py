"""Consumer lag per group and partition: now, and sampled over time for the console's charts.

Lag is the log end offset minus the group's committed offset (never below 0), for every
partition the group has committed. `sample` runs every few seconds while the console is on
and keeps the last `keep` samples per partition, so a page opened now shows the last
minutes; /metrics and /api compute lag at the moment they are asked.
"""

from __future__ import annotations

from collections import deque
from typing import Callable

from kgroup.broker.observe.group_view import GroupViews, TopicPartition

EndOffset = Callable[[str, int], "int | None"]


class LagTracker:
    def __init__(self, views: GroupViews, end_offset: EndOffset, keep: int = 300) -> None:
        self.views = views
        self.end_offset = end_offset
        self.keep = keep
        # group -> (topic, partition) -> deque of (time_ms, lag)
        self.history: dict[str, dict[TopicPartition, deque[tuple[int, int]]]] = {}

    def of(self, committed: dict[TopicPartition, int]) -> dict[TopicPartition, tuple[int, int | None, int | None]]:
        """(topic, partition) -> (committed, log end, lag) for one group's commits."""
        out = {}
        for tp, offset in committed.items():
            end = self.end_offset(*tp)
            out[tp] = (offset, end, None if end is None or offset < 0 else max(0, end - offset))
        return out

    def now(self) -> dict[str, dict[TopicPartition, int]]:
        """group -> (topic, partition) -> lag, for every group with commits (unknown partitions left out)."""
        out: dict[str, dict[TopicPartition, int]] = {}
        end_offset = self.end_offset
        for group, committed in self.views.committed():
            lags = {}
            for tp, offset in committed.items():
                end = end_offset(*tp)
                if end is not None and offset >= 0:
                    lags[tp] = max(0, end - offset)
            out[group] = lags
        return out

    def sample(self, now_ms: int) -> dict[str, dict[TopicPartition, int]]:
        """Record every group's lag at `now_ms`; returns what it recorded."""
        lags = self.now()
        history = self.history
        for group in [g for g in history if g not in lags]:
            del history[group]
        for group, partitions in lags.items():
            series = history.setdefault(group, {})
            for tp, lag in partitions.items():
                points = series.get(tp)
                if points is None:
                    points = series[tp] = deque(maxlen=self.keep)
                points.append((now_ms, lag))
        return lags
