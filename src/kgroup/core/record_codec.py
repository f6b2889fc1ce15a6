"""Bytes of the group-metadata log records (records.py), and back.

How this works: one log entry's payload is the record's *key* followed by its *value*; a
payload that ends right after the key is a tombstone (value None). Both key and value open
with a big-endian int16 version, as in Kafka's `__consumer_offsets`, so a reader knows the
record type from the key version alone and the value layout from the value version:

    key version 0 or 1   offset commit     (we write 1; 0 is read the same way)
    key version 2        classic group metadata
    key versions 3-7     consumer-group records (epoch, member, target member, target
                         epoch, current member), see "Consumer-group records" below
    key version 12       a consumer group's resolved regular expression (group, regex)
    key versions 8-10    transaction records (a transactional id's state, a pending
                         transactional offset, a producer's end-of-transaction marker), see
                         "Transaction records" below
    key version 11       a group's dynamic configs, see "Group configs" below
    key versions 20-24   share-group records (the same five kinds), laid out as the
                         consumer-group records
    key version 25       share-partition state, see "Share-partition state" below
    key versions 26-31   streams-group records (epoch, topology, member, target, target
                         epoch, current), laid out as the consumer-group records
                         (streams_codec.py says how)
    key version 32       a topic a share group has initialized (group, topic id; value
                         [name, [[first, last], ...]], the partitions initialized as runs;
                         [name, n], as written before, reads as 0..n-1)

All integers are big-endian. `str16` is an int16 byte length then UTF-8 (identifiers, as
Kafka limits them); `str32`/`bytes32` an int32 length then the bytes; a length of -1 is
None (only where the field is optional).

Offset commit key (version 1). Both lengths come first, so the bytes from the first length
to the end of the topic name the (group, topic) pair unambiguously and serve as a cache key;
the partition sits right before the value, so one `unpack` reads it with the value's header:
    int16 version=1 | int16 group_len | int16 topic_len | group | topic | int32 partition

Offset commit value: version 3 when there is no expire timestamp, 1 when there is one
(Kafka's v1 was the version that carried one; v3 added the leader epoch, which we always
carry):
    v3: int16 version=3 | int64 offset | int32 leader_epoch | int64 commit_ts | int32 metadata_len | metadata
    v1: int16 version=1 | int64 offset | int32 leader_epoch | int64 commit_ts | int64 expire_ts
        | int32 metadata_len | metadata

Classic group key (version 2):
    int16 version=2 | str16 group_id

Classic group value (version 0, our own):
    int16 version=0 | str32 protocol_type | int32 generation | nullable str32 protocol
    | nullable str32 leader | int64 current_state_timestamp_ms | int32 member_count
    | members, each: str32 member_id | nullable str32 group_instance_id | str32 client_id
      | str32 client_host | int32 rebalance_timeout_ms | int32 session_timeout_ms
      | bytes32 subscription | bytes32 assignment

Consumer-group records (KIP-848 groups; written only when membership or assignments change,
so they favour simplicity over speed): the key is
    int16 version | int16 group_len | int16 member_len | group | member
(member empty for the group-level records) and the value, absent for a tombstone, is the
record's fields as compact UTF-8 JSON. Partitions are [[topic id, [p, ...]], ...]. A member's
current assignment (key version 7) is [epoch, previous epoch, state, assigned, pending
revocation, assignment epochs]; the last, [[topic id, [p, ...], [epoch, ...]], ...] (KIP-1251),
is absent from records written before it (read as: every partition at the member's epoch).

Transaction records use the consumer-group key layout (two strings) and a JSON value:
    8  transactional id, "" -> [producer id, epoch, last epoch, previous producer id,
       timeout ms, state name, [[topic, partition], ...], [group, ...], start ms, update ms]
    9  group, topic         -> [partition, producer id, offset, leader epoch, metadata,
                                commit ts, expire ts or null]
    10 "", ""              -> [producer id, commit (true/false)]

Group configs (GroupConfigRecord): the key is the consumer-group key with an empty member,
    int16 version=11 | int16 group_len | int16 0 | group
and the value, absent for a tombstone, is [[name, value], ...] as compact UTF-8 JSON.
Share-partition state (ShareStateRecord): the key is
    int16 version=25 | int16 group_len | int16 topic_id_len | group | topic id | int32 partition
and the value, absent for a tombstone, is [state epoch, start offset, [[first, last, state,
delivery count], ...]] as compact UTF-8 JSON: runs of offsets, never one entry per record;
a fourth element, the leader epoch, follows where one is known (absent: -1).

Decoding is the restart path (a log of millions of offset commits), so the offset-commit
path is written for speed: precompiled `Struct`s, one unpack per key and per value, a
bounded cache that maps key bytes to interned (group, topic) strings, and value objects
built through their slot descriptors (the frozen-dataclass `__init__` costs twice as much;
an import-time check falls back to it if the record classes ever change shape). Every
malformed payload raises `RecordDecodeError`, never struct.error, IndexError or
UnicodeDecodeError; a record that cannot be written raises `RecordEncodeError`.
"""

from __future__ import annotations

from . import compact_json as _json
from dataclasses import fields
from struct import Struct
from struct import error as StructError
from typing import Any, Callable, Iterable, Mapping

