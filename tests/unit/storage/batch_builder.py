"""Build Kafka record batches v2 with a correct CRC32C, for the partition-log tests.

The records section is a real v2 encoding (varint fields) so the batches are what a client
would send, though storage only looks at the header.
"""

from __future__ import annotations

import struct

import crc32c

_HEADER_TAIL = struct.Struct(">hiqqqhii")  # attributes .. recordCount (bytes 21..61)


def _varint(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)  # zigzag
    out = bytearray()
    while True:
        b = z & 0x7F
        z >>= 7
        if z:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _record(offset_delta: int, ts_delta: int, value: bytes) -> bytes:
    body = (b"\x00" + _varint(ts_delta) + _varint(offset_delta) + _varint(-1)
            + _varint(len(value)) + value + _varint(0))
    return _varint(len(body)) + body


def make_batch(values: list[bytes], base_timestamp: int = 1_000, timestamp_step: int = 1,
               base_offset: int = 0) -> bytes:
    """A v2 batch with one record per value; record i has timestamp base + i*step."""
    records = b"".join(_record(i, i * timestamp_step, v) for i, v in enumerate(values))
    n = len(values)
    max_ts = base_timestamp + (n - 1) * timestamp_step
    tail = _HEADER_TAIL.pack(0, n - 1, base_timestamp, max_ts, -1, -1, -1, n) + records
    crc = crc32c.crc32c(tail)
    batch_length = 4 + 1 + 4 + len(tail)  # partitionLeaderEpoch + magic + crc + rest
    return struct.pack(">qiibI", base_offset, batch_length, 0, 2, crc) + tail


def base_offset_of(batch: bytes) -> int:
    return struct.unpack_from(">q", batch, 0)[0]


def crc_is_valid(batch: bytes) -> bool:
    return struct.unpack_from(">I", batch, 17)[0] == crc32c.crc32c(batch[21:])


def split_batches(data: bytes) -> list[bytes]:
    """Cut concatenated batches apart using batchLength."""
    out = []
    pos = 0
    while pos < len(data):
        (length,) = struct.unpack_from(">i", data, pos + 8)
        out.append(data[pos:pos + 12 + length])
        pos += 12 + length
    assert pos == len(data), "trailing partial batch"
    return out
