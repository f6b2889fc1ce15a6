"""A load's replay from bytes (`record_codec.replay_payloads`, which stores plain offset
commits without building their records) leaves exactly the state that decoding and
replaying every record does, and fails where that fails."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.host import replay_all, replay_payloads
from kgroup.core.record_codec import decode, encode
from kgroup.core.records import (
    ClassicGroupRecord,
    ClassicGroupValue,
    GroupConfigRecord,
    OffsetCommitRecord,
    OffsetCommitValue,
    TxnOffsetCommitRecord,
    TxnOffsetMarkerRecord,
)

# Few names, so that groups, topics and partitions repeat (overwrites, tombstones of what
# exists, and the decoder's name cache both hit and missed).
GROUPS = st.sampled_from(["g", "g2", "grüppe", ""])
TOPICS = st.sampled_from(["t", "orders", "ü"])
PARTITIONS = st.integers(0, 3)
PIDS = st.integers(1, 3)

offset_values = st.builds(
    OffsetCommitValue, offset=st.integers(-1, 2**40), leader_epoch=st.integers(-1, 5),
    # Mostly the plain commit (no metadata, no expiry) that the fast path takes.
    metadata=st.sampled_from(["", "", "", "meta"]),
    commit_timestamp_ms=st.integers(0, 2**41),
    expire_timestamp_ms=st.none() | st.none() | st.integers(0, 2**41),
)
offset_records = st.builds(OffsetCommitRecord, group_id=GROUPS, topic=TOPICS, partition=PARTITIONS,
                           value=st.none() | offset_values | offset_values)
txn_offset_records = st.builds(TxnOffsetCommitRecord, group_id=GROUPS, topic=TOPICS,
                               partition=PARTITIONS, producer_id=PIDS, value=offset_values)
txn_markers = st.builds(TxnOffsetMarkerRecord, producer_id=PIDS, commit=st.booleans())
group_records = st.builds(ClassicGroupRecord, group_id=GROUPS, value=st.none() | st.just(
    ClassicGroupValue("consumer", 3, "range", None, 5, ())))
config_records = st.builds(GroupConfigRecord, group_id=GROUPS,
                           configs=st.none() | st.just((("consumer.session.timeout.ms", "50000"),)))
any_record = st.one_of(offset_records, offset_records, offset_records, txn_offset_records,
                       txn_markers, group_records, config_records)

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def outcome(load) -> tuple:
    """The stored state a load leaves, and how it failed (None if it did not)."""
    shard = GroupCoordinatorShard()
    try:
        load(shard)
        error = None
    except Exception as exc:  # noqa: BLE001 - compared between the two ways
        error = (type(exc), str(exc))
    return shard.shard.stored, error


@SETTINGS
@given(st.lists(any_record, max_size=40))
def test_replay_from_bytes_stores_what_decode_and_replay_store(records):
    payloads = [encode(r) for r in records]
    fast = outcome(lambda shard: replay_payloads(shard, payloads))
    slow = outcome(lambda shard: replay_all(shard, map(decode, payloads)))
    assert fast == slow


@SETTINGS
@given(st.lists(any_record, min_size=1, max_size=20), st.data())
def test_replay_from_bytes_fails_where_decode_fails_and_keeps_what_came_before(records, data):
    payloads = [encode(r) for r in records]
    at = data.draw(st.integers(0, len(payloads) - 1))
    bad = bytearray(payloads[at])
    cut = data.draw(st.integers(0, len(bad) - 1))
    kind = data.draw(st.sampled_from(["truncate", "append", "flip"]))
    if kind == "truncate":
        del bad[cut:]
    elif kind == "append":
        bad += b"\x00"
    else:
        bad[cut] ^= data.draw(st.integers(1, 255))
    payloads[at] = bytes(bad)
    fast = outcome(lambda shard: replay_payloads(shard, payloads))
    slow = outcome(lambda shard: replay_all(shard, map(decode, payloads)))
    assert fast == slow


def test_plain_commits_land_as_the_same_values():
    records = [OffsetCommitRecord("g", "t", p, OffsetCommitValue(10 * p, 1, "", 5)) for p in range(3)]
    records.append(OffsetCommitRecord("g", "t", 1, None))          # a tombstone, the usual way
    shard = GroupCoordinatorShard()
    replay_payloads(shard, [encode(r) for r in records])
    assert shard.shard.stored.offsets == {"g": {("t", 0): OffsetCommitValue(0, 1, "", 5),
                                                ("t", 2): OffsetCommitValue(20, 1, "", 5)}}