from kgroup.core.records import (
    ClassicGroupRecord,
    ConsumerCurrentRecord,
    ConsumerCurrentValue,
    ConsumerGroupEpochRecord,
    ConsumerMemberRecord,
    ConsumerRegexRecord,
    ConsumerMemberValue,
    ConsumerTargetEpochRecord,
    ConsumerTargetRecord,
    ClassicGroupValue,
    GroupConfigRecord,
    InitializedTopic,
    ClassicMemberValue,
    OffsetCommitRecord,
    MemberState,
    OffsetCommitValue,
    Record,
    ResolvedRegex,
    ShareCurrentRecord,
    ShareCurrentValue,
    ShareGroupEpochRecord,
    ShareInitRecord,
    ShareMemberRecord,
    ShareMemberValue,
    ShareStateBatch,
    ShareStateRecord,
    ShareStateValue,
    ShareTargetEpochRecord,
    ShareTargetRecord,
    TxnOffsetCommitRecord,
    TxnOffsetMarkerRecord,
    TxnRecord,
    TxnValue,
)
from kgroup.core import streams_codec
from kgroup.core.transactions.txn_state import TxnState

__all__ = [
    "RecordDecodeError",
    "RecordEncodeError",
    "decode",
    "decode_many",
    "encode",
    "encode_key",
    "encode_value",
]

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_VALUE_VERSION_WITH_EXPIRY = 1
OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 0
GROUP_CONFIG_KEY_VERSION = 11


class RecordDecodeError(ValueError):
    """A payload is not a well-formed group-metadata record."""


class RecordEncodeError(ValueError):
    """A record cannot be written (a field out of range or not encodable)."""


# ---- layouts ------------------------------------------------------------------------------

_OC_KEY_HEAD = Struct(">hhh")      # version, group_len, topic_len
_OC_KEY_HEAD_SIZE = _OC_KEY_HEAD.size
_OC_VALUE3 = Struct(">hqiqi")      # version, offset, leader_epoch, commit_ts, metadata_len
_OC_VALUE1 = Struct(">hqiqqi")     # ... plus expire_ts before metadata_len
# The key's trailing partition together with the value header that follows it.
_OC_PART_VALUE3 = Struct(">ihqiqi")
_OC_PART_VALUE3_SIZE = _OC_PART_VALUE3.size
_OC_PART_VALUE1 = Struct(">ihqiqqi")
_OC_PART_VALUE1_SIZE = _OC_PART_VALUE1.size
_I16 = Struct(">h")
_I16_I16 = Struct(">hh")
_I32 = Struct(">i")
_I32_I64_I32 = Struct(">iqi")
_I32_I32 = Struct(">ii")
_I64 = Struct(">q")

_unpack_oc_key_head = _OC_KEY_HEAD.unpack_from
_unpack_oc_part_value3 = _OC_PART_VALUE3.unpack_from
_unpack_oc_part_value1 = _OC_PART_VALUE1.unpack_from
_unpack_i32 = _I32.unpack_from
_unpack_i16 = _I16.unpack_from
_unpack_i16_i16 = _I16_I16.unpack_from

_DECODE_ERRORS = (StructError, UnicodeDecodeError, IndexError, OverflowError, ValueError)

# ---- fast construction of frozen slot dataclasses -------------------------------------------

_new = object.__new__


def _slot_setters(cls: type, expected: tuple[str, ...]):
    """The slot descriptors' setters of `cls`, or None if its shape is not `expected`."""
    names = tuple(f.name for f in fields(cls))
    if names != expected or hasattr(cls, "__post_init__") or "__slots__" not in cls.__dict__:
        return None
    return tuple(getattr(cls, name).__set__ for name in names)


_VALUE_SETTERS = _slot_setters(
    OffsetCommitValue, ("offset", "leader_epoch", "metadata", "commit_timestamp_ms", "expire_timestamp_ms"))
_RECORD_SETTERS = _slot_setters(OffsetCommitRecord, ("group_id", "topic", "partition", "value"))

if _VALUE_SETTERS is not None and _RECORD_SETTERS is not None:
    _set_offset, _set_epoch, _set_metadata, _set_commit_ts, _set_expire_ts = _VALUE_SETTERS
    _set_group, _set_topic, _set_partition, _set_value = _RECORD_SETTERS

    def _offset_value(offset: int, epoch: int, metadata: str, commit_ts: int,
                      expire_ts: int | None) -> OffsetCommitValue:
        v = _new(OffsetCommitValue)
        _set_offset(v, offset)
        _set_epoch(v, epoch)
        _set_metadata(v, metadata)
        _set_commit_ts(v, commit_ts)
        _set_expire_ts(v, expire_ts)
        return v

    def _offset_record(group: str, topic: str, partition: int,
                       value: OffsetCommitValue | None) -> OffsetCommitRecord:
        r = _new(OffsetCommitRecord)
        _set_group(r, group)
        _set_topic(r, topic)
        _set_partition(r, partition)
        _set_value(r, value)
        return r
else:  # pragma: no cover - only if records.py changes shape
    _offset_value = OffsetCommitValue
    _offset_record = OffsetCommitRecord


# ---- encoding -----------------------------------------------------------------------------

