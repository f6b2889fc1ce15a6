"""Apache Kafka's group-metadata records (``__consumer_offsets``, Kafka 4.4), decoded.

What ``kgroup lab import`` reads from a real cluster. Every record's key opens with an int16,
the record type; its value (None: a tombstone, the thing was removed) opens with an int16
version. The types read here, with the layouts of Kafka 4.4's group coordinator schemas:

    0, 1  offset commit                              (skipped: offsets are not membership)
    2     classic group metadata: GroupMetadataValue v0-4 (key: group id)
    3     consumer group metadata: group epoch (key: group id)
    5     consumer group member metadata: instance id, client id, subscriptions, and the
          supported protocols of a classic member (tag 0) (key: group id, member id)
    6     consumer group target assignment metadata: assignment epoch (key: group id)
    7     consumer group target assignment of a member (key: group id, member id)
    8     consumer group current member assignment: member epoch, state, partitions
          assigned and pending revocation (key: group id, member id)

Other types (4, partition metadata; share and streams group records; regular expressions;
transaction records) are skipped. Keys are not flexible: int16-length strings. Values of
consumer-group records are flexible (compact strings and arrays, tagged fields);
GroupMetadataValue is flexible from v4. Unknown tagged fields are skipped, as Kafka does.

Everything here is pure: bytes in, frozen dataclasses out; ``KafkaRecordError`` for bytes
that are not what their type says.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass

from kgroup.core.records import ClassicMemberValue   # a member as Kafka stores it, the same fields

CLASSIC_GROUP = 2
CONSUMER_GROUP = 3
CONSUMER_MEMBER = 5
CONSUMER_TARGET_EPOCH = 6
CONSUMER_TARGET_MEMBER = 7
CONSUMER_CURRENT = 8

TopicPartitions = tuple[tuple[str, tuple[int, ...]], ...]   # (topic id, partitions)


class KafkaRecordError(ValueError):
    """A record of __consumer_offsets that cannot be read as its type says."""


@dataclass(frozen=True, slots=True)
class KafkaClassicGroup:
    """A classic group as stored at the end of a rebalance (or its removal: ``None`` value)."""

    group: str
    protocol_type: str | None = None
    generation: int = 0
    protocol: str | None = None
    leader: str | None = None
    members: tuple[ClassicMemberValue, ...] = ()
    removed: bool = False


@dataclass(frozen=True, slots=True)
class ConsumerGroupEpoch:
    group: str
    epoch: int = 0
    removed: bool = False


@dataclass(frozen=True, slots=True)
class ConsumerMember:
    group: str
    member_id: str
    instance_id: str | None = None
    client_id: str = ""
    subscribed: tuple[str, ...] = ()
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    classic: bool = False                     # a classic-protocol member of a consumer group
    removed: bool = False


@dataclass(frozen=True, slots=True)
class ConsumerTargetEpoch:
    group: str
    epoch: int = 0
    removed: bool = False


@dataclass(frozen=True, slots=True)
class ConsumerTarget:
    group: str
    member_id: str
    partitions: TopicPartitions = ()
    removed: bool = False


@dataclass(frozen=True, slots=True)
class ConsumerCurrent:
    group: str
    member_id: str
    member_epoch: int = 0
    previous_epoch: int = 0
    state: int = 0
    partitions: TopicPartitions = ()
    pending_revocation: TopicPartitions = ()
    removed: bool = False


GroupRecord = (KafkaClassicGroup | ConsumerGroupEpoch | ConsumerMember | ConsumerTargetEpoch
               | ConsumerTarget | ConsumerCurrent)


class _Reader:
    """Kafka's primitive types, flexible (compact) or not."""

    def __init__(self, data: bytes, flexible: bool) -> None:
        self.data = data
        self.pos = 0
        self.flexible = flexible

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise KafkaRecordError(f"record ends at byte {len(self.data)}, needs {self.pos + n}")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def int8(self) -> int:
        return struct.unpack(">b", self._take(1))[0]

    def int16(self) -> int:
        return struct.unpack(">h", self._take(2))[0]

    def int32(self) -> int:
        return struct.unpack(">i", self._take(4))[0]

    def int64(self) -> int:
        return struct.unpack(">q", self._take(8))[0]

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            b = self._take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 35:
                raise KafkaRecordError("varint longer than 5 bytes")

    def uuid(self) -> str:
        return str(uuid.UUID(bytes=self._take(16)))

    def _length(self, wide: bool) -> int:
        if self.flexible:
            return self.uvarint() - 1
        return self.int32() if wide else self.int16()

    def string(self) -> str | None:
        n = self._length(False)
        if n < 0:
            return None
        try:
            return self._take(n).decode()
        except UnicodeDecodeError as exc:
            raise KafkaRecordError(f"a string is not UTF-8 ({exc})") from None

    def required(self) -> str:
        s = self.string()
        if s is None:
            raise KafkaRecordError("a required string is null")
        return s

    def bytes_(self) -> bytes:
        n = self._length(True)
        return b"" if n < 0 else self._take(n)

    def count(self) -> int:
        n = self._length(True)
        return max(n, 0)

    def tags(self) -> dict[int, bytes]:
        """The tagged fields of a flexible struct (none in a non-flexible one)."""
        if not self.flexible:
            return {}
        out = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            out[tag] = self._take(self.uvarint())
        return out


