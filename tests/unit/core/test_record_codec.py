"""The record codec: every record type survives bytes and back; bad bytes fail cleanly."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup.core.record_codec import (
    RecordDecodeError,
    RecordEncodeError,
    decode,
    decode_many,
    encode,
    encode_key,
    encode_value,
)
from kgroup.core.records import (
    ClassicGroupRecord,
    ConsumerRegexRecord,
    ClassicGroupValue,
    ClassicMemberValue,
    GroupConfigRecord,
    OffsetCommitRecord,
    ResolvedRegex,
    OffsetCommitValue,
    TxnOffsetCommitRecord,
    TxnOffsetMarkerRecord,
    TxnRecord,
    TxnValue,
)
from kgroup.core.transactions.txn_state import TxnState

INT16 = st.integers(-(2**15), 2**15 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
TEXT = st.text(max_size=20)
# Identifiers are int16-length-prefixed in keys; keep them well inside that.
NAME = st.text(max_size=12)


def member(**kw) -> ClassicMemberValue:
    base = dict(member_id="m-1", group_instance_id=None, client_id="client", client_host="/127.0.0.1",
                rebalance_timeout_ms=30_000, session_timeout_ms=10_000, subscription=b"sub",
                assignment=b"asg")
    base.update(kw)
    return ClassicMemberValue(**base)


def group_value(**kw) -> ClassicGroupValue:
    base = dict(protocol_type="consumer", generation=3, protocol="range", leader="m-1",
                current_state_timestamp_ms=1_700_000_000_000, members=(member(),))
    base.update(kw)
    return ClassicGroupValue(**base)


EXAMPLES = [
    OffsetCommitRecord("g", "t", 0, OffsetCommitValue(42, 7, "meta", 1_000)),
    OffsetCommitRecord("g", "t", 0, OffsetCommitValue(42, -1, "", 1_000, expire_timestamp_ms=5_000)),
    OffsetCommitRecord("g", "t", 0, OffsetCommitValue(-1, -1, "", 0, expire_timestamp_ms=0)),
    OffsetCommitRecord("g", "t", 2**31 - 1, OffsetCommitValue(2**63 - 1, 2**31 - 1, "x" * 5000, -(2**63))),
    OffsetCommitRecord("g", "t", 0, None),
    OffsetCommitRecord("", "", -1, None),
    OffsetCommitRecord("grüppe-☃", "tópico-日本", 3, OffsetCommitValue(1, 2, "métadonnées 🚀", 3)),
    ClassicGroupRecord("g", group_value()),
    ClassicGroupRecord("g", None),
    ClassicGroupRecord("", None),
    ClassicGroupRecord("g", group_value(protocol=None, leader=None, members=())),
    ClassicGroupRecord("g", group_value(protocol_type="", generation=0, members=())),
    ClassicGroupRecord("g", group_value(members=(
        member(member_id="a", group_instance_id="instance-1"),
        member(member_id="b", group_instance_id="", subscription=b"", assignment=b""),
        member(member_id="ç-☃", client_id="", client_host="", subscription=bytes(range(256))),
    ))),
    ClassicGroupRecord("グループ", group_value(protocol="cooperative-sticky", leader="ü")),
]

# A group's resolved regex (Kafka's ConsumerGroupRegularExpression), keyed by the regex.
REGEX_EXAMPLES = [
    ConsumerRegexRecord("g", "logs-.*", ResolvedRegex(("logs-a", "logs-b"), 17, 1_700_000_000_000)),
    ConsumerRegexRecord("grüppe-☃", "^t[0-9]+$", ResolvedRegex((), 0, 0)),
    ConsumerRegexRecord("g", "logs-.*", None),
]

TXN_EXAMPLES = [
    TxnRecord("tx", TxnValue(1000, 3, 2, -1, 60_000, TxnState.ONGOING, (("t", 0), ("u", 7)), ("g",), 5, 6)),
    TxnRecord("tx-☃", TxnValue(2**62, 32_766, -1, 7, 1, TxnState.COMPLETE_ABORT, (), (), -1, 0)),
    TxnRecord("tx", None),
    TxnOffsetCommitRecord("g", "t", 3, 1000, OffsetCommitValue(42, 7, "meta", 1_000)),
    TxnOffsetCommitRecord("g", "t", 3, 1000, OffsetCommitValue(42, -1, "", 1_000, expire_timestamp_ms=9)),
    TxnOffsetMarkerRecord(1000, True),
    TxnOffsetMarkerRecord(-1, False),
]

GROUP_CONFIG_EXAMPLES = [
    GroupConfigRecord("g", (("consumer.heartbeat.interval.ms", "3000"), ("consumer.session.timeout.ms", "45000"))),
    GroupConfigRecord("grüppe-☃", (("consumer.session.timeout.ms", "métadonnées 🚀"),)),
    GroupConfigRecord("g", ()),
    GroupConfigRecord("g", None),
    GroupConfigRecord("", None),
]


@pytest.mark.parametrize("record", EXAMPLES, ids=lambda r: type(r).__name__)
def test_round_trip_examples(record):
    payload = encode(record)
    assert isinstance(payload, bytes)
    decoded = decode(payload)
    assert decoded == record
    assert type(decoded) is type(record)
    if record.value is not None:
        assert type(decoded.value) is type(record.value)


def test_tombstone_is_key_only():
    for record in EXAMPLES:
        key = encode_key(record)
        value = encode_value(record)
        if record.value is None:
            assert value is None
            assert encode(record) == key
        else:
            assert encode(record) == key + value


def test_versions_in_key_and_value():
    oc = EXAMPLES[0]
    assert struct.unpack_from(">h", encode_key(oc))[0] == 1
    assert struct.unpack_from(">h", encode_value(oc))[0] == 3
    assert struct.unpack_from(">h", encode_value(EXAMPLES[1]))[0] == 1  # carries an expiry
    grp = EXAMPLES[7]
    assert struct.unpack_from(">h", encode_key(grp))[0] == 2
    assert struct.unpack_from(">h", encode_value(grp))[0] == 0
    # Key versions 8-10 are the transaction records; group configs come after them.
    assert struct.unpack_from(">h", encode(TXN_EXAMPLES[0]))[0] == 8
    assert struct.unpack_from(">h", encode(TXN_EXAMPLES[-1]))[0] == 10
    assert struct.unpack_from(">h", encode(GROUP_CONFIG_EXAMPLES[0]))[0] == 11


def test_key_version_0_reads_as_offset_commit():
    payload = bytearray(encode(EXAMPLES[0]))
    payload[0:2] = b"\x00\x00"
    assert decode(bytes(payload)) == EXAMPLES[0]


def test_decoded_optional_fields_are_none_not_sentinels():
    v = decode(encode(EXAMPLES[0])).value
    assert v.expire_timestamp_ms is None
    g = decode(encode(EXAMPLES[10])).value
    assert g.protocol is None and g.leader is None
    m = decode(encode(EXAMPLES[7])).value.members[0]
    assert m.group_instance_id is None


def test_decoded_strings_are_shared_between_records():
    a = decode(encode(OffsetCommitRecord("group-x", "topic-y", 0, None)))
    b = decode(encode(OffsetCommitRecord("group-x", "topic-y", 1, OffsetCommitValue(1, 1, "", 1))))
    assert a.group_id is b.group_id and a.topic is b.topic


def test_name_split_is_part_of_the_key():
    a = OffsetCommitRecord("ab", "c", 0, None)
    b = OffsetCommitRecord("a", "bc", 0, None)
    assert decode(encode(a)) == a
    assert decode(encode(b)) == b
    assert decode(encode(a)) == a


def test_decode_accepts_bytearray_and_memoryview():
    payload = encode(EXAMPLES[6])
    assert decode(bytearray(payload)) == EXAMPLES[6]
    assert decode(memoryview(payload)) == EXAMPLES[6]


def test_decode_many_keeps_order():
    assert decode_many([encode(r) for r in EXAMPLES]) == EXAMPLES


@pytest.mark.parametrize("record", [
    OffsetCommitRecord("g" * 40_000, "t", 0, None),
    OffsetCommitRecord("g", "t", 2**31, None),
    OffsetCommitRecord("g", "t", 0, OffsetCommitValue(2**63, -1, "", 0)),
    OffsetCommitRecord("g", "\ud800", 0, None),
    ClassicGroupRecord("g", group_value(generation=2**31)),
    ClassicGroupRecord("g", group_value(members=(member(subscription="not bytes"),))),
    "not a record",
])
def test_unencodable_records_raise_encode_error(record):
    with pytest.raises(RecordEncodeError):
        encode(record)


@pytest.mark.parametrize("payload, message", [
    (b"", "malformed"),
    (b"\x00", "malformed"),
    (b"\x00\x63" + b"\x00" * 12, "unknown record key version 99"),  # 3-7: consumer groups
    (b"\xff\xff" + b"\x00" * 12, "unknown record key version -1"),
    (struct.pack(">hhhi", 1, -1, 0, 0), "negative string length"),
    (struct.pack(">hhhi", 1, 5, 5, 0) + b"abc", "truncated"),
    (encode_key(EXAMPLES[0]) + struct.pack(">hqiqi", 9, 0, 0, 0, 0), "unknown offset commit value version 9"),
    (encode(EXAMPLES[0]) + b"!", "metadata says"),
    (encode(EXAMPLES[0])[:-1], "metadata says"),
    (encode_key(EXAMPLES[0]) + struct.pack(">hqiqi", 3, 0, 0, 0, -1), "metadata says"),
    (encode_key(EXAMPLES[0]) + b"\x00\x03", "malformed"),
    (encode_key(EXAMPLES[0]) + struct.pack(">hqiqi", 3, 0, 0, 0, 2) + b"\xff\xfe", "malformed"),
    (b"\x00\x02\x00\x05ab", "group id truncated"),
    (encode(EXAMPLES[7]) + b"\x00", "trailing"),
    (encode_key(EXAMPLES[7]) + b"\x00\x05", "unknown group metadata value version 5"),
    (encode_key(EXAMPLES[7]) + b"\x00\x00" + struct.pack(">i", -2), "negative length"),
])
def test_malformed_payloads_raise_decode_error(payload, message):
    with pytest.raises(RecordDecodeError, match=message):
        decode(payload)


def test_huge_member_count_is_refused_without_looping():
    value = encode_value(ClassicGroupRecord("g", group_value(members=())))
    payload = encode_key(EXAMPLES[7]) + value[:-4] + struct.pack(">i", 2**31 - 1)
    with pytest.raises(RecordDecodeError, match="member count"):
        decode(payload)


def test_decode_rejects_non_bytes():
    with pytest.raises(RecordDecodeError):
        decode("text")  # type: ignore[arg-type]


def test_decode_error_is_a_value_error():
    assert issubclass(RecordDecodeError, ValueError)
    assert issubclass(RecordEncodeError, ValueError)


# ---- hypothesis ---------------------------------------------------------------------------

offset_values = st.builds(
    OffsetCommitValue, offset=INT64, leader_epoch=INT32, metadata=TEXT, commit_timestamp_ms=INT64,
    expire_timestamp_ms=st.none() | INT64,
)
offset_records = st.builds(OffsetCommitRecord, group_id=NAME, topic=NAME, partition=INT32,
                           value=st.none() | offset_values)
member_values = st.builds(
    ClassicMemberValue, member_id=TEXT, group_instance_id=st.none() | TEXT, client_id=TEXT,
    client_host=TEXT, rebalance_timeout_ms=INT32, session_timeout_ms=INT32,
    subscription=st.binary(max_size=40), assignment=st.binary(max_size=40),
)
group_values = st.builds(
    ClassicGroupValue, protocol_type=TEXT, generation=INT32, protocol=st.none() | TEXT,
    leader=st.none() | TEXT, current_state_timestamp_ms=INT64,
    members=st.lists(member_values, max_size=5).map(tuple),
)
group_records = st.builds(ClassicGroupRecord, group_id=NAME, value=st.none() | group_values)
txn_values = st.builds(
    TxnValue, producer_id=INT64, producer_epoch=INT16, last_producer_epoch=INT16, previous_producer_id=INT64,
    timeout_ms=INT32, state=st.sampled_from(TxnState),
    partitions=st.lists(st.tuples(NAME, INT32), max_size=4).map(tuple),
    groups=st.lists(NAME, max_size=3).map(tuple), start_ms=INT64, update_ms=INT64,
)
txn_records = (st.builds(TxnRecord, transactional_id=NAME, value=st.none() | txn_values)
               | st.builds(TxnOffsetCommitRecord, group_id=NAME, topic=NAME, partition=INT32, producer_id=INT64,
                           value=offset_values)
               | st.builds(TxnOffsetMarkerRecord, producer_id=INT64, commit=st.booleans()))
group_config_records = st.builds(
    GroupConfigRecord, group_id=NAME,
    configs=st.none() | st.lists(st.tuples(NAME, TEXT), max_size=4).map(tuple))
records = offset_records | group_records

SETTINGS = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(records)
def test_round_trip_property(record):
    decoded = decode(encode(record))
    assert decoded == record
    assert type(decoded) is type(record)


@pytest.mark.parametrize("record", TXN_EXAMPLES, ids=lambda r: type(r).__name__)
def test_transaction_records_round_trip(record):
    decoded = decode(encode(record))
    assert decoded == record and type(decoded) is type(record)


@SETTINGS
@given(txn_records)
def test_transaction_records_round_trip_property(record):
    assert decode(encode(record)) == record


@pytest.mark.parametrize("record", GROUP_CONFIG_EXAMPLES, ids=lambda r: type(r).__name__)
def test_group_config_records_round_trip(record):
    decoded = decode(encode(record))
    assert decoded == record and type(decoded) is type(record)
    # A tombstone is the key alone: version, both lengths, the group.
    assert (len(encode(record)) == 6 + len(record.group_id.encode())) is (record.configs is None)


@SETTINGS
@given(group_config_records)
def test_group_config_records_round_trip_property(record):
    assert decode(encode(record)) == record


@st.composite
def mutated_payloads(draw):
    """A valid payload with bytes cut, flipped, inserted or appended."""
    payload = bytearray(encode(draw(records)))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["truncate", "flip", "insert", "append", "delete"]))
        pos = draw(st.integers(0, max(len(payload) - 1, 0)))
        if kind == "truncate":
            del payload[pos:]
        elif kind == "flip" and payload:
            payload[pos] ^= draw(st.integers(1, 255))
        elif kind == "insert":
            payload[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "append":
            payload += draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete" and payload:
            del payload[pos]
    return bytes(payload)


@SETTINGS
@given(mutated_payloads())
def test_mutated_payload_decodes_or_raises_decode_error(payload):
    # A mutation may still be a valid record (a flipped offset byte); then it must
    # round-trip. Anything else must be a RecordDecodeError, never another exception.
    try:
        record = decode(payload)
    except RecordDecodeError:
        return
    assert_canonical(record, payload)


def assert_canonical(record, payload: bytes) -> None:
    """A payload that decodes is what encoding its record gives (key version 0 reads as 1)."""
    if payload[:2] == b"\x00\x00":
        payload = b"\x00\x01" + payload[2:]
    assert encode(record) == payload


@SETTINGS
@given(st.binary(max_size=64))
def test_garbage_decodes_or_raises_decode_error(payload):
    try:
        record = decode(payload)
    except RecordDecodeError:
        return
    assert_canonical(record, payload)


def _value(record):
    """What a tombstone lacks: `value`, or a GroupConfigRecord's `configs`."""
    return record.configs if isinstance(record, GroupConfigRecord) else record.value


@SETTINGS
@given(records | txn_records | group_config_records, st.data())
def test_every_strict_prefix_is_rejected_or_shorter_record(record, data):
    payload = encode(record)
    cut = data.draw(st.integers(0, len(payload) - 1))
    try:
        decoded = decode(payload[:cut])
    except RecordDecodeError:
        return
    # The only prefix that decodes is the key alone: the record's tombstone.
    assert _value(decoded) is None and _value(record) is not None
    assert encode(decoded) == payload[:cut]


@pytest.mark.parametrize("record", REGEX_EXAMPLES, ids=lambda r: type(r).__name__)
def test_resolved_regex_records_round_trip(record):
    decoded = decode(encode(record))
    assert decoded == record and type(decoded) is type(record)
    assert struct.unpack_from(">h", encode(record))[0] == 12
    # A tombstone is the key alone: version, both lengths, the group, the regex.
    assert (len(encode(record)) == 6 + len(record.group_id.encode()) + len(record.regex.encode())) \
        is (record.value is None)
