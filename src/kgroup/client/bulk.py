"""The producer's bulk path: Arrow columns to record batches, a handful of numpy operations
per batch instead of Python per record (``Producer.send_columns``).

How this works: ``columns`` reads an Arrow binary or string array as a ``Column`` (its
buffers, not its values). ``plan`` picks every row's partition the way ``Producer.send``
would: the row's explicit partition, else murmur2 of its key (``murmur2_column``: rows
grouped by key length, each group hashed as a matrix of uint32 lanes), else the sticky
partition of keyless rows, which moves on after every ``batch.size`` bytes of them as it
does when the per-record path closes a batch. Each partition's rows are then cut, in their
order, into batches of about ``batch.size`` bytes (a batch closes at the row that reaches
it, as in ``send``), and each batch's records are encoded by kgroup/wire/columnar.py.
Needs numpy and pyarrow (both come with pyspark); the per-record path needs neither.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from kgroup.wire.columnar import Column, record_sizes
from kgroup.wire.record_batch import headers_bytes

from .errors import KafkaClientError

__all__ = ["columns", "headers_column", "murmur2_column", "plan", "split"]

_M = np.uint32(0x5BD1E995)
_SEED = 0x9747B28C


def columns(array: Any) -> Column:
    """An Arrow binary/string array (or chunked array) as a ``Column``, without copying
    its bytes."""
    try:
        return Column.from_arrow(array)
    except TypeError as exc:
        raise KafkaClientError(str(exc)) from None


def headers_column(array: Any) -> Column | None:
    """Each row's headers (list<struct<key: string, value: binary or string>>) encoded as a
    record carries them; None when no row has any. Python per row that has headers."""
    import pyarrow.compute as pc

    if array is None:
        return None
    counts = pc.fill_null(pc.list_value_length(array), 0).to_numpy(zero_copy_only=False)
    some = np.flatnonzero(counts)
    if not len(some):
        return None
    parts = [b"\x00"] * len(array)
    for i, hs in zip(some.tolist(), array.take(some).to_pylist()):
        parts[i] = headers_bytes([(h["key"], h["value"].encode() if isinstance(h["value"], str)
                                    else h["value"]) for h in hs])
    return Column.of(parts)


def murmur2_column(key: Column, rows: np.ndarray) -> np.ndarray:
    """Kafka's murmur2 of each row's key (non-null rows), as uint32: kgroup/client/
    partitioner.py's function over whole arrays, one pass per distinct key length."""
    start, length = key.lengths(rows)
    out = np.zeros(len(rows), np.uint32)
    for size in np.unique(length).tolist():
        where = np.flatnonzero(length == size)
        m = key.data[start[where, None] + np.arange(size)].astype(np.uint32) if size else \
            np.zeros((len(where), 0), np.uint32)
        h = np.full(len(where), (_SEED ^ size) & 0xFFFFFFFF, np.uint32)
        for i in range(size // 4):
            k = m[:, 4 * i] | (m[:, 4 * i + 1] << 8) | (m[:, 4 * i + 2] << 16) | \
                (m[:, 4 * i + 3] << 24)
            k *= _M
            k ^= k >> 24
            k *= _M
            h *= _M
            h ^= k
        tail = size & ~3
        extra = size % 4
        if extra >= 3:
            h ^= m[:, tail + 2] << 16
        if extra >= 2:
            h ^= m[:, tail + 1] << 8
        if extra >= 1:
            h ^= m[:, tail]
            h *= _M
        h ^= h >> 13
        h *= _M
        h ^= h >> 15
        out[where] = h
    return out


def plan(n: int, count: int, topic: str, value: Column, key: Column | None, partitions: Any,
         batch_size: int, sticky: Callable[[], int], moved_on: Callable[[int], None]
         ) -> np.ndarray:
    """Every row's partition, as ``Producer.send`` of the rows one by one would pick it
    (its open batches empty at the start). ``sticky()`` is the partitioner's partition for
    keyless rows, ``moved_on(p)`` tells it a batch of p closed."""
    part = np.full(n, -1, np.int64)
    if partitions is not None:
        import pyarrow.compute as pc

        given = pc.fill_null(partitions, -1).to_numpy(zero_copy_only=False).astype(np.int64)
        explicit = partitions.is_valid().to_numpy(zero_copy_only=False)
        bad = explicit & ((given < 0) | (given >= count))
        if bad.any():
            p = int(given[np.flatnonzero(bad)[0]])
            raise KafkaClientError(f"topic {topic!r} has {count} partitions; there is no "
                                   f"partition {p}", "pick a partition below the topic's "
                                   "partition count")
        part[explicit] = given[explicit]
    free = part < 0
    if key is not None:
        keyed = free if key.valid is None else free & key.valid
        rows = np.flatnonzero(keyed)
        if len(rows):
            part[rows] = (murmur2_column(key, rows) & np.uint32(0x7FFFFFFF)) % count
        free &= ~keyed
    if not free.any():
        return part
    sizes = record_sizes(np.arange(n), value, key)
    if free.all():
        # Keyless rows alone: the sticky partition takes batch.size bytes of them, then
        # the next one does.
        for lo, hi in split(sizes, batch_size):
            p = sticky()
            part[lo:hi] = p
            if sizes[lo:hi].sum() >= batch_size:
                moved_on(p)
        return part
    # Keyless rows among others: a partition's batch closes on whichever rows fill it, so
    # follow the rows in order, as send() does (Python per row, for these batches only).
    filled: dict[int, int] = {}
    out = part.tolist()
    for i, (p, size) in enumerate(zip(out, sizes.tolist())):
        if p < 0:
            p = out[i] = sticky()
        total = filled.get(p, 0) + size
        if total >= batch_size:
            moved_on(p)
            total = 0
        filled[p] = total
    return np.array(out, np.int64)


def split(sizes: np.ndarray, batch_size: int) -> list[tuple[int, int]]:
    """Cut rows of these sizes into runs: a run ends at the row that brings it to
    ``batch_size`` bytes (always at least one row)."""
    ends = np.cumsum(sizes)
    out = []
    lo, before = 0, 0
    while lo < len(sizes):
        hi = min(int(np.searchsorted(ends, before + batch_size, "left")) + 1, len(sizes))
        out.append((lo, hi))
        lo, before = hi, int(ends[hi - 1])
    return out