def _utf8(text: str, what: str) -> bytes:
    if type(text) is not str:
        raise RecordEncodeError(f"{what} must be a str, got {type(text).__name__}")
    try:
        return text.encode()
    except UnicodeEncodeError as exc:
        raise RecordEncodeError(f"{what} is not encodable as UTF-8: {exc}") from None


def _str16(text: str, what: str) -> bytes:
    raw = _utf8(text, what)
    if len(raw) > 0x7FFF:
        raise RecordEncodeError(f"{what} is {len(raw)} bytes; at most 32767 fit in a key")
    return raw


def _str32(text: str | None, what: str, out: list[bytes]) -> None:
    if text is None:
        out.append(b"\xff\xff\xff\xff")
        return
    raw = _utf8(text, what)
    out.append(_I32.pack(len(raw)))
    out.append(raw)


def _bytes32(data: bytes, what: str, out: list[bytes]) -> None:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise RecordEncodeError(f"{what} must be bytes, got {type(data).__name__}")
    out.append(_I32.pack(len(data)))
    out.append(bytes(data))


def encode_key(record: Record) -> bytes:
    """The key bytes of a record (what identifies it for compaction)."""
    try:
        if type(record) is OffsetCommitRecord:
            group = _str16(record.group_id, "group id")
            topic = _str16(record.topic, "topic")
            return b"".join((_OC_KEY_HEAD.pack(OFFSET_COMMIT_KEY_VERSION, len(group), len(topic)),
                             group, topic, _I32.pack(record.partition)))
        if type(record) is ClassicGroupRecord:
            group = _str16(record.group_id, "group id")
            return _I16_I16.pack(GROUP_METADATA_KEY_VERSION, len(group)) + group
    except StructError as exc:
        raise RecordEncodeError(f"cannot encode key of {record!r}: {exc}") from None
    raise RecordEncodeError(f"not a group-metadata record: {record!r}")


def encode_value(record: Record) -> bytes | None:
    """The value bytes of a record, or None for a tombstone."""
    value = record.value
    if value is None:
        return None
    try:
        if type(value) is OffsetCommitValue:
            metadata = _utf8(value.metadata, "offset metadata")
            if value.expire_timestamp_ms is None:
                head = _OC_VALUE3.pack(OFFSET_VALUE_VERSION, value.offset, value.leader_epoch,
                                       value.commit_timestamp_ms, len(metadata))
            else:
                head = _OC_VALUE1.pack(OFFSET_VALUE_VERSION_WITH_EXPIRY, value.offset, value.leader_epoch,
                                       value.commit_timestamp_ms, value.expire_timestamp_ms, len(metadata))
            return head + metadata
        if type(value) is ClassicGroupValue:
            return _encode_group_value(value)
    except StructError as exc:
        raise RecordEncodeError(f"cannot encode value of {record!r}: {exc}") from None
    raise RecordEncodeError(f"not a group-metadata value: {value!r}")


def _encode_group_value(value: ClassicGroupValue) -> bytes:
    out: list[bytes] = [_I16.pack(GROUP_VALUE_VERSION)]
    _str32(value.protocol_type, "protocol type", out)
    out.append(_I32.pack(value.generation))
    _str32(value.protocol, "protocol", out)
    _str32(value.leader, "leader", out)
    out.append(_I64.pack(value.current_state_timestamp_ms))
    out.append(_I32.pack(len(value.members)))
    for m in value.members:
        if type(m) is not ClassicMemberValue:
            raise RecordEncodeError(f"not a ClassicMemberValue: {m!r}")
        _str32(m.member_id, "member id", out)
        _str32(m.group_instance_id, "group instance id", out)
        _str32(m.client_id, "client id", out)
        _str32(m.client_host, "client host", out)
        out.append(_I32_I32.pack(m.rebalance_timeout_ms, m.session_timeout_ms))
        _bytes32(m.subscription, "subscription", out)
        _bytes32(m.assignment, "assignment", out)
    return b"".join(out)


_CONSUMER_KEY_VERSIONS = {
    ConsumerGroupEpochRecord: 3, ConsumerMemberRecord: 4, ConsumerTargetRecord: 5,
    ConsumerTargetEpochRecord: 6, ConsumerCurrentRecord: 7, ConsumerRegexRecord: 12,
}
_CONSUMER_BY_VERSION = {v: k for k, v in _CONSUMER_KEY_VERSIONS.items()}


# The records consumer and share groups write alike: the group epoch with the subscribed
# topics' metadata, the target assignment's epoch, and a member's target.
_GROUP_EPOCHS = (ConsumerGroupEpochRecord, ShareGroupEpochRecord)
_TARGET_EPOCHS = (ConsumerTargetEpochRecord, ShareTargetEpochRecord)
_TARGETS = (ConsumerTargetRecord, ShareTargetRecord)
_NOT_SHARED = object()


def _shared_value(record) -> object | None:
    """The JSON value of a record both kinds write alike; ``_NOT_SHARED`` for another."""
    kind = type(record)
    if kind in _GROUP_EPOCHS:
        return None if record.epoch is None else [record.epoch, [list(t) for t in record.subscribed]]
    if kind in _TARGET_EPOCHS:
        # [epoch, assignment timestamp]; a bare epoch when there is no timestamp (as written
        # before KIP-1263).
        return record.epoch if record.epoch is None or not record.timestamp_ms else [record.epoch, record.timestamp_ms]
    if kind in _TARGETS:
        return None if record.partitions is None else [[t, list(ps)] for t, ps in record.partitions]
    return _NOT_SHARED


