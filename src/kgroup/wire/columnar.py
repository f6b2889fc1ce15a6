"""Records of a v2 batch encoded from Arrow columns: the producer's bulk path.

How this works: a ``Column`` is an Arrow binary array with its row offsets and null mask
read into numpy. For the rows of one batch, every record's framing is sized at once with
numpy (zigzag varints of the record length, the offset delta, the key and value lengths,
-1 for null) and written, byte position by byte position over all rows (at most five passes
a varint), into two small Arrow columns: what comes before the key (length, attributes 0,
timestamp delta 0, offset delta, key length) and what comes between key and value (value
length). Arrow's ``binary_join_element_wise`` then lays each row's framing, key, framing,
value and headers end to end in C++: the records section, with no Python per row and no
per-byte index arrays. ``frame_batch`` puts the header and CRC around it. One timestamp per
batch, so every timestamp delta is 0. Needs numpy and pyarrow (both come with pyspark).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["Column", "encode_records", "record_sizes", "zigzag", "varint_sizes"]

_NO_HEADERS = pa.scalar(b"\x00", pa.binary())


@dataclass(frozen=True, slots=True)
class Column:
    """Variable-length byte values: an Arrow binary array, and in numpy its bytes
    (``data[offsets[i]:offsets[i + 1]]`` is row i's) and which rows are valid (None: all)."""

    array: Any              # pyarrow binary array
    data: np.ndarray        # uint8
    offsets: np.ndarray     # int64, rows + 1
    valid: np.ndarray | None = None

    @classmethod
    def of(cls, values: list[bytes | None]) -> Column:
        """A column of Python values (tests; headers)."""
        return cls.from_arrow(pa.array(values, pa.binary()))

    @classmethod
    def from_arrow(cls, array: Any) -> Column:
        """An Arrow binary or string array (or chunked array), its bytes not copied (a large
        one's are: record batches are far below 2 GiB)."""
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        t = array.type
        if pa.types.is_large_string(t) or pa.types.is_large_binary(t):
            array = array.cast(pa.binary())
        elif pa.types.is_string(t):
            array = array.cast(pa.binary())
        elif not pa.types.is_binary(t):
            raise TypeError(f"a column of {t} is not bytes (binary or string)")
        n = len(array)
        _, offsets_buf, data_buf = array.buffers()
        if n == 0 or offsets_buf is None:
            offsets = np.zeros(n + 1, np.int64)
        else:
            offsets = np.frombuffer(offsets_buf, np.int32)[array.offset: array.offset + n + 1]
            offsets = offsets.astype(np.int64)
        data = np.frombuffer(data_buf, np.uint8) if data_buf is not None and data_buf.size \
            else np.zeros(0, np.uint8)
        valid = array.is_valid().to_numpy(zero_copy_only=False) if array.null_count else None
        return cls(array, data, offsets, valid)

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


def record_sizes(rows: np.ndarray, value: Column, key: Column | None = None) -> np.ndarray:
    """What each row adds to its batch in the producer's batch.size accounting (as
    ``Producer.send`` counts it: 12 bytes and the key and value, headers not counted)."""
    size = np.maximum(value.lengths(rows)[1], 0) + 12
    if key is not None:
        size += np.maximum(key.lengths(rows)[1], 0)
    return size


def _varint_column(*fields: tuple[np.ndarray, np.ndarray], fixed: dict[int, int] | None = None
                   ) -> Any:
    """An Arrow binary column whose row i is the varints ``(z[i], size[i])`` of ``fields``
    in order, with ``fixed`` zero bytes after the field at that index (attributes,
    timestamp delta)."""
    fixed = fixed or {}
    width = sum(size for _, size in fields) + sum(fixed.values())
    ends = np.cumsum(width)
    out = np.zeros(int(ends[-1]), np.uint8)
    pos = ends - width
    for i, (z, size) in enumerate(fields):
        _put_varints(out, pos, z, size)
        pos = pos + size + fixed.get(i, 0)
    offsets = np.zeros(len(ends) + 1, np.int32)
    offsets[1:] = ends
    return pa.Array.from_buffers(pa.binary(), len(ends), [None, pa.py_buffer(offsets),
                                                          pa.py_buffer(out)])


def encode_records(rows: np.ndarray, value: Column, key: Column | None = None,
                   headers: Column | None = None) -> bytes:
    """The records section of one batch of ``rows`` (in order; offset deltas 0, 1, ...).

    ``headers`` holds each row's headers already encoded (count varint first, as
    record_batch's ``headers_bytes``); None means no row has any."""
    n = len(rows)
    if key is None:
        k_len = np.full(n, -1, np.int64)
    else:
        k_len = key.lengths(rows)[1]
    v_len = value.lengths(rows)[1]
    h_len = np.ones(n, np.int64) if headers is None else headers.lengths(rows)[1]
    od = zigzag(np.arange(n, dtype=np.int64))
    od_n = varint_sizes(od)
    kz, vz = zigzag(k_len), zigzag(v_len)
    kz_n, vz_n = varint_sizes(kz), varint_sizes(vz)
    body = 2 + od_n + kz_n + np.maximum(k_len, 0) + vz_n + np.maximum(v_len, 0) + h_len
    bz = zigzag(body)
    bz_n = varint_sizes(bz)
    take = pa.array(rows, pa.int64())
    parts = [_varint_column((bz, bz_n), (od, od_n), (kz, kz_n), fixed={0: 2})]
    if key is not None:
        parts.append(key.array.take(take))
    parts.append(_varint_column((vz, vz_n)))
    parts.append(value.array.take(take))
    parts.append(_NO_HEADERS if headers is None else headers.array.take(take))
    joined = pc.binary_join_element_wise(*parts, b"", null_handling="skip")
    total = int((bz_n + body).sum())
    return joined.buffers()[2].slice(0, total).to_pybytes()
