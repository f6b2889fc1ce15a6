"""Records of a v2 batch encoded from columns with numpy: the producer's bulk path.

How this works: a column is its bytes laid end to end (``data``), where each row starts
(``offsets``, one more than the rows) and which rows are null (``valid``, or None): the
layout of an Arrow binary array. For the rows of one batch, every record's parts are sized
at once (zigzag varints of the offset delta, the key and value lengths, -1 for null; the
pre-encoded headers or the one byte of "no headers"), the record lengths summed into where
each record starts, and each part written into one zeroed buffer by position: a varint
byte by byte over all rows (at most five passes), the key and value bytes by one gather of
every byte. Nothing is done per row in Python; ``frame_batch`` then puts the header and CRC
around the result. Attributes and timestamp delta are 0 (one timestamp per batch), which
the zeroed buffer already holds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Column", "encode_records", "record_sizes", "zigzag", "varint_sizes"]


@dataclass(frozen=True, slots=True)
class Column:
    """Variable-length byte values: ``data[offsets[i]:offsets[i + 1]]`` is row i's, unless
    ``valid`` says it is null."""

    data: np.ndarray        # uint8
    offsets: np.ndarray     # int64, rows + 1
    valid: np.ndarray | None = None   # bool per row; None: no nulls

    @classmethod
    def of(cls, values: list[bytes | None]) -> Column:
        """A column of Python values (tests; headers)."""
        lengths = np.fromiter((len(v) if v is not None else 0 for v in values), np.int64,
                              len(values))
        offsets = np.zeros(len(values) + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = np.frombuffer(b"".join(v for v in values if v is not None), np.uint8)
        valid = None
        if any(v is None for v in values):
            valid = np.fromiter((v is not None for v in values), bool, len(values))
        return cls(data, offsets, valid)

    def lengths(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(start, length) of ``rows``' bytes; a null row has length -1."""
        start = self.offsets[rows]
        length = self.offsets[rows + 1] - start
        if self.valid is not None:
            length = np.where(self.valid[rows], length, -1)
        return start, length


def zigzag(values: np.ndarray) -> np.ndarray:
    """Kafka's zigzag of int64 values, as uint64."""
    v = values.astype(np.int64, copy=False)
    return ((v << 1) ^ (v >> 63)).view(np.uint64)


def varint_sizes(z: np.ndarray) -> np.ndarray:
    """Bytes of each zigzagged value's varint."""
    n = np.ones(len(z), np.int64)
    for bits in range(7, 64, 7):
        more = z >= np.uint64(1 << bits)
        if not more.any():
            break
        n += more
    return n


def _put_varints(out: np.ndarray, pos: np.ndarray, z: np.ndarray, sizes: np.ndarray) -> None:
    for j in range(int(sizes.max(initial=0))):
        part = (z >> np.uint64(7 * j)) & np.uint64(0x7F)
        part |= np.where(sizes - 1 > j, np.uint64(0x80), np.uint64(0))
        if j == 0:
            out[pos] = part
        else:
            some = sizes > j
            out[pos[some] + j] = part[some]


def _put_bytes(out: np.ndarray, pos: np.ndarray, data: np.ndarray, start: np.ndarray,
               length: np.ndarray) -> None:
    length = np.maximum(length, 0)
    total = int(length.sum())
    if not total:
        return
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(length) - length, length)
    out[np.repeat(pos, length) + within] = data[np.repeat(start, length) + within]


def record_sizes(rows: np.ndarray, value: Column, key: Column | None = None) -> np.ndarray:
    """What each row adds to its batch in the producer's batch.size accounting (as
    ``Producer.send`` counts it: 12 bytes and the key and value, headers not counted)."""
    size = np.maximum(value.lengths(rows)[1], 0) + 12
    if key is not None:
        size += np.maximum(key.lengths(rows)[1], 0)
    return size


def encode_records(rows: np.ndarray, value: Column, key: Column | None = None,
                   headers: Column | None = None) -> bytes:
    """The records section of one batch of ``rows`` (in order; offset deltas 0, 1, ...).

    ``headers`` holds each row's headers already encoded (count varint first, as
    record_batch's ``_headers_bytes``); None means no row has any."""
    n = len(rows)
    if key is None:
        k_start, k_len = np.zeros(n, np.int64), np.full(n, -1, np.int64)
    else:
        k_start, k_len = key.lengths(rows)
    v_start, v_len = value.lengths(rows)
    if headers is None:
        h_start, h_len = np.zeros(n, np.int64), np.ones(n, np.int64)   # one 0x00 byte
    else:
        h_start, h_len = headers.lengths(rows)
    od = zigzag(np.arange(n, dtype=np.int64))
    od_n = varint_sizes(od)
    kz, vz = zigzag(k_len), zigzag(v_len)
    kz_n, vz_n = varint_sizes(kz), varint_sizes(vz)
    body = 2 + od_n + kz_n + np.maximum(k_len, 0) + vz_n + np.maximum(v_len, 0) + h_len
    bz = zigzag(body)
    bz_n = varint_sizes(bz)
    ends = np.cumsum(bz_n + body)
    out = np.zeros(int(ends[-1]) if n else 0, np.uint8)
    pos = ends - (bz_n + body)
    _put_varints(out, pos, bz, bz_n)
    pos = pos + bz_n + 2                 # attributes and timestamp delta: 0
    _put_varints(out, pos, od, od_n)
    pos += od_n
    _put_varints(out, pos, kz, kz_n)
    pos += kz_n
    if key is not None:
        _put_bytes(out, pos, key.data, k_start, k_len)
        pos += np.maximum(k_len, 0)
    _put_varints(out, pos, vz, vz_n)
    pos += vz_n
    _put_bytes(out, pos, value.data, v_start, v_len)
    if headers is not None:
        pos += np.maximum(v_len, 0)
        _put_bytes(out, pos, headers.data, h_start, h_len)
    return out.tobytes()