def _decode_shared(kind: type, group: str, member: str, raw) -> Record | None:
    """A record both kinds write alike from its key strings and JSON value; None for another."""
    if kind in _GROUP_EPOCHS:
        if raw is None:
            return kind(group, None)
        return kind(group, int(raw[0]), tuple((str(n), str(i), int(c)) for n, i, c in raw[1]))
    if kind in _TARGET_EPOCHS:
        if isinstance(raw, list):
            return kind(group, int(raw[0]), int(raw[1]))
        return kind(group, None if raw is None else int(raw))
    if kind in _TARGETS:
        return kind(group, member, None if raw is None else _partitions(raw))
    return None


def _encode_member_keyed(record, versions: dict[type, int], value_of) -> bytes:
    """A consumer- or share-group record: its key (version, group id, member id) and its
    JSON value (``value_of``), none for a tombstone."""
    group = _str16(record.group_id, "group id")
    # A resolved regex is keyed by the regex, an initialized topic by its id, where a
    # member's records have the member id.
    second = getattr(record, _SECOND_KEY.get(type(record), "member_id"), "")
    member = _str16(second, "member id")
    key = _OC_KEY_HEAD.pack(versions[type(record)], len(group), len(member)) + group + member
    value = _shared_value(record)
    if value is _NOT_SHARED:
        value = value_of(record)
    return key if value is None else key + _json_bytes(value)


def _consumer_value(record) -> object | None:
    kind = type(record)
    value = record.value
    if value is None:
        return None
    if kind is ConsumerRegexRecord:
        return [list(value.topics), value.version, value.timestamp_ms]
    if kind is ConsumerMemberRecord:
        fields = [value.instance_id, value.rack_id, value.client_id, value.client_host,
                  list(value.subscribed_topic_names), value.subscribed_topic_regex, value.server_assignor,
                  value.rebalance_timeout_ms]
        if value.classic_protocols is not None:
            fields += [[[n, m.hex()] for n, m in value.classic_protocols], value.classic_session_timeout_ms]
        return fields
    fields = [value.member_epoch, value.previous_member_epoch, value.state.value,
              [[t, list(ps)] for t, ps in value.assigned], [[t, list(ps)] for t, ps in value.pending_revocation]]
    if value.assignment_epochs is not None:
        fields.append(_epochs_value(value.assignment_epochs))
    return fields


def _epochs_value(epochs) -> list:
    """KIP-1251 assignment epochs as [[topic id, [p, ...], [epoch, ...]], ...] (Kafka's layout)."""
    out: list = []
    for t, p, e in epochs:
        if not out or out[-1][0] != t:
            out.append([t, [], []])
        out[-1][1].append(p)
        out[-1][2].append(e)
    return out


def _epochs(raw) -> tuple:
    out = []
    for t, ps, es in raw:
        if len(ps) != len(es):
            raise ValueError(f"{len(es)} assignment epochs for {len(ps)} partitions of {t}")
        out.extend((str(t), int(p), int(e)) for p, e in zip(ps, es))
    out.sort()
    return tuple(out)


def _partitions(raw) -> tuple:
    return tuple((str(t), tuple(int(p) for p in ps)) for t, ps in raw)


def _two_strings(payload: bytes, alen: int, blen: int, what: str) -> tuple[str, str, object | None]:
    """The two key strings of a consumer-group or transaction record and its JSON value
    (None for a key alone)."""
    end = _OC_KEY_HEAD_SIZE + alen + blen
    if alen < 0 or blen < 0 or end > len(payload):
        raise RecordDecodeError(f"{what} record key runs past the payload")
    a = payload[_OC_KEY_HEAD_SIZE:_OC_KEY_HEAD_SIZE + alen].decode()
    b = payload[_OC_KEY_HEAD_SIZE + alen:end].decode()
    return a, b, None if end == len(payload) else _json.loads(payload[end:])


def _decode_consumer(payload: bytes, version: int, glen: int, mlen: int) -> Record:
    group, member, raw = _two_strings(payload, glen, mlen, "consumer-group")
    kind = _CONSUMER_BY_VERSION[version]
    try:
        shared = _decode_shared(kind, group, member, raw)
        if shared is not None:
            return shared
        if kind is ConsumerRegexRecord:
            if raw is None:
                return ConsumerRegexRecord(group, member, None)
            topics, version, timestamp = raw
            return ConsumerRegexRecord(group, member, ResolvedRegex(
                tuple(str(t) for t in topics), int(version), int(timestamp)))
        if kind is ConsumerMemberRecord:
            if raw is None:
                return ConsumerMemberRecord(group, member, None)
            iid, rack, cid, host, names, regex, assignor, rto = raw[:8]
            classic = None if len(raw) < 10 else tuple((str(n), bytes.fromhex(m)) for n, m in raw[8])
            return ConsumerMemberRecord(group, member, ConsumerMemberValue(
                iid, rack, str(cid), str(host), tuple(str(n) for n in names), regex, assignor, int(rto),
                classic, int(raw[9]) if classic is not None else -1))
        if raw is None:
            return ConsumerCurrentRecord(group, member, None)
        # Five fields before KIP-1251; the sixth, assignment epochs, since.
        epoch, previous, state, assigned, pending = raw[:5]
        epochs = _epochs(raw[5]) if len(raw) > 5 else None
        return ConsumerCurrentRecord(group, member, ConsumerCurrentValue(
            int(epoch), int(previous), MemberState(state), _partitions(assigned), _partitions(pending), epochs))
    except (TypeError, ValueError, KeyError) as exc:
        raise RecordDecodeError(f"malformed consumer-group record value: {exc}") from None


