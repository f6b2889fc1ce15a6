"""Offset ranges: what a batch or micro-batch reads, and how it is cut into Spark tasks.

How this works: a stream offset (what Spark checkpoints) is a JSON-able dict::

    {"offsets": {"orders": {"0": 1200, "1": 980}},      # next offset to read, per partition
     "resumed": {"orders": {"1": 950}}}                  # optional, see below

A micro-batch reads, for every partition in its end offset, from the partition's offset
in the start offset up to (not including) its offset in the end. ``resumed`` says that
this micro-batch starts a partition somewhere else than the start offset says: a partition
that is new to the query (created, or matched by a pattern, after the start), one whose
records before the start were deleted (``failOnDataLoss=false``), or, in group mode, one
the group has just assigned to this query, which continues from the group's committed
offset. Keeping that in the end offset makes ``partitions(start, end)`` a function of the
two offsets alone, as Spark needs when it re-runs a batch after a restart.

Everything here is pure: offsets in, offsets out. ``DataLossError`` lives here too, so
that the driver's planners raise it without importing the task side's reader (numpy,
Arrow, the consumer).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kgroup.client.errors import KafkaClientError

TP = tuple[str, int]

# Without minPartitions / maxRecordsPerPartition a Spark task reads at most this many
# offsets, so that one big partition still spreads over the cores.
DEFAULT_MAX_RECORDS_PER_TASK = 50_000


class DataLossError(KafkaClientError):
    """Offsets a batch was planned to read are no longer in the log."""

    hint = ("the records were deleted (retention) before the query read them; restart from "
            "newer offsets, or set failOnDataLoss=false to skip what is gone")


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Offsets ``start`` (inclusive) to ``end`` (exclusive) of one topic partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


# -- the stream offset -------------------------------------------------------------------


def nested(positions: Mapping[TP, int]) -> dict[str, dict[str, int]]:
    """{(topic, p): n} -> {"topic": {"p": n}}, sorted (Spark compares offsets as JSON)."""
    out: dict[str, dict[str, int]] = {}
    for (topic, p), off in sorted(positions.items()):
        out.setdefault(topic, {})[str(p)] = int(off)
    return out


def flat(data: Mapping[str, Mapping[str, int]] | None) -> dict[TP, int]:
    """{"topic": {"p": n}} -> {(topic, p): n}."""
    return {(topic, int(p)): int(off) for topic, parts in (data or {}).items()
            for p, off in parts.items()}


def stream_offset(positions: Mapping[TP, int], resumed: Mapping[TP, int] | None = None) -> dict:
    """The dict Spark checkpoints for these positions (see the module comment)."""
    out: dict = {"offsets": nested(positions)}
    if resumed:
        out["resumed"] = nested(resumed)
    return out


def positions_of(offset: Mapping) -> dict[TP, int]:
    return flat(offset.get("offsets"))


def resumed_of(offset: Mapping) -> dict[TP, int]:
    return flat(offset.get("resumed"))


def ranges_between(start: Mapping, end: Mapping) -> list[OffsetRange]:
    """What the micro-batch from ``start`` to ``end`` reads (empty ranges left out)."""
    before = positions_of(start)
    resumed = resumed_of(end)
    out = []
    for tp, hi in sorted(positions_of(end).items()):
        lo = resumed.get(tp, before.get(tp))
        if lo is None:
            raise ValueError(f"end offset has {tp[0]}-{tp[1]} with no start; offsets "
                             f"{start!r} -> {end!r} were not made by this source")
        if hi > lo:
            out.append(OffsetRange(tp[0], tp[1], lo, hi))
    return out


# -- admission control ---------------------------------------------------------------------


def admit(ranges: Mapping[TP, tuple[int, int]], limit: int | None) -> dict[TP, int]:
    """End offsets that take at most ``limit`` offsets in all from ``ranges`` (lo, hi).

    The limit is shared in proportion to each partition's backlog (as Spark's Kafka source
    does), rounded down, and what rounding leaves is handed out one offset at a time in
    partition order, so small partitions are not starved and the total is exactly
    ``min(limit, backlog)``.
    """
    ends = {tp: hi for tp, (lo, hi) in ranges.items()}
    backlog = {tp: hi - lo for tp, (lo, hi) in ranges.items() if hi > lo}
    total = sum(backlog.values())
    if limit is None or total <= limit:
        return ends
    shares = {tp: limit * n // total for tp, n in backlog.items()}
    left = limit - sum(shares.values())
    while left > 0:
        for tp in sorted(backlog):
            if left and shares[tp] < backlog[tp]:
                shares[tp] += 1
                left -= 1
    for tp, (lo, _) in ranges.items():
        if tp in shares:
            ends[tp] = lo + shares[tp]
    return ends


# -- Spark tasks ---------------------------------------------------------------------------


def split(ranges: Iterable[OffsetRange], min_partitions: int | None = None,
          max_records: int | None = None) -> list[OffsetRange]:
    """Cut ``ranges`` into task-sized pieces.

    A range becomes ``ceil(size / max_records)`` pieces (``max_records`` defaults to
    DEFAULT_MAX_RECORDS_PER_TASK), or more when ``min_partitions`` asks for more tasks in
    all: each range then gets its share of them by size. Pieces of one range are equal up
    to one offset.
    """
    ranges = [r for r in ranges if r.size > 0]
    cap = max_records or DEFAULT_MAX_RECORDS_PER_TASK
    total = sum(r.size for r in ranges)
    out = []
    for r in ranges:
        pieces = math.ceil(r.size / cap)
        if min_partitions and total:
            pieces = max(pieces, round(r.size * min_partitions / total))
        pieces = max(1, min(pieces, r.size))
        step, extra = divmod(r.size, pieces)
        lo = r.start
        for i in range(pieces):
            hi = lo + step + (1 if i < extra else 0)
            out.append(OffsetRange(r.topic, r.partition, lo, hi))
            lo = hi
    return out
