"""Hand-written encoders for the hottest responses, byte-identical to kio's.

kio's generic writer walks a schema per field in Python; for a response sent thousands of
times a second that is most of the broker's cost. ConsumerGroupHeartbeat (v0 and v1 share
one layout), StreamsGroupHeartbeat (v0 and v1), the classic Heartbeat (v0-v4: an error code, a throttle time from v1, tagged
fields from v4) and OffsetCommit (v2-v10: a thousand partitions' errors per answer of a
large commit) are written here directly. tests/unit/wire/test_fast_responses.py checks
every byte against kio's own writer.
"""

from __future__ import annotations

import struct
from datetime import timedelta
from typing import Any, Callable

_HEAD = struct.Struct(">iBih")          # size placeholder excluded: corr, header tags, throttle, error
_I32 = struct.Struct(">i")
_TWO_I32 = struct.Struct(">ii")
# Heartbeat frames, size prefix included: v0 corr + error; v1-v3 corr + throttle + error;
# v4 (flexible) corr + header tags + throttle + error + body tags.
_HEARTBEAT_V0 = struct.Struct(">iih")
_HEARTBEAT_V1 = struct.Struct(">iiih")
_HEARTBEAT_V4 = struct.Struct(">iiBihB")


_MILLISECOND = timedelta(milliseconds=1)


# The few durations answers carry (throttle 0, the heartbeat intervals), remembered: the
# division makes objects on every answer. Bounded, in case a client-driven value varies.
_MS_OF: dict[timedelta, int] = {}


def _ms(value: Any) -> int:
    """Whole milliseconds of a kio duration, exactly as kio writes it (no float rounding)."""
    if type(value) is not timedelta:
        return value // _MILLISECOND if isinstance(value, timedelta) else int(value)
    ms = _MS_OF.get(value)
    if ms is None:
        ms = value // _MILLISECOND
        if len(_MS_OF) < 1024:
            _MS_OF[value] = ms
    return ms


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _compact_nullable_string(value: str | None) -> bytes:
    if value is None:
        return b"\x00"
    data = value.encode()
    n = len(data) + 1
    return (_ONE_BYTE[n] if n < 0x80 else uvarint(n)) + data


_ONE_BYTE = [bytes((n,)) for n in range(0x80)]


def encode_consumer_group_heartbeat_response(correlation_id: int, version: int, response: Any) -> bytes:
    """A size-prefixed ConsumerGroupHeartbeat v0/v1 response frame (both share one layout)."""
    head = b"".join((
        _HEAD.pack(correlation_id, 0, _ms(response.throttle_time), response.error_code),
        _compact_nullable_string(response.error_message),
        _compact_nullable_string(response.member_id),
        _TWO_I32.pack(response.member_epoch, _ms(response.heartbeat_interval)),
    ))
    assignment = response.assignment
    if assignment is None:      # a steady heartbeat's answer: no assignment, no tagged fields
        return _I32.pack(len(head) + 2) + head + b"\xff\x00"
    topics = assignment.topic_partitions
    parts = [head, b"\x01", uvarint(len(topics) + 1)]
    for tp in topics:
        parts.append(tp.topic_id.bytes if tp.topic_id is not None else bytes(16))
        parts.append(uvarint(len(tp.partitions) + 1))
        parts.append(b"".join(_I32.pack(p) for p in tp.partitions))
        parts.append(b"\x00")
    parts.append(b"\x00\x00")        # the assignment's tagged fields, then the body's
    body = b"".join(parts)
    return _I32.pack(len(body)) + body


def encode_heartbeat_response(correlation_id: int, version: int, response: Any) -> bytes:
    """A size-prefixed Heartbeat v0-v4 response frame."""
    error = int(response.error_code)
    if version == 0:
        return _HEARTBEAT_V0.pack(6, correlation_id, error)
    throttle_ms = _ms(response.throttle_time)
    if version < 4:
        return _HEARTBEAT_V1.pack(10, correlation_id, throttle_ms, error)
    return _HEARTBEAT_V4.pack(12, correlation_id, 0, throttle_ms, error, 0)


_I16 = struct.Struct(">h")
_PARTITION = struct.Struct(">ih")           # partition index, error code
_PARTITION_FLEX = struct.Struct(">ihB")     # ... and no tagged fields


def _string(value: str, flexible: bool) -> bytes:
    data = value.encode()
    return (uvarint(len(data) + 1) if flexible else _I16.pack(len(data))) + data