_TXN_KEY_VERSIONS = {TxnRecord: 8, TxnOffsetCommitRecord: 9, TxnOffsetMarkerRecord: 10}
_TXN_BY_VERSION = {v: k for k, v in _TXN_KEY_VERSIONS.items()}


def _encode_txn(record) -> bytes:
    kind = type(record)
    if kind is TxnRecord:
        a, b = record.transactional_id, ""
        v = record.value
        value = None if v is None else [
            v.producer_id, v.producer_epoch, v.last_producer_epoch, v.previous_producer_id, v.timeout_ms,
            v.state.value, [list(tp) for tp in v.partitions], list(v.groups), v.start_ms, v.update_ms,
            v.client_version, v.next_producer_id]
    elif kind is TxnOffsetCommitRecord:
        a, b = record.group_id, record.topic
        v = record.value
        value = [record.partition, record.producer_id, v.offset, v.leader_epoch, v.metadata,
                 v.commit_timestamp_ms, v.expire_timestamp_ms]
    else:
        a, b = "", ""
        value = [record.producer_id, bool(record.commit)]
    first = _str16(a, "transactional id or group id")
    second = _str16(b, "topic")
    key = _OC_KEY_HEAD.pack(_TXN_KEY_VERSIONS[kind], len(first), len(second)) + first + second
    if value is None:
        return key
    return key + _json.dumps(value)


def _decode_txn(payload: bytes, version: int, alen: int, blen: int) -> Record:
    a, b, raw = _two_strings(payload, alen, blen, "transaction")
    kind = _TXN_BY_VERSION[version]
    try:
        if kind is TxnRecord:
            if raw is None:
                return TxnRecord(a, None)
            # Ten fields before KIP-890 part 2; the client's transaction.version and the
            # next producer id since.
            pid, epoch, last_epoch, previous, timeout, state, partitions, groups, start, update = raw[:10]
            client_version, next_pid = raw[10:12] if len(raw) > 10 else (0, -1)
            return TxnRecord(a, TxnValue(
                int(pid), int(epoch), int(last_epoch), int(previous), int(timeout), TxnState(state),
                tuple((str(t), int(p)) for t, p in partitions), tuple(str(g) for g in groups),
                int(start), int(update), int(client_version), int(next_pid)))
        if kind is TxnOffsetCommitRecord:
            partition, pid, offset, leader_epoch, metadata, commit_ts, expire_ts = raw
            return TxnOffsetCommitRecord(a, b, int(partition), int(pid), OffsetCommitValue(
                int(offset), int(leader_epoch), str(metadata), int(commit_ts),
                None if expire_ts is None else int(expire_ts)))
        pid, commit = raw
        return TxnOffsetMarkerRecord(int(pid), bool(commit))
    except (TypeError, ValueError, KeyError) as exc:
        raise RecordDecodeError(f"malformed transaction record value: {exc}") from None


def _encode_group_config(record: GroupConfigRecord) -> bytes:
    group = _str16(record.group_id, "group id")
    key = _OC_KEY_HEAD.pack(GROUP_CONFIG_KEY_VERSION, len(group), 0) + group
    if record.configs is None:
        return key
    for name, value in record.configs:
        _utf8(name, "config name")
        _utf8(value, "config value")
    pairs = [[name, value] for name, value in record.configs]
    return key + _json.dumps(pairs)


def _decode_group_config(payload: bytes, glen: int, mlen: int) -> GroupConfigRecord:
    if mlen != 0:
        raise RecordDecodeError("group config record key is malformed")
    group, _, raw = _two_strings(payload, glen, mlen, "group config")
    if raw is None:
        return GroupConfigRecord(group, None)
    try:
        return GroupConfigRecord(group, tuple((str(n), str(v)) for n, v in raw))
    except (TypeError, ValueError) as exc:
        raise RecordDecodeError(f"malformed group config record value: {exc}") from None
_SHARE_KEY_VERSIONS = {
    ShareGroupEpochRecord: 20, ShareMemberRecord: 21, ShareTargetRecord: 22,
    ShareTargetEpochRecord: 23, ShareCurrentRecord: 24, ShareInitRecord: 32,
}
_SHARE_BY_VERSION = {v: k for k, v in _SHARE_KEY_VERSIONS.items()}
# Records keyed by something other than a member id (the key's second string).
_SECOND_KEY = {ConsumerRegexRecord: "regex", ShareInitRecord: "topic_id"}
SHARE_STATE_KEY_VERSION = 25
_I32 = Struct(">i")


def _share_value(record) -> object | None:
    kind = type(record)
    value = record.value
    if value is None:
        return None
    if kind is ShareInitRecord:
        return [value.name, _runs(value.partitions)]
    if kind is ShareMemberRecord:
        return [value.rack_id, value.client_id, value.client_host, list(value.subscribed_topic_names)]
    return [value.member_epoch, value.previous_member_epoch, [[t, list(ps)] for t, ps in value.assigned]]


