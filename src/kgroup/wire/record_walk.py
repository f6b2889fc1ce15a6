"""Checking the records of an uncompressed v2 batch without decoding them.

How this works: Kafka's broker walks every record of an uncompressed batch from a client:
each record's length must fit, its offset delta must be its index, and exactly recordCount
records must fill the batch. `walk_exact` does that record by record in Python (varints
decoded inline); at ~1 µs a record it was most of the broker's produce cost.

`walk_records` gives the same verdict with the per-record work done in C. Producers write
records of one shape: the same length prefix, a timestamp delta of the same varint size, and
an offset delta that grows by one. So the first record of a run is walked exactly (that
gives its size S and the position of each field), and the records after it are checked as
a *run* of records of that same size, field by field across the run with strided slices
(`data[at:stop:S]`: one byte of every record), each compared in C:

- the length-prefix bytes equal the first record's (so every record has size S and the same
  layout); `lstrip` tells how many consecutive records pass;
- the timestamp-delta bytes have their continuation bits as in the first record (so that
  varint ends at the same place; its value is not checked, as in the exact walk);
- the offset-delta bytes equal the varint encoding of i, i+1, ... (precomputed per varint
  size class, so a run stops where the encoding grows a byte).

What the run proves is exactly what the exact walk would have checked for those records, so
the verdict is the same; any mismatch of offset deltas hands the rest of the batch to
`walk_exact`, which raises the precise error (or accepts an odd but valid encoding). tests/unit/wire/test_record_walk.py compares
the two on generated and mutated batches.
"""

from __future__ import annotations

from functools import cache

from kgroup.batch_layout import HEADER_SIZE as BATCH_HEADER_SIZE

from .errors import CorruptRecord, InvalidRecord

# A run shorter than this is cheaper to walk record by record.
_MIN_RUN = 4
# Offset deltas whose varint needs 1, 2, 3 bytes: [lo, hi) of the index (zigzag doubles it).
_CLASSES = ((0, 64), (64, 8192), (8192, 1 << 20))
_HIGH_TO_ONE = bytes(1 if b & 0x80 else 0 for b in range(256))


def walk_exact(data: bytes, count: int, first: int = 0, pos: int = BATCH_HEADER_SIZE) -> None:
    """Check records `first`..count-1 starting at byte `pos`, one at a time."""
    end = len(data)
    try:
        for i in range(first, count):
            pos, _ = _walk_one(data, pos, end, i, count)
    except IndexError:
        raise CorruptRecord("truncated record in record batch") from None
    if pos != end:
        raise InvalidRecord(f"{end - pos} bytes after the last of {count} records")


def _walk_one(data: bytes, pos: int, end: int, i: int, count: int) -> tuple[int, tuple[int, int, int]]:
    """Check record `i` at `pos`: (its end, (length-prefix bytes, timestamp-delta bytes,
    offset-delta bytes)). May raise IndexError on a truncated record."""
    if pos >= end:
        raise InvalidRecord(f"batch declares {count} records but holds {i}")
    start = pos
    # 1. The record's length (zigzag varint) must fit in the batch.
    raw, pos = _raw_varint(data, pos)
    if raw & 1:
        raise CorruptRecord(f"record {i} has a negative length")
    rec_end = pos + (raw >> 1)
    if rec_end > end:
        raise CorruptRecord(f"record {i} length {raw >> 1} overruns the batch")
    # 2. Skip attributes (1 byte) and the timestamp delta; the offset delta is i.
    p = pos + 1
    while data[p] & 0x80:
        p += 1
    p += 1
    ts_bytes = p - pos - 1
    od_start = p
    raw, p = _raw_varint(data, p)
    if p > rec_end:
        raise CorruptRecord(f"record {i} of {rec_end - pos} bytes is too short")
    if raw != i << 1:  # zigzag of a non-negative i
        delta = (raw >> 1) ^ -(raw & 1)
        raise InvalidRecord(f"record {i} has offset delta {delta}, expected {i}")
    return rec_end, (pos - start, ts_bytes, p - od_start)


def _raw_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The unsigned (still zigzagged) varint at `pos` and the position after it."""
    b = data[pos]
    pos += 1
    raw = b & 0x7F
    shift = 7
    while b & 0x80:
        b = data[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        shift += 7
        if shift > 70:
            raise CorruptRecord("varint longer than 10 bytes in record")
    return raw, pos


@cache
def _offset_delta_bytes(size: int, k: int) -> bytes:
    """Byte k of the zigzag varint of every index of size class `size` (1, 2 or 3 bytes)."""
    lo, hi = _CLASSES[size - 1]
    flag = 0x80 if k < size - 1 else 0
    # Byte k of zigzag(i) = 2i is (2i >> 7k) & 0x7F: built from its repeating pattern, in C.
    if k == 0:
        unit = bytes((2 * i) & 0x7F | flag for i in range(64))
    else:
        unit = b"".join(bytes((v | flag,)) * (1 << (7 * k - 1)) for v in range(128))
    return (unit * (hi // len(unit) + 1))[lo:hi]


def _leading(column: bytes, byte: int) -> int:
    """How many leading bytes of `column` equal `byte`."""
    return len(column) - len(column.lstrip(bytes((byte,))))


def walk_records(data: bytes, count: int) -> None:
    """Check that `count` records exactly fill the uncompressed batch `data` (header
    included), with offset deltas 0, 1, 2, ...: the verdict of `walk_exact`, faster."""
    end = len(data)
    pos = BATCH_HEADER_SIZE
    i = 0
    try:
        while i < count:
            # 1. One record exactly: its size and layout.
            rec_end, (len_bytes, ts_bytes, od_bytes) = _walk_one(data, pos, end, i, count)
            size = rec_end - pos
            pos = rec_end
            i += 1
            if od_bytes > len(_CLASSES):
                continue
            # 2. The records after it, as long as they could share that layout.
            lo, hi = _CLASSES[od_bytes - 1]
            if i < lo:   # a longer encoding than i needs (valid, if odd): walk it exactly
                continue
            n = min(count - i, hi - i, (end - pos) // size)
            if n < _MIN_RUN:
                continue
            stop = pos + n * size
            # 2a. Same length prefix -> same size and layout.
            for k in range(len_bytes):
                n = min(n, _leading(data[pos + k:stop:size], data[pos - size + k]))
            # 2b. The timestamp delta ends where the first record's does.
            at = pos + len_bytes + 1
            for k in range(ts_bytes - 1):
                column = data[at + k:pos + n * size:size]
                n = min(n, _leading(column.translate(_HIGH_TO_ONE), 1))
            column = data[at + ts_bytes - 1:pos + n * size:size]
            n = min(n, _leading(column.translate(_HIGH_TO_ONE), 0))
            if n < 1:
                continue
            # 2c. Offset deltas i, i+1, ..., i+n-1, byte by byte.
            at += ts_bytes
            stop = pos + n * size
            for k in range(od_bytes):
                if data[at + k:stop:size] != _offset_delta_bytes(od_bytes, k)[i - lo:i - lo + n]:
                    # The precise error; or none, if an offset delta is a valid varint
                    # of i in more bytes than needed: then the rest was walked and is fine.
                    walk_exact(data, count, i, pos)
                    return
            pos = stop
            i += n
    except IndexError:
        raise CorruptRecord("truncated record in record batch") from None
    if pos != end:
        raise InvalidRecord(f"{end - pos} bytes after the last of {count} records")
