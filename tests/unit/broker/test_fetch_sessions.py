"""Fetch sessions (KIP-227), one test per rule: the session cache on a manual clock
(kgroup.broker.data.fetch_sessions), then the rules as the Fetch handler answers them."""

from __future__ import annotations

import random
import uuid

from kgroup.broker.data.fetch_sessions import (
    EVICTION_MS,
    INT32_MAX,
    FetchSessionCache,
    PartitionRead,
    PlanKind,
    next_epoch,
)
from kgroup.error_codes import ErrorCode

from .datactx import DataCtx, batch, run

V = 12          # a version with sessions, topics by name
NOT_FOUND, BAD_EPOCH, TOPIC_ID_ERROR = (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                                        ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)


def cache(slots: int = 1000) -> FetchSessionCache:
    return FetchSessionCache(slots, rng=random.Random(7))


def asks(*partitions: int, offset: int = 0, topic: str = "t") -> list:
    return [((topic, p), ("ask", p, offset)) for p in partitions]


def nothing_new(plan, hw: int = 0) -> list[PartitionRead]:
    return [PartitionRead(key, 0, hw, 0, False) for key, _ in plan.asks]


def open_session(c: FetchSessionCache, *partitions: int, now: int = 0, follower: bool = False,
                 version: int = V) -> int:
    plan = c.plan(version, 0, 0, follower, asks(*partitions), [], now)
    answer = c.answer(plan, nothing_new(plan), now)
    assert answer.error == ErrorCode.NONE
    return answer.session_id


# ---- the cache, on a manual clock ----------------------------------------------------------

def test_kip227_a_full_fetch_opens_a_session_with_a_positive_id_and_expects_epoch_1():
    c = cache()
    plan = c.plan(V, 0, 0, False, asks(0, 1), [], now_ms=5)
    assert plan.kind is PlanKind.FULL and [k for k, _ in plan.asks] == [("t", 0), ("t", 1)]
    answer = c.answer(plan, nothing_new(plan), now_ms=5)
    assert answer.session_id > 0 and answer.keep == (True, True)
    session = c.sessions[answer.session_id]
    assert session.epoch == 1 and list(session.partitions) == [("t", 0), ("t", 1)]
    # An empty full fetch opens one too (Kafka does).
    plan = c.plan(V, 0, 0, False, [], [], now_ms=5)
    assert c.answer(plan, [], now_ms=5).session_id > 0 and len(c) == 2


def test_kip227_an_incremental_fetch_adds_and_updates_the_partitions_it_lists():
    c = cache()
    sid = open_session(c, 0, 1)
    plan = c.plan(V, sid, 1, False, asks(1, 2, offset=5), [], now_ms=1)
    assert plan.kind is PlanKind.INCREMENTAL
    # Every partition of the session is read, in the session's order, with the latest asks.
    assert list(plan.asks) == [(("t", 0), ("ask", 0, 0)), (("t", 1), ("ask", 1, 5)), (("t", 2), ("ask", 2, 5))]
    assert c.sessions[sid].epoch == 2


def test_kip227_forgotten_topics_data_removes_partitions_from_the_session():
    c = cache()
    sid = open_session(c, 0, 1, 2)
    plan = c.plan(V, sid, 1, False, [], [("t", 1), ("t", 9)], now_ms=1)
    assert [k for k, _ in plan.asks] == [("t", 0), ("t", 2)]


def test_kip227_an_incremental_answer_lists_only_partitions_with_something_to_say():
    c = cache()
    plan = c.plan(V, 0, 0, False, asks(0, 1, 2, 3, 4), [], 0)
    sid = c.answer(plan, [PartitionRead(k, 0, 10, 0, False) for k, _ in plan.asks], 0).session_id
    plan = c.plan(V, sid, 1, False, [], [], 1)
    outcomes = [PartitionRead(("t", 0), 0, 10, 0, False),                      # nothing new: left out
                PartitionRead(("t", 1), 0, 10, 0, True),                       # records
                PartitionRead(("t", 2), 0, 11, 0, False),                      # a new high watermark
                PartitionRead(("t", 3), 0, 10, 4, False),                      # a new log start offset
                PartitionRead(("t", 4), ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1, False)]   # an error
    assert c.answer(plan, outcomes, 1).keep == (False, True, True, True, True)
    # What was answered is remembered: the same again says nothing but the records and the
    # error; once the error is gone the partition is answered again (its watermark unknown).
    plan = c.plan(V, sid, 2, False, [], [], 2)
    outcomes = [PartitionRead(("t", 0), 0, 10, 0, False), PartitionRead(("t", 2), 0, 11, 0, False),
                PartitionRead(("t", 3), 0, 10, 4, False), PartitionRead(("t", 1), 0, 10, 0, False),
                PartitionRead(("t", 4), 0, 10, 0, False)]
    assert c.answer(plan, outcomes, 2).keep == (False, False, False, False, True)
    plan = c.plan(V, sid, 3, False, [], [], 3)
    assert c.answer(plan, outcomes, 3).keep == (False,) * 5