def _runs(partitions: frozenset[int]) -> list[list[int]]:
    """Partitions as [first, last] runs: a topic's are mostly all of 0..n-1, one run."""
    runs: list[list[int]] = []
    for p in sorted(partitions):
        if runs and runs[-1][1] == p - 1:
            runs[-1][1] = p
        else:
            runs.append([p, p])
    return runs


# More partitions than any topic has: a malformed value must not make a load build more.
_MAX_INITIALIZED = 1 << 20


def _from_runs(raw) -> frozenset[int]:
    """`_runs` read back; a count (written before partial initialization was kept) is all of
    0..count-1."""
    runs = [(0, raw - 1)] if type(raw) is int else [(int(first), int(last)) for first, last in raw]
    if any(first < 0 or last < first - 1 for first, last in runs) or sum(
            last - first + 1 for first, last in runs) > _MAX_INITIALIZED:
        raise ValueError(f"initialized partitions out of range: {raw!r}"[:200])
    return frozenset(p for first, last in runs for p in range(first, last + 1))


def _json_bytes(value: object) -> bytes:
    return _json.dumps(value)


def _encode_share_state(record: ShareStateRecord) -> bytes:
    group = _str16(record.group_id, "group id")
    topic = _str16(record.topic_id, "topic id")
    key = (_OC_KEY_HEAD.pack(SHARE_STATE_KEY_VERSION, len(group), len(topic)) + group + topic
           + _I32.pack(record.partition))
    v = record.value
    if v is None:
        return key
    value = [v.state_epoch, v.start_offset,
             [[b.first_offset, b.last_offset, int(b.state), b.delivery_count] for b in v.batches]]
    if v.leader_epoch >= 0:
        value.append(v.leader_epoch)
    return key + _json_bytes(value)


def _decode_share(payload: bytes, version: int, glen: int, mlen: int) -> Record:
    end = _OC_KEY_HEAD_SIZE + glen + mlen
    if version == SHARE_STATE_KEY_VERSION:
        end += 4
    if glen < 0 or mlen < 0 or end > len(payload):
        raise RecordDecodeError("share-group record key runs past the payload")
    try:
        group = payload[_OC_KEY_HEAD_SIZE:_OC_KEY_HEAD_SIZE + glen].decode()
        member = payload[_OC_KEY_HEAD_SIZE + glen:_OC_KEY_HEAD_SIZE + glen + mlen].decode()
        raw = None if end == len(payload) else _json.loads(payload[end:])
        if version == SHARE_STATE_KEY_VERSION:
            (partition,) = _I32.unpack_from(payload, end - 4)
            if raw is None:
                return ShareStateRecord(group, member, partition, None)
            epoch, start, runs, *leader = raw
            return ShareStateRecord(group, member, partition, ShareStateValue(
                int(epoch), int(start), tuple(ShareStateBatch(int(f), int(la), int(st), int(c))
                                              for f, la, st, c in runs), int(leader[0]) if leader else -1))
        kind = _SHARE_BY_VERSION[version]
        shared = _decode_shared(kind, group, member, raw)
        if shared is not None:
            return shared
        if kind is ShareInitRecord:
            if raw is None:
                return ShareInitRecord(group, member, None)
            name, partitions = raw
            return ShareInitRecord(group, member, InitializedTopic(str(name), _from_runs(partitions)))
        if kind is ShareMemberRecord:
            if raw is None:
                return ShareMemberRecord(group, member, None)
            rack, cid, host, names = raw
            return ShareMemberRecord(group, member, ShareMemberValue(
                rack, str(cid), str(host), tuple(str(n) for n in names)))
        if raw is None:
            return ShareCurrentRecord(group, member, None)
        epoch, previous, assigned = raw
        return ShareCurrentRecord(group, member, ShareCurrentValue(int(epoch), int(previous), _partitions(assigned)))
    except (TypeError, ValueError, KeyError, StructError) as exc:
        raise RecordDecodeError(f"malformed share-group record value: {exc}") from None


def encode(record: Record) -> bytes:
    """One log payload: key bytes, then value bytes (nothing for a tombstone)."""
    kind = type(record)
    if kind in _TXN_KEY_VERSIONS:
        try:
            return _encode_txn(record)
        except (StructError, TypeError, ValueError, AttributeError) as exc:
            raise RecordEncodeError(f"cannot encode {record!r}: {exc}") from None
    if kind in streams_codec.KEY_VERSIONS:
        try:
            return streams_codec.encode(record)
        except (StructError, TypeError, ValueError, AttributeError, UnicodeEncodeError) as exc:
            raise RecordEncodeError(f"cannot encode {record!r}: {exc}") from None
    if kind is GroupConfigRecord:
        try:
            return _encode_group_config(record)
        except (StructError, TypeError, ValueError) as exc:
            raise RecordEncodeError(f"cannot encode {record!r}: {exc}") from None
    if kind in _CONSUMER_KEY_VERSIONS or kind in _SHARE_KEY_VERSIONS or kind is ShareStateRecord:
        try:
            if kind in _CONSUMER_KEY_VERSIONS:
                return _encode_member_keyed(record, _CONSUMER_KEY_VERSIONS, _consumer_value)
            if kind is ShareStateRecord:
                return _encode_share_state(record)
            return _encode_member_keyed(record, _SHARE_KEY_VERSIONS, _share_value)
        except (StructError, TypeError, ValueError) as exc:
            raise RecordEncodeError(f"cannot encode {record!r}: {exc}") from None
    key = encode_key(record)
    value = encode_value(record)
    return key if value is None else key + value


