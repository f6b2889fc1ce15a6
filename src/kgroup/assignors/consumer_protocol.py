"""ConsumerProtocol bytes: the subscription and assignment blobs inside JoinGroup/SyncGroup.

Byte-compatible with Kafka's ConsumerProtocolSubscription and ConsumerProtocolAssignment
schemas (and the sticky assignor's StickyAssignorUserData). None of these are flexible
versions: an int16 version, then the fields in order with int16-length strings, int32-length
arrays and int32-length nullable bytes.

Decoding follows Kafka's Java client: a version newer than we know is read with the newest
layout we know (the schemas promise new versions only append fields), and bytes after the
last known field are ignored for the same reason. Anything truncated or malformed raises
`ConsumerProtocolError` (a ValueError).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable

from kgroup.assignors.protocol_bytes import (
    I16,
    I32,
    ProtocolBytesError,
    Reader,
    write_bytes,
    write_string,
)
from kgroup.assignors.spec import Assignment, Subscription, TopicPartitions

# The protocol type of a classic group whose members speak this embedded protocol (a
# JoinGroup's protocol_type) -- not a group kind.
CONSUMER_PROTOCOL_TYPE = "consumer"

SUBSCRIPTION_MAX_VERSION = 3
ASSIGNMENT_MAX_VERSION = 3


class ConsumerProtocolError(ProtocolBytesError):
    """The bytes are not a valid ConsumerProtocol subscription, assignment or user data."""


class _ConsumerProtocolReader(Reader):
    """A ``Reader`` that raises ConsumerProtocolError and reads topic-partition lists."""

    __slots__ = ()

    def __init__(self, data: bytes, what: str) -> None:
        super().__init__(data, what, ConsumerProtocolError)

    def topic_partitions(self, field: str) -> TopicPartitions:
        count = self.array_length(field, 6)
        out = []
        for _ in range(count):
            topic = self.string(field + ".topic")
            out.append((topic, self.int32_array(field + ".partitions")))
        return tuple(out)  # type: ignore[return-value]


def _version(version: int, maximum: int, what: str) -> int:
    if not isinstance(version, int) or not 0 <= version <= maximum:
        raise ConsumerProtocolError(f"{what}: cannot encode version {version} (0..{maximum})")
    return version


def _string(value: str | None, out: list[bytes], nullable: bool = False) -> None:
    write_string(value, out, nullable, ConsumerProtocolError)


def _topic_partitions(items: Iterable[tuple[str, Iterable[int]]], out: list[bytes]) -> None:
    items = list(items)
    out.append(I32.pack(len(items)))
    for topic, partitions in items:
        _string(topic, out)
        parts = tuple(partitions)
        out.append(I32.pack(len(parts)))
        out.append(struct.pack(f">{len(parts)}i", *parts))


def encode_subscription(sub: Subscription, version: int) -> bytes:
    """ConsumerProtocolSubscription bytes at `version` (fields newer than it are dropped)."""
    _version(version, SUBSCRIPTION_MAX_VERSION, "subscription")
    out = [I16.pack(version), I32.pack(len(sub.topics))]
    for topic in sub.topics:
        _string(topic, out)
    write_bytes(sub.user_data, out)
    if version >= 1:
        _topic_partitions(sub.owned_partitions, out)
    if version >= 2:
        out.append(I32.pack(sub.generation_id))
    if version >= 3:
        _string(sub.rack_id, out, nullable=True)
    return b"".join(out)


def decode_subscription(data: bytes) -> Subscription:
    """Parse ConsumerProtocolSubscription bytes of any version."""
    r = _ConsumerProtocolReader(data, "subscription")
    version = r.int16("version")
    if version < 0:
        raise ConsumerProtocolError(f"subscription: unsupported version {version}")
    version = min(version, SUBSCRIPTION_MAX_VERSION)
    count = r.array_length("topics", 2)
    topics = tuple(r.string("topics") for _ in range(count))
    user_data = r.nullable_bytes("user_data")
    owned: TopicPartitions = ()
    generation_id = -1
    rack_id = None
    if version >= 1:
        owned = r.topic_partitions("owned_partitions")
    if version >= 2:
        generation_id = r.int32("generation_id")
    if version >= 3:
        rack_id = r.string("rack_id", nullable=True)
    return Subscription(topics, user_data, owned, generation_id, rack_id)  # type: ignore[arg-type]


def encode_assignment(asg: Assignment, version: int) -> bytes:
    """ConsumerProtocolAssignment bytes at `version` (the layout is the same for v0–v3)."""
    _version(version, ASSIGNMENT_MAX_VERSION, "assignment")
    out = [I16.pack(version)]
    _topic_partitions(asg.partitions, out)
    write_bytes(asg.user_data, out)
    return b"".join(out)


def decode_assignment(data: bytes) -> Assignment:
    """Parse ConsumerProtocolAssignment bytes of any version.

    An empty byte string decodes to an empty assignment: Kafka's coordinator sends empty
    SyncGroup assignment bytes to a member the leader gave nothing.
    """
    if isinstance(data, (bytes, bytearray, memoryview)) and len(data) == 0:
        return Assignment((), None)
    r = _ConsumerProtocolReader(data, "assignment")
    version = r.int16("version")
    if version < 0:
        raise ConsumerProtocolError(f"assignment: unsupported version {version}")
    partitions = r.topic_partitions("assigned_partitions")
    user_data = r.nullable_bytes("user_data")
    return Assignment(partitions, user_data)


def encode_sticky_user_data(owned: TopicPartitions, generation: int | None) -> bytes:
    """StickyAssignorUserData: v1 when `generation` is given, v0 (no generation) otherwise.

    This schema has no version prefix on the wire; Kafka tries v1 then v0 when reading.
    """
    out: list[bytes] = []
    _topic_partitions(owned, out)
    if generation is not None:
        out.append(I32.pack(generation))
    return b"".join(out)


def decode_sticky_user_data(data: bytes) -> tuple[TopicPartitions, int]:
    """Parse StickyAssignorUserData; returns (owned, generation or -1).

    Kafka's Java client writes it without a version prefix (v1: previous assignment then
    generation; v0: no generation) and reads v1, then v0. kafka-python 3 writes the same
    fields behind an int16 version, so that layout is accepted too. The first layout that
    consumes every byte wins.
    """
    for prefixed in (False, True):
        for with_generation in (True, False):
            try:
                r = _ConsumerProtocolReader(data, "sticky user data")
                if prefixed and r.int16("version") not in (0, 1):
                    continue
                owned = r.topic_partitions("previous_assignment")
                generation = r.int32("generation") if with_generation else -1
            except ConsumerProtocolError:
                continue
            if r.pos == len(r.buf):
                return owned, generation
    raise ConsumerProtocolError("sticky user data: not StickyAssignorUserData v0 or v1")