def test_kip227_a_partition_that_returned_records_is_read_last_next_time():
    c = cache()
    sid = open_session(c, 0, 1, 2)
    plan = c.plan(V, sid, 1, False, [], [], 1)
    c.answer(plan, [PartitionRead(("t", 0), 0, 5, 0, True), PartitionRead(("t", 1), 0, 0, 0, False),
                    PartitionRead(("t", 2), 0, 0, 0, False)], 1)
    plan = c.plan(V, sid, 2, False, [], [], 2)
    assert [k for k, _ in plan.asks] == [("t", 1), ("t", 2), ("t", 0)]


def test_kip227_a_wrong_epoch_is_invalid_fetch_session_epoch():
    c = cache()
    sid = open_session(c, 0)
    for epoch in (2, 7, -5):
        plan = c.plan(V, sid, epoch, False, asks(1), [], 1)
        answer = c.answer(plan, [], 1)
        assert plan.kind is PlanKind.ERROR and plan.asks == ()
        assert (answer.error, answer.session_id) == (BAD_EPOCH, 0)
    # The session is unchanged: epoch 1 still continues it.
    assert c.plan(V, sid, 1, False, [], [], 1).kind is PlanKind.INCREMENTAL


def test_kip227_an_unknown_session_id_with_epoch_above_0_is_fetch_session_id_not_found():
    c = cache()
    for sid, epoch in ((12345, 1), (0, 3), (-2, 9)):
        plan = c.plan(V, sid, epoch, False, asks(0), [], 0)
        answer = c.answer(plan, [], 0)
        assert (plan.kind, answer.error, answer.session_id) == (PlanKind.ERROR, NOT_FOUND, 0)


def test_kip227_epoch_minus_1_closes_the_session_and_the_fetch_is_sessionless():
    c = cache()
    sid = open_session(c, 0)
    plan = c.plan(V, sid, -1, False, asks(1), [], 1)
    answer = c.answer(plan, nothing_new(plan), 1)
    assert plan.kind is PlanKind.SESSIONLESS and [k for k, _ in plan.asks] == [("t", 1)]
    assert (answer.error, answer.session_id, answer.keep) == (ErrorCode.NONE, 0, (True,))
    assert sid not in c.sessions
    assert c.plan(V, sid, 1, False, [], [], 1).error == NOT_FOUND


def test_kip227_epoch_0_with_a_session_id_closes_it_and_opens_a_new_one():
    c = cache()
    sid = open_session(c, 0)
    plan = c.plan(V, sid, 0, False, asks(0), [], 1)
    new = c.answer(plan, nothing_new(plan), 1).session_id
    assert new > 0 and new != sid and set(c.sessions) == {new}


def test_kip227_a_session_left_without_partitions_is_closed_and_the_fetch_is_sessionless():
    c = cache()
    sid = open_session(c, 0)
    plan = c.plan(V, sid, 1, False, asks(0), [("t", 0)], 1)
    assert plan.kind is PlanKind.SESSIONLESS and [k for k, _ in plan.asks] == [("t", 0)]
    assert c.answer(plan, nothing_new(plan), 1).session_id == 0 and sid not in c.sessions


def test_kip227_a_session_keeps_to_topic_ids_or_names_fetch_session_topic_id_error():
    c = cache()
    by_id = open_session(c, 0, version=13)
    by_name = open_session(c, 0, version=12)
    assert c.plan(12, by_id, 1, False, [], [], 1).error == TOPIC_ID_ERROR
    assert c.plan(13, by_name, 1, False, [], [], 1).error == TOPIC_ID_ERROR
    assert c.plan(16, by_id, 1, False, [], [], 1).kind is PlanKind.INCREMENTAL