# ---- decoding -----------------------------------------------------------------------------

# Key bytes from the group length to the end of the topic -> the (group, topic) strings. A shard's log names few
# distinct partitions many times over, so this saves both decoding and memory. Bounded.
_NAMES: dict[bytes, tuple[str, str]] = {}
_NAMES_LIMIT = 1 << 16


def decode(payload: bytes) -> Record:
    """The record one log payload holds; RecordDecodeError if it is malformed."""
    if type(payload) is not bytes:
        payload = _as_bytes(payload)
    try:
        version, glen, tlen = _unpack_oc_key_head(payload, 0)
        if version == OFFSET_COMMIT_KEY_VERSION or version == 0:
            # ---- offset commit: the hot path ----
            if glen < 0 or tlen < 0:
                raise RecordDecodeError(f"negative string length in offset commit key ({glen}, {tlen})")
            end = _OC_KEY_HEAD_SIZE + glen + tlen
            names = _NAMES.get(payload[2:end])
            if names is None:
                names = _intern_names(payload, glen, end)
            n = len(payload)
            if n == end + 4:
                return _offset_record(names[0], names[1], _unpack_i32(payload, end)[0], None)
            partition, vversion, offset, epoch, commit_ts, mlen = _unpack_oc_part_value3(payload, end)
            if vversion == OFFSET_VALUE_VERSION:
                start = end + _OC_PART_VALUE3_SIZE
                expire_ts = None
            elif vversion == OFFSET_VALUE_VERSION_WITH_EXPIRY:
                partition, _, offset, epoch, commit_ts, expire_ts, mlen = _unpack_oc_part_value1(payload, end)
                start = end + _OC_PART_VALUE1_SIZE
            else:
                raise RecordDecodeError(f"unknown offset commit value version {vversion}")
            if start + mlen != n or mlen < 0:
                raise RecordDecodeError(
                    f"offset commit value has {n - start} bytes after its header, metadata says {mlen}")
            metadata = payload[start:n].decode() if mlen else ""
            return _offset_record(names[0], names[1], partition,
                                  _offset_value(offset, epoch, metadata, commit_ts, expire_ts))
        if version == GROUP_METADATA_KEY_VERSION:
            return _decode_group(payload)
        if version in _CONSUMER_BY_VERSION:
            return _decode_consumer(payload, version, glen, tlen)
        if version in _TXN_BY_VERSION:
            return _decode_txn(payload, version, glen, tlen)
        if version == GROUP_CONFIG_KEY_VERSION:
            return _decode_group_config(payload, glen, tlen)
        if version in _SHARE_BY_VERSION or version == SHARE_STATE_KEY_VERSION:
            return _decode_share(payload, version, glen, tlen)
        if version in streams_codec.BY_VERSION:
            try:
                return streams_codec.decode(payload, version, glen, tlen)
            except (TypeError, ValueError, KeyError) as exc:
                raise RecordDecodeError(f"malformed streams-group record: {exc}") from None
        raise RecordDecodeError(f"unknown record key version {version}")
    except RecordDecodeError:
        raise
    except _DECODE_ERRORS as exc:
        if len(payload) < _OC_KEY_HEAD_SIZE and payload[:2] == _GROUP_KEY_PREFIX:
            # A group key too short to hold an offset-commit key header.
            return _decode_group_checked(payload)
        raise RecordDecodeError(f"malformed group-metadata record ({len(payload)} bytes): {exc}") from None


_GROUP_KEY_PREFIX = _I16.pack(GROUP_METADATA_KEY_VERSION)


def _as_bytes(payload) -> bytes:
    if isinstance(payload, (bytearray, memoryview)):
        return bytes(payload)
    raise RecordDecodeError(f"payload must be bytes, got {type(payload).__name__}")


def _decode_group_checked(payload: bytes) -> ClassicGroupRecord:
    try:
        return _decode_group(payload)
    except RecordDecodeError:
        raise
    except _DECODE_ERRORS as exc:
        raise RecordDecodeError(f"malformed group-metadata record ({len(payload)} bytes): {exc}") from None


