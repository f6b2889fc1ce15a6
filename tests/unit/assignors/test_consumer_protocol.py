"""ConsumerProtocol subscription/assignment bytes: golden vectors, kafka-python interop both
ways, forward compatibility and rejection of truncated or garbage input."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment as KAssignment,
    ConsumerProtocolSubscription as KSubscription,
)
from kafka.structs import TopicPartition

from assignor_support import SETTINGS
from kgroup.assignors import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kgroup.assignors.consumer_protocol import decode_sticky_user_data, encode_sticky_user_data

SUB = Subscription(("orders", "payments"), b"\x01\x02", (("orders", (0, 2)),), 7, "rack-a")
ASG = Assignment((("orders", (1, 3)), ("payments", (0,))), None)

# Produced by kafka-python 3.0.12's ConsumerProtocolSubscription/Assignment.encode().
GOLDEN_SUB = {
    0: "00000000000200066f726465727300087061796d656e7473000000020102",
    1: "00010000000200066f726465727300087061796d656e74730000000201020000000100066f7264657273"
       "000000020000000000000002",
    2: "00020000000200066f726465727300087061796d656e74730000000201020000000100066f7264657273"
       "00000002000000000000000200000007",
    3: "00030000000200066f726465727300087061796d656e74730000000201020000000100066f7264657273"
       "0000000200000000000000020000000700067261636b2d61",
}
GOLDEN_ASG_BODY = ("0000000200066f726465727300000002000000010000000300087061796d656e7473000000010000"
                   "0000ffffffff")
GOLDEN_EMPTY_V3 = "000300000000ffffffff00000000ffffffffffff"


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_golden_vectors(version: int) -> None:
    raw = bytes.fromhex(GOLDEN_SUB[version])
    assert encode_subscription(SUB, version) == raw
    got = decode_subscription(raw)
    assert got.topics == SUB.topics and got.user_data == SUB.user_data
    assert got.owned_partitions == (SUB.owned_partitions if version >= 1 else ())
    assert got.generation_id == (7 if version >= 2 else -1)
    assert got.rack_id == ("rack-a" if version >= 3 else None)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_assignment_golden_vectors(version: int) -> None:
    raw = bytes.fromhex(f"{version:04x}" + GOLDEN_ASG_BODY)
    assert encode_assignment(ASG, version) == raw
    assert decode_assignment(raw) == ASG


def test_empty_and_null_fields() -> None:
    empty = Subscription((), None, (), -1, None)
    assert encode_subscription(empty, 3).hex() == GOLDEN_EMPTY_V3
    assert decode_subscription(bytes.fromhex(GOLDEN_EMPTY_V3)) == empty
    # Empty SyncGroup assignment bytes mean "nothing assigned".
    assert decode_assignment(b"") == Assignment((), None)


topics = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12)
tp_lists = st.dictionaries(topics, st.lists(st.integers(0, 2**31 - 1), max_size=5, unique=True),
                           max_size=4).map(lambda d: tuple((t, tuple(sorted(p)))
                                                           for t, p in sorted(d.items())))
subscriptions = st.builds(
    Subscription, st.lists(topics, max_size=5).map(tuple), st.none() | st.binary(max_size=20),
    tp_lists, st.integers(-1, 2**31 - 1), st.none() | topics)
assignments = st.builds(Assignment, tp_lists, st.none() | st.binary(max_size=20))


def _k_sub(sub: Subscription, version: int) -> KSubscription:
    TP = KSubscription.TopicPartition
    return KSubscription(version=version, topics=list(sub.topics), user_data=sub.user_data,
                         owned_partitions=[TP(topic=t, partitions=list(p))
                                           for t, p in sub.owned_partitions],
                         generation_id=sub.generation_id, rack_id=sub.rack_id)


@SETTINGS
@given(subscriptions, st.integers(0, 3))
def test_subscription_bytes_match_kafka_python_both_ways(sub: Subscription, version: int) -> None:
    ours = encode_subscription(sub, version)
    theirs = _k_sub(sub, version).encode()
    assert ours == theirs
    k = KSubscription.decode(ours)
    assert list(k.topics) == list(sub.topics) and k.user_data == sub.user_data
    back = decode_subscription(theirs)
    assert back.topics == sub.topics and back.user_data == sub.user_data
    if version >= 1:
        assert back.owned_partitions == sub.owned_partitions
    if version >= 2:
        assert back.generation_id == sub.generation_id == k.generation_id
    if version >= 3:
        assert back.rack_id == sub.rack_id == k.rack_id


@SETTINGS
@given(assignments, st.integers(0, 3))
def test_assignment_bytes_match_kafka_python_both_ways(asg: Assignment, version: int) -> None:
    TP = KAssignment.TopicPartition
    theirs = KAssignment(version=version, user_data=asg.user_data, assigned_partitions=[
        TP(topic=t, partitions=list(p)) for t, p in asg.partitions]).encode()
    assert encode_assignment(asg, version) == theirs
    assert decode_assignment(theirs) == asg
    k = KAssignment.decode(encode_assignment(asg, version))
    assert [(tp.topic, tuple(tp.partitions)) for tp in k.assigned_partitions] == list(asg.partitions)


def test_newer_version_is_read_with_newest_known_layout() -> None:
    # A v4 member appends a field we do not know; Kafka reads it as v3 and ignores the rest.
    raw = b"\x00\x04" + encode_subscription(SUB, 3)[2:] + b"\x00\x00\x00\x2a"
    got = decode_subscription(raw)
    assert got == SUB
    asg = b"\x00\x09" + encode_assignment(ASG, 3)[2:]
    assert decode_assignment(asg) == ASG


@SETTINGS
@given(subscriptions, st.integers(0, 3), st.data())
def test_truncated_subscription_is_rejected(sub: Subscription, version: int, data) -> None:
    raw = encode_subscription(sub, version)
    cut = data.draw(st.integers(0, len(raw) - 1))
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(raw[:cut])


@SETTINGS
@given(assignments, st.data())
def test_truncated_assignment_is_rejected(asg: Assignment, data) -> None:
    raw = encode_assignment(asg, 3)
    cut = data.draw(st.integers(1, len(raw) - 1))
    with pytest.raises(ConsumerProtocolError):
        decode_assignment(raw[:cut])


@SETTINGS
@given(st.binary(max_size=64))
def test_garbage_never_escapes_as_another_error(raw: bytes) -> None:
    for decode in (decode_subscription, decode_assignment, decode_sticky_user_data):
        try:
            decode(raw)
        except ConsumerProtocolError as exc:
            assert isinstance(exc, ValueError)


@pytest.mark.parametrize("raw, why", [
    (b"\xff\xff", "negative version"),
    (b"\x00\x00\x7f\xff\xff\xff", "huge topic count"),
    (b"\x00\x00\xff\xff\xff\xfe", "negative topic count"),
    (b"\x00\x00\x00\x00\x00\x01\xff\xff", "null topic name"),
    (b"\x00\x00\x00\x00\x00\x01\x00\x02\xff\xfe\xff\xff\xff\xff", "invalid UTF-8"),
    (b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xfe", "user data length -2"),
])
def test_specific_garbage_is_rejected_clearly(raw: bytes, why: str) -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(raw)


def test_encode_rejects_unknown_version() -> None:
    with pytest.raises(ConsumerProtocolError):
        encode_subscription(SUB, 4)
    with pytest.raises(ConsumerProtocolError):
        encode_assignment(ASG, -1)


def test_sticky_user_data_java_layout_and_kafka_python_layout() -> None:
    owned = (("orders", (0, 2)),)
    java_v1 = encode_sticky_user_data(owned, 7)
    assert java_v1.hex() == "0000000100066f726465727300000002000000000000000200000007"
    assert decode_sticky_user_data(java_v1) == (owned, 7)
    assert decode_sticky_user_data(encode_sticky_user_data(owned, None)) == (owned, -1)
    # kafka-python 3 writes the same struct behind an int16 version.
    sub = StickyPartitionAssignor._metadata(
        ["orders"], [TopicPartition("orders", 0), TopicPartition("orders", 2)], 7)
    ours = decode_subscription(sub.encode(version=0))
    assert decode_sticky_user_data(ours.user_data) == (owned, 7)
