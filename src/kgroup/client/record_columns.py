"""Fetched records as columns: from a Fetch response's record batches straight to Arrow.

A reader that hands records on as Arrow (the Spark source) need not build a Python object
per record. ``decode_columns`` reads the same batches as the consumer's ``fetcher.decode``
(``data_batches``: CRC checked, decompressed, control batches and aborted transactions
dropped as there) into ``RecordColumns``: offsets, timestamps and timestamp types as numpy
arrays, keys and values as Arrow binary arrays, headers (rare) as a list.

How it stays cheap: a producer's batch is mostly runs of same-shaped records at a fixed
stride (``fetcher.run_layout`` finds them, as the consumer's fast path does). A run is a
(records x stride) byte matrix: its keys and values are column slices of it, copied out in
one numpy operation each; its timestamp deltas are one or two byte columns, decoded as
arrays. No Python runs per record. A batch that is not made of runs (headers, varied
shapes) is decoded record by record by ``fetcher.decode_payload`` and its records turned
into columns. Binary columns are built from lengths and bytes
(``pa.Array.from_buffers``).

``RecordColumns`` behaves as the consumer's list of records where the fetcher needs it
(length, slices, ``[-1].offset``, ``+``), so ``read_as_columns(consumer)`` makes a
``Consumer`` hand out columns from ``getmany`` with everything else unchanged. Needs
numpy and pyarrow (installed with kgroup[spark]).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from kgroup.wire import record_batch

from .fetcher import MISFIT, Shape, offset_columns, data_batches, decode_payload, run_layout
from .records import ConsumerRecord, TopicPartition

__all__ = ["RecordColumns", "decode_columns", "read_as_columns"]

_EMPTY_BYTES = np.zeros(0, np.uint8)


class RecordColumns:
    """Records of one partition as columns (see the module comment); slices share memory."""

    __slots__ = ("offsets", "timestamps", "timestamp_types", "keys", "values", "headers")

    def __init__(self, offsets: np.ndarray, timestamps: np.ndarray, timestamp_types: np.ndarray,
                 keys: pa.Array, values: pa.Array, headers: list[Any] | None) -> None:
        self.offsets = offsets                  # int64
        self.timestamps = timestamps            # int64, ms
        self.timestamp_types = timestamp_types  # int32
        self.keys = keys                        # pa.binary(), nulls where a key is null
        self.values = values
        self.headers = headers                  # None: no record has headers; else per record

    @classmethod
    def empty(cls) -> RecordColumns:
        none = np.zeros(0, np.int64)
        return cls(none, none, np.zeros(0, np.int32), pa.array([], pa.binary()),
                   pa.array([], pa.binary()), None)

    def __len__(self) -> int:
        return len(self.offsets)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            lo, hi, step = i.indices(len(self))
            if step != 1:
                raise ValueError("record columns slice with step 1 only")
            hi = max(lo, hi)
            return RecordColumns(self.offsets[lo:hi], self.timestamps[lo:hi],
                                 self.timestamp_types[lo:hi], self.keys.slice(lo, hi - lo),
                                 self.values.slice(lo, hi - lo),
                                 None if self.headers is None else self.headers[lo:hi])
        return self.record(i)

    def record(self, i: int, tp: TopicPartition = TopicPartition("", -1)) -> ConsumerRecord:
        """Record ``i`` as the consumer would hand it out (``tp``: its topic and partition)."""
        if i < 0:
            i += len(self)
        return ConsumerRecord(tp.topic, tp.partition, int(self.offsets[i]),
                              int(self.timestamps[i]), int(self.timestamp_types[i]),
                              self.keys[i].as_py(), self.values[i].as_py(),
                              tuple(self.headers[i]) if self.headers is not None else ())

    def __add__(self, other: RecordColumns) -> RecordColumns:
        if not len(other):
            return self
        if not len(self):
            return other
        headers = None
        if self.headers is not None or other.headers is not None:
            headers = (self.headers or [()] * len(self)) + (other.headers or [()] * len(other))
        return RecordColumns(np.concatenate([self.offsets, other.offsets]),
                             np.concatenate([self.timestamps, other.timestamps]),
                             np.concatenate([self.timestamp_types, other.timestamp_types]),
                             pa.concat_arrays([self.keys, other.keys]),
                             pa.concat_arrays([self.values, other.values]), headers)

    def before(self, end: int) -> RecordColumns:
        """The records with offsets below ``end``."""
        return self[:int(np.searchsorted(self.offsets, end))]

    def as_records(self, tp: TopicPartition) -> list[ConsumerRecord]:
        """Every record as a ``ConsumerRecord`` (tests compare the two paths with this)."""
        return [self.record(i, tp) for i in range(len(self))]


def read_as_columns(consumer: Any) -> None:
    """Make ``consumer`` (a ``Consumer``, before it fetches) hand out ``RecordColumns``
    from ``getmany`` instead of lists of ``ConsumerRecord``."""
    consumer.fetcher.decode = decode_columns


def decode_columns(tp: TopicPartition, blob: bytes, start: int,
                   aborted: list[tuple[int, int]] | None = None) -> tuple[RecordColumns, int]:
    """``fetcher.decode`` into columns: the records at or after ``start`` of a Fetch
    records blob, and the offset after its last whole batch."""
    batches, after = data_batches(blob, start, aborted)
    pieces = _Pieces()
    for batch, payload in batches:
        h = batch.header
        try:
            runs = run_layout(payload, h, _numpy_extent)
        except MISFIT:
            runs = None
        if runs is None:
            records: list[ConsumerRecord] = []
            decode_payload(records, batch, payload, tp.topic, tp.partition, start)
            pieces.add_records(records)
        else:
            pieces.add_runs(payload, h, runs, start)
    return pieces.columns(), after


def _numpy_extent(payload: bytes, pos: int, index: int, limit: int, shape: Shape) -> int:
    """``fetcher.run_extent`` with numpy: every candidate record checked at once, the run
    ends at the first that does not fit."""
    stride = shape.stride
    rows = np.frombuffer(payload, np.uint8, limit * stride, pos).reshape(limit, stride)
    same = list(shape.same)
    bad = (rows[:, same] != rows[0, same]).any(axis=1)
    ts = rows[:, shape.ts_at]
    if shape.ts_size == 1:
        bad |= ts >= 0x80
    else:
        bad |= (ts < 0x80) | (rows[:, shape.ts_at + 1] >= 0x80)
    cols = offset_columns(index + limit, shape.off_size)
    for j in range(shape.off_size):
        bad |= rows[:, shape.off_at + j] != np.frombuffer(cols[j], np.uint8, limit, index)
    first_bad = int(bad.argmax())
    return first_bad if bad[first_bad] else limit


class _Pieces:
    """Columns of a fetch, gathered batch by batch, joined once at the end."""

    def __init__(self) -> None:
        # Per piece (a run, or the records of a batch read one by one), in order.
        self.counts: list[int] = []
        self.first_offsets: list[int] = []    # a run's first offset; -1: see offsets
        self.offsets: list[np.ndarray] = []   # a record-by-record piece's offsets
        self.stamps: list[np.ndarray] = []
        self.types: list[np.ndarray] = []
        self.key_lens: list[np.ndarray] = []
        self.key_data: list[np.ndarray] = []
        self.value_lens: list[np.ndarray] = []
        self.value_data: list[np.ndarray] = []
        self.headers: list[Sequence[Any] | int] = []   # a run's: its length (no headers)
        self.with_headers = False

    def add_runs(self, payload: bytes, h: record_batch.BatchHeader, runs: list[Any],
                 start: int) -> None:
        buf = np.frombuffer(payload, np.uint8)
        ts_type = int(h.timestamp_type)
        for run in runs:
            first = h.base_offset + run.index
            skip = start - first if start > first else 0
            n = run.count - skip
            if n <= 0:
                continue
            at = run.pos + skip * run.stride
            rows = buf[at:at + n * run.stride].reshape(n, run.stride)
            self.counts.append(n)
            self.first_offsets.append(first + skip)
            if ts_type == 1:   # log append time: the batch's max timestamp for every record
                self.stamps.append(np.full(n, h.max_timestamp, np.int64))
            else:
                z = rows[:, run.ts_at].astype(np.int64)
                if run.ts_size == 2:
                    z = (z & 0x7F) | (rows[:, run.ts_at + 1].astype(np.int64) << 7)
                self.stamps.append(h.base_timestamp + ((z >> 1) ^ -(z & 1)))
            self.types.append(ts_type)
            self.key_lens.append(run.key_len)
            if run.key_len > 0:
                self.key_data.append(rows[:, run.key_at:run.key_at + run.key_len].ravel())
            self.value_lens.append(run.value_len)
            if run.value_len:
                self.value_data.append(rows[:, run.value_at:run.value_at + run.value_len].ravel())
            self.headers.append(n)

    def add_records(self, records: list[ConsumerRecord]) -> None:
        n = len(records)
        if not n:
            return
        self.counts.append(n)
        self.first_offsets.append(-1)
        self.offsets.append(np.fromiter((r.offset for r in records), np.int64, n))
        self.stamps.append(np.fromiter((r.timestamp for r in records), np.int64, n))
        self.types.append(np.fromiter((r.timestamp_type for r in records), np.int32, n))
        for lens, data, field in ((self.key_lens, self.key_data, "key"),
                                  (self.value_lens, self.value_data, "value")):
            got = [getattr(r, field) for r in records]
            lens.append(np.fromiter((-1 if b is None else len(b) for b in got), np.int32, n))
            data.append(np.frombuffer(b"".join(b for b in got if b), np.uint8))
        headers = [r.headers for r in records]
        self.with_headers |= any(headers)
        self.headers.append(headers)

    def columns(self) -> RecordColumns:
        if not self.counts:
            return RecordColumns.empty()
        counts = np.array(self.counts, np.int64)
        offsets = []
        if -1 in self.first_offsets:   # pieces read record by record have their own
            read = iter(self.offsets)
            offsets = [next(read) if o < 0 else np.arange(o, o + n, dtype=np.int64)
                       for o, n in zip(self.first_offsets, self.counts)]
            all_offsets = np.concatenate(offsets)
        else:   # runs only: each run's offsets count up from its first
            firsts = np.array(self.first_offsets, np.int64)
            starts = np.cumsum(counts) - counts
            all_offsets = np.repeat(firsts - starts, counts) + np.arange(int(counts.sum()))
        headers = None
        if self.with_headers:
            headers = []
            for piece in self.headers:
                headers.extend([()] * piece if isinstance(piece, int) else piece)
        return RecordColumns(all_offsets, np.concatenate(self.stamps),
                             _per_record(self.types, counts, np.int32),
                             _binary(_per_record(self.key_lens, counts, np.int32), self.key_data),
                             _binary(_per_record(self.value_lens, counts, np.int32),
                                     self.value_data),
                             headers)


def _per_record(pieces: list[Any], counts: np.ndarray, dtype: Any) -> np.ndarray:
    """One value per record from pieces that are a value for all of a run's records or an
    array with one per record."""
    if all(isinstance(p, int) for p in pieces):
        return np.repeat(np.array(pieces, dtype), counts)
    return np.concatenate([np.full(n, p, dtype) if isinstance(p, int) else p
                           for p, n in zip(pieces, counts.tolist())])


def _binary(lens: np.ndarray, data: list[np.ndarray]) -> pa.Array:
    """An Arrow binary array from lengths (-1: null) and the values' bytes, in order."""
    n = len(lens)
    nulls = lens < 0
    null_count = int(nulls.sum())
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(np.where(nulls, 0, lens) if null_count else lens, out=offsets[1:])
    validity = None
    if null_count:
        validity = pa.py_buffer(np.packbits(~nulls, bitorder="little"))
    joined = np.concatenate(data) if data else _EMPTY_BYTES
    return pa.Array.from_buffers(pa.binary(), n,
                                 [validity, pa.py_buffer(offsets), pa.py_buffer(joined)],
                                 null_count=null_count)