def test_kip227_the_epoch_wraps_from_int32_max_to_1_and_final_stays_final():
    assert next_epoch(0) == 1 and next_epoch(41) == 42
    assert next_epoch(INT32_MAX) == 1 and next_epoch(-1) == -1
    c = cache()
    sid = open_session(c, 0)
    c.sessions[sid].epoch = INT32_MAX
    c.plan(V, sid, INT32_MAX, False, [], [], 1)
    assert c.sessions[sid].epoch == 1


def test_kip227_a_fetch_overtaken_by_another_of_its_session_is_invalid_fetch_session_epoch():
    c = cache()
    sid = open_session(c, 0)
    first = c.plan(V, sid, 1, False, [], [], 1)       # long-polling ...
    second = c.plan(V, sid, 2, False, [], [], 2)      # ... while the client sends the next
    assert c.answer(second, nothing_new(second), 3).error == ErrorCode.NONE
    late = c.answer(first, nothing_new(first), 4)
    assert (late.error, late.session_id, late.keep) == (BAD_EPOCH, sid, (False,))


def test_kip227_versions_before_7_are_sessionless():
    c = cache()
    plan = c.plan(6, 55, 3, False, asks(0), [], 0)
    assert plan.kind is PlanKind.SESSIONLESS and c.answer(plan, nothing_new(plan), 0).session_id == 0


# ---- eviction (max.incremental.fetch.session.cache.slots) ------------------------------------

def test_kip227_a_full_cache_with_nothing_evictable_answers_session_id_0():
    c = cache(slots=2)
    a, b = open_session(c, 0, now=0), open_session(c, 0, 1, now=0)
    assert open_session(c, 0, 1, 2, now=10) == 0 and set(c.sessions) == {a, b}


def test_kip227_a_session_unused_longer_than_the_eviction_time_is_evicted_first():
    c = cache(slots=2)
    old = open_session(c, 0, 1, 2, now=0)
    used = open_session(c, 0, 1, 2, now=0)
    c.plan(V, used, 1, False, [], [], EVICTION_MS)                     # touched
    new = open_session(c, 0, now=EVICTION_MS + 1)
    assert new and set(c.sessions) == {used, new} and c.evictions == 1


def test_kip227_a_bigger_session_evicts_a_smaller_one_no_longer_new():
    c = cache(slots=2)
    small = open_session(c, 0, now=0)
    other = open_session(c, 0, 1, 2, now=0)
    # Both in use, and still new: nothing evictable.
    for sid in (small, other):
        c.plan(V, sid, 1, False, [], [], EVICTION_MS)
    assert open_session(c, 0, 1, now=EVICTION_MS) == 0
    # Older than the eviction time (touched since): the smallest goes for a bigger session ...
    for sid in (small, other):
        c.plan(V, sid, 2, False, [], [], EVICTION_MS + 1)
    assert open_session(c, 0, now=EVICTION_MS + 2) == 0              # ... not for a smaller one
    new = open_session(c, 0, 1, now=EVICTION_MS + 2)
    assert new and set(c.sessions) == {other, new}


def test_kip227_a_followers_session_evicts_a_consumers():
    c = cache(slots=1)
    consumer = open_session(c, 0, 1, 2, now=0)
    assert open_session(c, 0, now=1) == 0                              # a consumer's may not
    follower = open_session(c, 0, now=1, follower=True)
    assert follower and set(c.sessions) == {follower}
    assert consumer not in c.sessions and c.sessions[follower].privileged
    # A follower's young session is evicted by nobody.
    assert open_session(c, 0, 1, 2, 3, now=2, follower=True) == 0


# ---- through the Fetch handler ------------------------------------------------------------

def _partitions(f) -> list[tuple[int, int, int]]:
    return [(int(p.partition_index), int(p.error_code), len(p.records or b"")) for t in f.responses
            for p in t.partitions]