def encode_offset_commit_response(correlation_id: int, version: int, response: Any) -> bytes:
    """A size-prefixed OffsetCommit v2-v10 response frame: a throttle time from v3, the
    flexible encoding from v8, topics by id from v10. An answer to a 1,000-offset commit is
    a thousand (partition, error) pairs, which kio's writer walked field by field."""
    flexible = version >= 8
    parts = [_I32.pack(correlation_id)]
    if flexible:
        parts.append(b"\x00")
    if version >= 3:
        parts.append(_I32.pack(_ms(response.throttle_time)))
    topics = response.topics
    parts.append(uvarint(len(topics) + 1) if flexible else _I32.pack(len(topics)))
    pack = _PARTITION_FLEX.pack if flexible else _PARTITION.pack
    for topic in topics:
        if version >= 10:
            parts.append(topic.topic_id.bytes if topic.topic_id is not None else bytes(16))
        else:
            parts.append(_string(topic.name, flexible))
        partitions = topic.partitions
        parts.append(uvarint(len(partitions) + 1) if flexible else _I32.pack(len(partitions)))
        if flexible:
            parts.append(b"".join([pack(p.partition_index, p.error_code, 0) for p in partitions]))
            parts.append(b"\x00")
        else:
            parts.append(b"".join([pack(p.partition_index, p.error_code) for p in partitions]))
    if flexible:
        parts.append(b"\x00")
    body = b"".join(parts)
    return _I32.pack(len(body)) + body


_I8 = struct.Struct(">b")
_I64 = struct.Struct(">q")
_U16 = struct.Struct(">H")
_STREAMS_EPOCHS = struct.Struct(">ii")          # member epoch, heartbeat interval


def _compact_string(value: str) -> bytes:
    data = value.encode()
    n = len(data) + 1
    return (_ONE_BYTE[n] if n < 0x80 else uvarint(n)) + data


def _compact_length(items: Any) -> bytes:
    """A compact (nullable) array's length: 0 for null, else the count + 1."""
    if items is None:
        return b"\x00"
    n = len(items) + 1
    return _ONE_BYTE[n] if n < 0x80 else uvarint(n)


def _int32s(values: Any) -> bytes:
    return _compact_length(values) + b"".join([_I32.pack(v) for v in values])


def _task_ids(tasks: Any) -> bytes:
    if tasks is None:
        return b"\x00"
    return _compact_length(tasks) + b"".join([
        _compact_string(t.subtopology_id) + _int32s(t.partitions) + b"\x00" for t in tasks])


def _topic_partitions(items: Any) -> bytes:
    return _compact_length(items) + b"".join([
        _compact_string(tp.topic) + _int32s(tp.partitions) + b"\x00" for tp in items])


def encode_streams_group_heartbeat_response(correlation_id: int, version: int, response: Any) -> bytes:
    """A size-prefixed StreamsGroupHeartbeat v0/v1 response frame (KIP-1071): v0 carries an
    int32 recovery lag (AcceptableRecoveryLagLegacy), v1 the int64 AcceptableRecoveryLag and
    TopologyDescriptionRequired. A steady heartbeat's answer is mostly nulls; kio's writer
    walked every field of the schema for it."""
    parts = [
        _HEAD.pack(correlation_id, 0, _ms(response.throttle_time), response.error_code),
        _compact_nullable_string(response.error_message),
        _compact_string(response.member_id),
        _STREAMS_EPOCHS.pack(response.member_epoch, _ms(response.heartbeat_interval)),
    ]
    if version == 0:                    # kio's v0 names the int32 AcceptableRecoveryLagLegacy so
        parts.append(_I32.pack(response.acceptable_recovery_lag))
    parts.append(_I32.pack(_ms(response.task_offset_interval)))
    if version >= 1:
        parts.append(_I64.pack(response.acceptable_recovery_lag))
    status = response.status
    parts.append(_compact_length(status))
    if status:
        parts.append(b"".join([_I8.pack(st.status_code) + _compact_string(st.status_detail) + b"\x00"
                               for st in status]))
    parts.append(_task_ids(response.active_tasks))
    parts.append(_task_ids(response.standby_tasks))
    parts.append(_task_ids(response.warmup_tasks))
    if version >= 1:
        parts.append(b"\x01" if response.topology_description_required else b"\x00")
    parts.append(_I32.pack(response.endpoint_information_epoch))
    endpoints = response.partitions_by_user_endpoint
    parts.append(_compact_length(endpoints))
    if endpoints:
        for e in endpoints:
            ep = e.user_endpoint
            parts.append(_compact_string(ep.host) + _U16.pack(ep.port) + b"\x00")
            parts.append(_topic_partitions(e.active_partitions))
            parts.append(_topic_partitions(e.standby_partitions))
            parts.append(b"\x00")
    parts.append(b"\x00")              # the body's tagged fields
    body = b"".join(parts)
    return _I32.pack(len(body)) + body


# api_key -> (highest version written here, encoder). A version above it — one a later kio
# might add — falls back to kio's generic writer rather than being written in an old layout.
HAND_WRITTEN: dict[int, tuple[int, Callable[[int, int, Any], bytes]]] = {
    12: (4, encode_heartbeat_response),                    # Heartbeat
    8: (10, encode_offset_commit_response),                # OffsetCommit
    68: (1, encode_consumer_group_heartbeat_response),     # ConsumerGroupHeartbeat
    88: (1, encode_streams_group_heartbeat_response),      # StreamsGroupHeartbeat
}