def _topic_partitions(r: _Reader) -> TopicPartitions:
    out = []
    for _ in range(r.count()):
        topic = r.uuid()
        parts = tuple(r.int32() for _ in range(r.count()))
        r.tags()
        out.append((topic, parts))
    return tuple(out)


def record_type(key: bytes) -> int:
    if key is None or len(key) < 2:
        raise KafkaRecordError("a __consumer_offsets record without a key")
    return struct.unpack_from(">h", key)[0]


def decode(key: bytes, value: bytes | None) -> GroupRecord | None:
    """The group record of one ``__consumer_offsets`` record; None for types not read here."""
    kind = record_type(key)
    if kind not in (CLASSIC_GROUP, CONSUMER_GROUP, CONSUMER_MEMBER, CONSUMER_TARGET_EPOCH,
                    CONSUMER_TARGET_MEMBER, CONSUMER_CURRENT):
        return None
    k = _Reader(key, flexible=False)
    k.int16()
    group = k.required()
    member = k.required() if kind in (CONSUMER_MEMBER, CONSUMER_TARGET_MEMBER, CONSUMER_CURRENT) else ""
    if value is None:
        return {CLASSIC_GROUP: lambda: KafkaClassicGroup(group, removed=True),
                CONSUMER_GROUP: lambda: ConsumerGroupEpoch(group, removed=True),
                CONSUMER_MEMBER: lambda: ConsumerMember(group, member, removed=True),
                CONSUMER_TARGET_EPOCH: lambda: ConsumerTargetEpoch(group, removed=True),
                CONSUMER_TARGET_MEMBER: lambda: ConsumerTarget(group, member, removed=True),
                CONSUMER_CURRENT: lambda: ConsumerCurrent(group, member, removed=True)}[kind]()
    if len(value) < 2:
        raise KafkaRecordError(f"record type {kind}: a value of {len(value)} bytes")
    version = struct.unpack_from(">h", value)[0]
    try:
        if kind == CLASSIC_GROUP:
            return _classic(group, value, version)
        r = _Reader(value, flexible=True)
        r.int16()
        if kind == CONSUMER_GROUP:
            epoch = r.int32()
            r.tags()
            return ConsumerGroupEpoch(group, epoch)
        if kind == CONSUMER_MEMBER:
            instance, _rack, client, _host = r.string(), r.string(), r.required(), r.required()
            subscribed = tuple(r.required() for _ in range(r.count()))
            r.string()                                          # subscribed topic regex
            rebalance_timeout = r.int32()
            assignor = r.string()
            tags = r.tags()
            return ConsumerMember(group, member, instance, client, subscribed, rebalance_timeout,
                                  assignor, classic=0 in tags)
        if kind == CONSUMER_TARGET_EPOCH:
            epoch = r.int32()
            r.tags()
            return ConsumerTargetEpoch(group, epoch)
        if kind == CONSUMER_TARGET_MEMBER:
            parts = _topic_partitions(r)
            r.tags()
            return ConsumerTarget(group, member, parts)
        epoch, previous, state = r.int32(), r.int32(), r.int8()
        assigned = _topic_partitions(r)
        pending = _topic_partitions(r)
        r.tags()
        return ConsumerCurrent(group, member, epoch, previous, state, assigned, pending)
    except (struct.error, IndexError) as exc:
        raise KafkaRecordError(f"record type {kind} of group {group!r}: {exc}") from None


def _classic(group: str, value: bytes, version: int) -> KafkaClassicGroup:
    if not 0 <= version <= 4:
        raise KafkaRecordError(f"GroupMetadataValue version {version} of group {group!r} is not 0-4")
    r = _Reader(value, flexible=version >= 4)
    r.int16()
    protocol_type = r.string()
    generation = r.int32()
    protocol = r.string()
    leader = r.string()
    if version >= 2:
        r.int64()                                               # current state timestamp
    members = []
    for _ in range(r.count()):
        member_id = r.required()
        instance = r.string() if version >= 3 else None
        client, host = r.required(), r.required()
        rebalance_timeout = r.int32() if version >= 1 else -1
        session_timeout = r.int32()
        subscription, assignment = r.bytes_(), r.bytes_()
        r.tags()
        members.append(ClassicMemberValue(member_id, instance, client, host, rebalance_timeout,
                                          session_timeout, subscription, assignment))
    r.tags()
    return KafkaClassicGroup(group, protocol_type, generation, protocol, leader, tuple(members))
