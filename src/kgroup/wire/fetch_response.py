"""A direct encoder for Fetch responses (v4–v18) whose records may stay in files.

How this works: `encode_fetch_response` writes the response frame (size prefix, response
header, every field of every version we serve) with struct, straight from plain tuples,
without building kio objects. A partition's records are either bytes, copied in, or any
other object with a length (the broker's `RecordsSlice` of a segment file): the encoder
writes its length prefix and then puts the object itself in the list of parts, so the
batches can go from the file to the socket with sendfile. Joining the parts (a slice read as
its bytes) gives exactly the frame kio's writer gives for the same response built field by
field: tests/unit/broker/test_fetch_zero_copy.py checks every version byte for byte.

Version layout (Kafka's FetchResponse.json): v4 isolation fields (last_stable_offset,
aborted_transactions); v5 log_start_offset; v7 top-level error_code and session_id; v11
preferred_read_replica; v12 flexible (compact arrays and strings, tagged fields — we send
none: every tagged field is at its default); v13 topic ids instead of names.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from typing import Any, NamedTuple

from .fast_responses import uvarint

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_TOP = struct.Struct(">ihi")           # throttle, error, session id (v7+)
_PARTITION = struct.Struct(">ihqqq")   # index, error, high watermark, LSO, log start (v5+)
_PARTITION_V4 = struct.Struct(">ihqq")  # no log start offset
_ABORTED = struct.Struct(">qq")
_NIL_UUID = bytes(16)


class FetchPartition(NamedTuple):
    index: int
    error_code: int
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    # (producer id, first offset) pairs, or None (only read_committed fetches carry them)
    aborted: Sequence[tuple[int, int]] | None = None
    # bytes, or a sized object (a file slice) sent as is
    records: Any = b""


class FetchTopic(NamedTuple):
    name: str
    topic_id: uuid.UUID | None
    partitions: Sequence[FetchPartition]


def encode_fetch_response(version: int, correlation_id: int, error_code: int, session_id: int,
                          topics: Sequence[FetchTopic], throttle_ms: int = 0) -> list[Any]:
    """The size-prefixed response frame as a list of parts: bytes, and the records objects
    that are not bytes, in order."""
    flexible = version >= 12
    parts: list[Any] = []
    buf = bytearray(_I32.pack(correlation_id))
    if flexible:
        buf += b"\x00"                                    # response header v1: no tags
    if version >= 7:
        buf += _TOP.pack(throttle_ms, error_code, session_id)
    else:
        buf += _I32.pack(throttle_ms)
    buf += uvarint(len(topics) + 1) if flexible else _I32.pack(len(topics))
    partition_head = _PARTITION if version >= 5 else _PARTITION_V4
    for topic in topics:
        # 1. Topic: its id from v13, else its name.
        if version >= 13:
            buf += topic.topic_id.bytes if topic.topic_id is not None else _NIL_UUID
        else:
            name = topic.name.encode()
            buf += uvarint(len(name) + 1) if flexible else _I16.pack(len(name))
            buf += name
        buf += uvarint(len(topic.partitions) + 1) if flexible else _I32.pack(len(topic.partitions))
        for p in topic.partitions:
            # 2. The partition's fixed fields, its aborted transactions, its records.
            if version >= 5:
                buf += partition_head.pack(p.index, p.error_code, p.high_watermark, p.last_stable_offset,
                                           p.log_start_offset)
            else:
                buf += partition_head.pack(p.index, p.error_code, p.high_watermark, p.last_stable_offset)
            aborted = p.aborted
            if aborted is None:
                buf += b"\x00" if flexible else b"\xff\xff\xff\xff"
            else:
                buf += uvarint(len(aborted) + 1) if flexible else _I32.pack(len(aborted))
                for producer_id, first_offset in aborted:
                    buf += _ABORTED.pack(producer_id, first_offset)
                    if flexible:
                        buf += b"\x00"
            if version >= 11:
                buf += b"\xff\xff\xff\xff"                # preferred_read_replica -1
            records = p.records
            size = len(records)
            buf += uvarint(size + 1) if flexible else _I32.pack(size)
            if isinstance(records, (bytes, bytearray, memoryview)):
                buf += records
            elif size:
                parts.append(bytes(buf))
                parts.append(records)
                buf = bytearray()
            if flexible:
                buf += b"\x00"                            # partition tags
        if flexible:
            buf += b"\x00"                                # topic tags
    if flexible:
        buf += b"\x00"                                    # response tags
    parts.append(bytes(buf))
    total = sum(len(part) for part in parts)
    parts[0] = _I32.pack(total) + parts[0]
    return parts