def replay_payloads(payloads: Iterable[bytes], offsets: dict[str, dict[tuple[str, int], OffsetCommitValue]],
                    open_txn_groups: Mapping[str, Any], replay: Callable[[Record], None]) -> None:
    """``replay(decode(p))`` for each payload in order, with the bulk of a load taken
    straight from its bytes: a committed offset (no metadata, no expiry, names seen
    before) is stored into ``offsets`` (``StoredState.offsets``) without building its
    record, while no group has transactional offsets pending (``open_txn_groups``, read
    at every record, since a replayed transaction record can open one). This is what the
    coordinator's replay does with such a record (``GroupCoordinatorShard.replay``); a
    load spends most of its time on offset commits, and this saves the record object and
    three calls per commit. Anything else, malformed input included, takes ``decode`` and
    ``replay`` as usual (and fails as they do)."""
    if _VALUE_SETTERS is None:   # pragma: no cover - records.py changed shape
        for payload in payloads:
            replay(decode(payload))
        return
    names_of = _NAMES.get
    head_size, value_size = _OC_KEY_HEAD_SIZE, _OC_PART_VALUE3_SIZE
    for payload in payloads:
        if open_txn_groups or type(payload) is not bytes or len(payload) < head_size:
            replay(decode(payload))
            continue
        version, glen, tlen = _unpack_oc_key_head(payload, 0)
        end = head_size + glen + tlen
        names = names_of(payload[2:end]) if glen >= 0 and tlen >= 0 and (
            version == OFFSET_COMMIT_KEY_VERSION or version == 0) else None
        # Exactly a version-3 value with empty metadata after the key: anything else (a
        # tombstone, expiry, metadata, a short or long payload, new names) goes the usual way.
        if names is None or len(payload) != end + value_size:
            replay(decode(payload))
            continue
        partition, vversion, offset, epoch, commit_ts, mlen = _unpack_oc_part_value3(payload, end)
        if vversion != OFFSET_VALUE_VERSION or mlen != 0:
            replay(decode(payload))
            continue
        value = _new(OffsetCommitValue)
        _set_offset(value, offset)
        _set_epoch(value, epoch)
        _set_metadata(value, "")
        _set_commit_ts(value, commit_ts)
        _set_expire_ts(value, None)
        group_offsets = offsets.get(names[0])
        if group_offsets is None:
            group_offsets = offsets[names[0]] = {}
        group_offsets[(names[1], partition)] = value


def decode_many(payloads) -> list[Record]:
    """Decode a sequence of payloads (the restart path), in order."""
    return [decode(p) for p in payloads]


def _intern_names(payload: bytes, glen: int, end: int) -> tuple[str, str]:
    if len(payload) < end:
        raise RecordDecodeError(f"offset commit key truncated: {len(payload)} of {end}+ bytes")
    split = _OC_KEY_HEAD_SIZE + glen
    names = (payload[_OC_KEY_HEAD_SIZE:split].decode(), payload[split:end].decode())
    if len(_NAMES) >= _NAMES_LIMIT:
        _NAMES.clear()
    # The cache key starts at the lengths, so "ab"+"c" and "a"+"bc" stay apart.
    _NAMES[payload[2:end]] = names
    return names


class _GroupValueReader:
    """A cursor over a classic group payload; every read checks its bounds."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int) -> None:
        self.data = data
        self.pos = pos

    def unpack(self, st: Struct) -> tuple:
        values = st.unpack_from(self.data, self.pos)
        self.pos += st.size
        return values

    def raw(self, length: int, what: str) -> bytes:
        if length < 0:
            raise RecordDecodeError(f"negative length {length} for {what}")
        end = self.pos + length
        if end > len(self.data):
            raise RecordDecodeError(f"{what} truncated: wants {length} bytes, {len(self.data) - self.pos} left")
        chunk = self.data[self.pos:end]
        self.pos = end
        return chunk

    def str32(self, what: str) -> str:
        (length,) = self.unpack(_I32)
        return self.raw(length, what).decode()

    def nullable_str32(self, what: str) -> str | None:
        (length,) = self.unpack(_I32)
        if length == -1:
            return None
        return self.raw(length, what).decode()

    def bytes32(self, what: str) -> bytes:
        (length,) = self.unpack(_I32)
        return bytes(self.raw(length, what))


def _decode_group(payload: bytes) -> ClassicGroupRecord:
    r = _GroupValueReader(payload, 2)
    (glen,) = r.unpack(_I16)
    group_id = r.raw(glen, "group id").decode()
    if r.pos == len(payload):
        return ClassicGroupRecord(group_id, None)
    (version,) = r.unpack(_I16)
    if version != GROUP_VALUE_VERSION:
        raise RecordDecodeError(f"unknown group metadata value version {version}")
    protocol_type = r.str32("protocol type")
    (generation,) = r.unpack(_I32)
    protocol = r.nullable_str32("protocol")
    leader = r.nullable_str32("leader")
    (timestamp,) = r.unpack(_I64)
    (count,) = r.unpack(_I32)
    if count < 0:
        raise RecordDecodeError(f"negative member count {count}")
    # Each member needs at least 32 bytes; refuse counts the payload cannot hold before
    # looping over them.
    if count * 32 > len(payload) - r.pos:
        raise RecordDecodeError(f"member count {count} does not fit in {len(payload) - r.pos} bytes")
    members = []
    for _ in range(count):
        member_id = r.str32("member id")
        instance_id = r.nullable_str32("group instance id")
        client_id = r.str32("client id")
        client_host = r.str32("client host")
        rebalance_timeout, session_timeout = r.unpack(_I32_I32)
        subscription = r.bytes32("subscription")
        assignment = r.bytes32("assignment")
        members.append(ClassicMemberValue(member_id, instance_id, client_id, client_host,
                                          rebalance_timeout, session_timeout, subscription, assignment))
    if r.pos != len(payload):
        raise RecordDecodeError(f"{len(payload) - r.pos} trailing bytes after group metadata value")
    return ClassicGroupRecord(group_id, ClassicGroupValue(protocol_type, generation, protocol, leader,
                                                          timestamp, tuple(members)))