def test_kip227_incremental_fetches_answer_what_changed(tmp_path):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 3)
        await ctx.produce(9, {"t": {0: batch(2)}})
        f = await ctx.fetch(V, {"t": [(0, 0), (1, 0), (2, 0)]}, session_epoch=0)
        sid = int(f.session_id)
        assert sid > 0 and [(i, e) for i, e, _ in _partitions(f)] == [(0, 0), (1, 0), (2, 0)]
        # The client moved on to offset 2: nothing new anywhere, an empty answer.
        f = await ctx.fetch(V, {"t": [(0, 2)]}, session_id=sid, session_epoch=1)
        assert (int(f.error_code), int(f.session_id), f.responses) == (0, sid, ())
        # Records on partition 1: only it is answered (its offset from the session).
        await ctx.produce(9, {"t": {1: batch(3)}})
        f = await ctx.fetch(V, {}, session_id=sid, session_epoch=2)
        assert [(i, e) for i, e, _ in _partitions(f)] == [(1, 0)] and _partitions(f)[0][2] > 0
        # Forgetting partition 1: the answer no longer has it.
        f = await ctx.fetch(V, {}, session_id=sid, session_epoch=3, forgotten={"t": [1]})
        assert f.responses == ()
        # The same epoch again, and a session that is not there.
        f = await ctx.fetch(V, {}, session_id=sid, session_epoch=3)
        assert (int(f.error_code), int(f.session_id)) == (BAD_EPOCH, 0)
        f = await ctx.fetch(V, {}, session_id=sid + 1, session_epoch=1)
        assert (int(f.error_code), int(f.session_id)) == (NOT_FOUND, 0)
        # Closing it: a sessionless full answer.
        f = await ctx.fetch(V, {"t": [(0, 0)]}, session_id=sid, session_epoch=-1)
        assert int(f.session_id) == 0 and [(i, e) for i, e, _ in _partitions(f)] == [(0, 0)]
        f = await ctx.fetch(V, {}, session_id=sid, session_epoch=4)
        assert int(f.error_code) == NOT_FOUND

    run(tmp_path, scenario)


def test_kip227_sessions_by_topic_id_from_v13(tmp_path):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 2)
        f = await ctx.fetch(13, {"t": [(0, 0), (1, 0)]}, session_epoch=0)
        sid = int(f.session_id)
        assert sid > 0
        await ctx.produce(9, {"t": {0: batch(1)}})
        f = await ctx.fetch(13, {}, session_id=sid, session_epoch=1)
        assert f.responses[0].topic_id == ctx.dp.topic_ids()["t"] and _partitions(f)[0][:2] == (0, 0)
        f = await ctx.fetch(13, {}, session_id=sid, session_epoch=2, forgotten={"t": [0]})
        assert f.responses == ()
        f = await ctx.fetch(12, {}, session_id=sid, session_epoch=3)
        assert int(f.error_code) == TOPIC_ID_ERROR

    run(tmp_path, scenario)


def test_kip227_an_isolation_level_kafka_cannot_read_fails_a_fetch_that_reads(tmp_path):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 1)
        # Nothing to read (an unknown topic): answered as usual.
        f = await ctx.fetch(V, {"nope": [(0, 0)]}, isolation=-128)
        assert int(f.error_code) == 0 and _partitions(f) == [(0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0)]
        # A partition to read: UNKNOWN_SERVER_ERROR, every partition with it before v13, none after.
        f = await ctx.fetch(V, {"t": [(0, 0)], "nope": [(1, 0)]}, isolation=2, session_id=9)
        assert (int(f.error_code), int(f.session_id)) == (ErrorCode.UNKNOWN_SERVER_ERROR, 9)
        assert _partitions(f) == [(0, -1, 0), (1, -1, 0)]
        f = await ctx.fetch(13, {"t": [(0, 0)]}, isolation=-1)
        assert int(f.error_code) == ErrorCode.UNKNOWN_SERVER_ERROR and f.responses == ()
        # A full fetch that fails opens no session; an incremental one has moved its epoch on.
        f = await ctx.fetch(V, {"t": [(0, 0)]}, session_epoch=0)
        sid = int(f.session_id)
        f = await ctx.fetch(V, {}, session_id=sid, session_epoch=1, isolation=5)
        assert (int(f.error_code), int(f.session_id)) == (ErrorCode.UNKNOWN_SERVER_ERROR, sid)
        f = await ctx.fetch(V, {}, session_id=sid, session_epoch=2)
        assert int(f.error_code) == 0

    run(tmp_path, scenario)


def test_kip227_a_partition_asked_for_twice_is_answered_once(tmp_path):
    async def scenario(ctx: DataCtx):
        ctx.data.create_topic("t", 1)
        topic_id = ctx.dp.topic_ids()["t"]
        assert isinstance(topic_id, uuid.UUID)
        req = ctx.fetch_request(13, {"t": [(0, 0), (0, 5)]}, session_epoch=0)
        f = await ctx.call(1, 13, req)
        assert _partitions(f) == [(0, 0, 0)]

    run(tmp_path, scenario)
