"""The partitions a read covers and the offsets around them, asked on the driver.

``subscribe`` names topics, ``subscribePattern`` matches every topic that is not internal
(the whole name must match, as in Spark), ``assign`` lists partitions. ``startingOffsets``
and ``endingOffsets`` (earliest, latest, or JSON with -2 for earliest and -1 for latest)
are turned into offsets here; a partition the JSON leaves out starts at earliest and ends
at latest.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from kgroup.client.admin import EARLIEST, LATEST
from kgroup.client.blocking import BlockingAdmin
from kgroup.client.errors import KafkaClientError

from .offsets import TP
from .options import PartitionOffsets, SourceOptions


class TopicMissing(KafkaClientError):
    """A topic the read names does not exist."""

    hint = "create it first (`kgroup topics create`) or check the name with `kgroup topics list`"


def partitions(admin: BlockingAdmin, opts: SourceOptions, *, must_exist: bool) -> list[TP]:
    """The topic partitions ``opts`` subscribes to, now.

    A missing topic is an error with ``must_exist`` (a batch read), else it has no
    partitions yet (a stream picks it up once it exists).
    """
    if opts.pattern is not None:
        pattern = re.compile(opts.pattern)
        counts = {t: n for t, n in admin.partition_counts().items() if pattern.fullmatch(t)}
    else:
        names = sorted({t for t, _ in opts.assign} if opts.assign else set(opts.subscribe))
        counts = admin.partition_counts(names)
        missing = [t for t in names if t not in counts]
        if missing and must_exist:
            raise TopicMissing(f"topic {missing[0]!r} does not exist")
    if opts.assign:
        gone = [(t, p) for t, p in opts.assign if t in counts and p >= counts[t]]
        if gone and must_exist:
            raise TopicMissing(f"partition {gone[0][0]}-{gone[0][1]} does not exist "
                               f"({gone[0][0]} has {counts[gone[0][0]]} partitions)")
        return [(t, p) for t, p in opts.assign if t in counts and p < counts[t]]
    return [(t, p) for t, n in sorted(counts.items()) for p in range(n)]


def log_offsets(admin: BlockingAdmin, tps: Iterable[TP], spec: int) -> dict[TP, int]:
    """EARLIEST or LATEST offset of every partition in ``tps``."""
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    out: dict[TP, int] = {}
    for topic, parts in sorted(by_topic.items()):
        for p, off in admin.list_offsets(topic, sorted(parts), spec).items():
            out[(topic, p)] = off
    return out


def resolve(spec: str | PartitionOffsets | None, default: str, missing: int, tps: Iterable[TP],
            earliest: Mapping[TP, int], latest: Mapping[TP, int]) -> dict[TP, int]:
    """Offsets of ``tps`` for a startingOffsets / endingOffsets value: None means
    ``default``; a partition JSON leaves out gets ``missing`` (EARLIEST or LATEST)."""
    spec = default if spec is None else spec
    out = {}
    for tp in tps:
        given = (EARLIEST if spec == "earliest" else LATEST if spec == "latest"
                 else spec.get(tp, missing))  # type: ignore[union-attr]
        out[tp] = earliest[tp] if given == EARLIEST else latest[tp] if given == LATEST else given
    return out
