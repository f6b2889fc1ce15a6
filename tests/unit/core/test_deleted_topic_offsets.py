"""A deleted topic takes its committed offsets with it (core/offsets.py, `topics_deleted`),
as Kafka 4.4's coordinator deletes the offsets of deleted partitions: a topic created again
under the same name (a new topic id) starts with none, by name or by id. Asked of Kafka 4.4
itself in the differential scenario offsets_topic_ids."""

from __future__ import annotations

from kgroup.core.errors import ErrorCode as E
from kgroup.core.offsets import deleted_topics
from kgroup.core.records import OffsetCommitRecord

from tests.unit.core.txnctx import TxnContext

TOPICS = {"t": ("id-t", 4), "u": ("id-u", 2)}


def test_a_topic_is_deleted_when_its_name_is_gone_or_belongs_to_another_id():
    assert deleted_topics(TOPICS, {"t": ("id-t", 8)}) == {"u"}                 # grown: kept
    assert deleted_topics(TOPICS, {"t": ("id-t2", 4), "u": ("id-u", 2)}) == {"t"}
    assert deleted_topics(TOPICS, dict(TOPICS)) == frozenset()


def test_deleting_a_topic_tombstones_its_offsets_in_every_group_and_keeps_the_others():
    ctx = TxnContext()
    ctx.commit("g", "", -1, {("t", 0): 5, ("t", 3): 6, ("u", 1): 7})
    ctx.commit("h", "", -1, {("t", 1): 1})
    before = len(ctx.log)
    ctx.apply(ctx.coord.update_topics({"u": ("id-u", 2)}, ctx.now))
    assert ctx.committed("g") == {("u", 1): 7}
    assert ctx.committed("h") == {}
    tombstones = [r for r in ctx.log[before:] if isinstance(r, OffsetCommitRecord)]
    assert [(r.group_id, r.topic, r.partition, r.value) for r in tombstones] == [
        ("g", "t", 0, None), ("g", "t", 3, None), ("h", "t", 1, None)]
    # The groups stay (Kafka drops an Empty one without offsets at its next retention check).
    assert {g.group_id for g in ctx.list_groups()} >= {"g", "h"}


def test_a_topic_created_again_under_the_same_name_does_not_inherit_the_old_offsets():
    ctx = TxnContext()
    ctx.commit("g", "", -1, {("t", 0): 5})
    ctx.apply(ctx.coord.update_topics({"t": ("id-t-again", 4), "u": ("id-u", 2)}, ctx.now))
    assert ctx.committed("g") == {}
    assert ctx.commit("g", "", -1, {("t", 0): 9}).response.partitions[0].error is E.NONE
    assert ctx.committed("g") == {("t", 0): 9}


def test_a_topic_change_that_deletes_nothing_writes_nothing():
    ctx = TxnContext()
    ctx.commit("g", "", -1, {("t", 0): 5})
    before = len(ctx.log)
    ctx.apply(ctx.coord.update_topics({"t": ("id-t", 8), "u": ("id-u", 2), "v": ("id-v", 1)}, ctx.now))
    assert not [r for r in ctx.log[before:] if isinstance(r, OffsetCommitRecord)]
    assert ctx.committed("g") == {("t", 0): 5}


def test_offsets_a_transaction_is_committing_for_a_deleted_topic_are_dropped_too():
    ctx = TxnContext()
    pid, epoch = ctx.producer()
    ctx.add_offsets("tx", pid, epoch, "g")
    assert ctx.txn_commit_error("g", "tx", pid, epoch, {("t", 0): 10, ("u", 0): 4}) is E.NONE
    ctx.apply(ctx.coord.update_topics({"u": ("id-u", 2)}, ctx.now))
    ctx.end("tx", pid, epoch, commit=True)
    ctx.write_markers()
    assert ctx.committed("g") == {("u", 0): 4}


def test_the_deletion_survives_a_restart():
    ctx = TxnContext()
    ctx.commit("g", "", -1, {("t", 0): 5, ("u", 0): 1})
    ctx.apply(ctx.coord.update_topics({"u": ("id-u", 2)}, ctx.now))
    again = ctx.reloaded()
    assert again.committed("g") == {("u", 0): 1}
