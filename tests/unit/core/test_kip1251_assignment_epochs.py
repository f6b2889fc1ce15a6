"""KIP-1251: assignment epochs fence consumer-group commits.

Each partition a consumer-protocol member holds keeps the epoch at which it was assigned;
OffsetCommit and TxnOffsetCommit pass when assignment epoch <= client epoch <= member epoch.
Scenarios on the manual clock of GroupContext / TxnContext (no sleeping).
"""

from __future__ import annotations

import json

import pytest

from kgroup.core.record_codec import RecordDecodeError, decode, encode
from kgroup.core.records import ConsumerCurrentRecord, ConsumerCurrentValue, MemberState
from kgroup.error_codes import ErrorCode as E
from tests.unit.core.txnctx import TxnContext

T = "id-t"


def held(ctx, member: str) -> set[int]:
    return {p for _, ps in ctx.cgroup().members[member].current.assigned for p in ps}


def race(ctx) -> tuple[set[int], set[int]]:
    """a joins alone (epoch 2, all of t); b joins (group epoch 3): a gives half back and moves
    to epoch 3 keeping the rest (assigned at 2); b gets the released half at epoch 3.
    Returns (a's partitions, b's partitions)."""
    assert ctx.cg_heartbeat("a", 0, topics=["t"]).response.member_epoch == 2
    assert held(ctx, "a") == {0, 1, 2, 3}
    assert ctx.cg_heartbeat("b", 0, topics=["t"]).response.member_epoch == 3
    r = ctx.cg_heartbeat("a", 2)                        # told to revoke, still at epoch 2
    assert r.response.member_epoch == 2
    kept = held(ctx, "a")
    assert ctx.cgroup().members["a"].state is MemberState.UNREVOKED_PARTITIONS
    assert ctx.cg_heartbeat("a", 2, owned=((T, tuple(sorted(kept))),)).response.member_epoch == 3
    assert ctx.cg_heartbeat("b", 3).response.member_epoch == 3
    return kept, held(ctx, "b")


def commit(ctx, member: str, epoch: int, *partitions: int, metadata: str = ""):
    done = ctx.commit("cg", member, epoch, {("t", p): 10 + p for p in partitions}, version=9, metadata=metadata)
    return done.raised if done.raised is not None else {e.partition: e.error for e in done.response.partitions}


def test_partitions_record_the_epoch_they_were_assigned_at():
    ctx = TxnContext()
    kept, given = race(ctx)
    assert len(kept) == 2 and given == {0, 1, 2, 3} - kept
    a = ctx.cgroup().members["a"].current
    b = ctx.cgroup().members["b"].current
    assert a.member_epoch == 3 and a.assignment_epochs == tuple((T, p, 2) for p in sorted(kept))
    assert b.member_epoch == 3 and b.assignment_epochs == tuple((T, p, 3) for p in sorted(given))


def test_a_commit_racing_an_epoch_bump_lands_for_partitions_held_before_it():
    ctx = TxnContext()
    kept, given = race(ctx)
    # a's commit was sent at epoch 2, before it heard of epoch 3: its partitions were a's then.
    assert commit(ctx, "a", 2, *kept) == {p: E.NONE for p in kept}
    assert ctx.committed("cg") == {("t", p): 10 + p for p in kept}


def test_a_commit_fails_for_a_partition_assigned_after_the_epoch_it_names():
    ctx = TxnContext()
    kept, given = race(ctx)
    # b holds its partitions since epoch 3: a commit at 2 is a zombie's, for all of the request.
    assert commit(ctx, "b", 2, *given) is E.STALE_MEMBER_EPOCH
    # a no longer holds what it gave back; nor may it mix one in with what it holds.
    assert commit(ctx, "a", 2, *given) is E.STALE_MEMBER_EPOCH
    assert commit(ctx, "a", 2, min(kept), min(given)) is E.STALE_MEMBER_EPOCH
    # Ahead of the member's epoch, and below every assignment epoch.
    assert commit(ctx, "a", 4, *kept) is E.STALE_MEMBER_EPOCH
    assert commit(ctx, "a", 1, *kept) is E.STALE_MEMBER_EPOCH
    assert ctx.committed("cg") == {}


def test_partitions_pending_revocation_keep_their_epoch():
    ctx = TxnContext()
    ctx.cg_heartbeat("a", 0, topics=["t"])
    ctx.cg_heartbeat("b", 0, topics=["t"])
    ctx.cg_heartbeat("a", 2)
    a = ctx.cgroup().members["a"].current
    assert a.state is MemberState.UNREVOKED_PARTITIONS and a.pending_revocation
    assert {e for _, _, e in a.assignment_epochs} == {2}
    revoking = [p for _, ps in a.pending_revocation for p in ps]
    assert commit(ctx, "a", 2, *revoking) == {p: E.NONE for p in revoking}


def test_a_partition_with_metadata_too_large_is_not_checked():
    ctx = TxnContext()
    kept, given = race(ctx)
    big = "x" * (ctx.config.offset_metadata_max_bytes + 1)
    assert commit(ctx, "a", 2, min(given), metadata=big) == {min(given): E.OFFSET_METADATA_TOO_LARGE}


def test_txn_offset_commit_follows_the_same_rule():
    ctx = TxnContext()
    kept, given = race(ctx)
    pid, epoch = ctx.producer()
    ctx.add_offsets("tx", pid, epoch, "cg")
    ok = ctx.txn_commit("cg", "tx", pid, epoch, {("t", p): 7 for p in kept}, generation=2, member="a")
    assert ok.raised is None and {e.error for e in ok.response.partitions} == {E.NONE}
    # Before TxnOffsetCommit v6 a transactional producer knows only ILLEGAL_GENERATION.
    assert ctx.txn_commit_error("cg", "tx", pid, epoch, {("t", min(given)): 7}, generation=2,
                                member="b") is E.ILLEGAL_GENERATION
    # A producer that sends no group metadata (TxnOffsetCommit v0-v2) is not fenced, as in Kafka.
    assert ctx.txn_commit_error("cg", "tx", pid, epoch, {("t", min(given)): 8}) is E.NONE


def test_a_static_member_stepping_out_keeps_its_partitions_at_epoch_zero():
    ctx = TxnContext()
    ctx.cg_heartbeat("a", 0, topics=["t"], instance="i")
    assert ctx.cg_heartbeat("a", -2, instance="i").response.member_epoch == -2
    left = ctx.cgroup().members["a"].current
    assert {e for _, _, e in left.assignment_epochs} == {0} and len(left.assignment_epochs) == 4
    back = ctx.cg_heartbeat("a2", 0, topics=["t"], instance="i").response
    assert back.error is E.NONE and back.member_epoch >= 2
    # Its next incarnation may commit for what it still holds with an older epoch.
    assert commit(ctx, "a2", 1, 0, 1, 2, 3) == {p: E.NONE for p in range(4)}


def reloaded(ctx: TxnContext) -> TxnContext:
    """The shard rebuilt from its log after going through the record codec (a restart)."""
    ctx.log[:] = [decode(encode(r)) for r in ctx.log]
    return ctx.reloaded()


def test_assignment_epochs_survive_a_restart_and_a_snapshot():
    ctx = TxnContext()
    kept, given = race(ctx)
    again = reloaded(ctx)
    assert again.cgroup().members["a"].current == ctx.cgroup().members["a"].current
    assert commit(again, "a", 2, *kept) == {p: E.NONE for p in kept}
    assert commit(again, "b", 2, *given) is E.STALE_MEMBER_EPOCH
    again.compact()                                    # what the broker's snapshots write
    third = reloaded(again)
    assert third.cgroup().members["a"].current == ctx.cgroup().members["a"].current
    assert third.cgroup().members["b"].current == ctx.cgroup().members["b"].current
    assert commit(third, "a", 2, *kept) == {p: E.NONE for p in kept}


def test_a_record_written_before_kip1251_replays_at_the_members_epoch():
    # Our log before KIP-1251 held five fields; Kafka reads its own old records alike: every
    # partition counts as assigned at the member epoch of the record.
    new = encode(ConsumerCurrentRecord("cg", "a", ConsumerCurrentValue(
        5, 4, MemberState.STABLE, ((T, (0, 1)),), (), ((T, 0, 3), (T, 1, 5)))))
    head, value = new[:new.index(b"[")], json.loads(new[new.index(b"["):])
    assert len(value) == 6
    old = head + json.dumps(value[:5], separators=(",", ":")).encode()
    record = decode(old)
    assert record.value.assignment_epochs is None and record.value.assigned == ((T, (0, 1)),)

    ctx = TxnContext()
    ctx.cg_heartbeat("a", 0, topics=["t"])
    ctx.cg_heartbeat("b", 0, topics=["t"])
    ctx.cg_heartbeat("a", 2, owned=((T, tuple(sorted(held(ctx, "a")))),))
    a = ctx.cgroup().members["a"].current
    # Rewrite a's current assignment as an old-format record, then restart.
    ctx.log[:] = [r for r in ctx.log if not (type(r) is ConsumerCurrentRecord and r.member_id == "a")]
    strip = ConsumerCurrentValue(a.member_epoch, a.previous_member_epoch, a.state, a.assigned, a.pending_revocation)
    ctx.log.append(ConsumerCurrentRecord("cg", "a", strip))
    again = reloaded(ctx)
    mine = sorted(held(again, "a"))
    assert again.cgroup().members["a"].current.assignment_epochs is None
    assert commit(again, "a", a.member_epoch - 1, *mine) is E.STALE_MEMBER_EPOCH
    assert commit(again, "a", a.member_epoch, *mine) == {p: E.NONE for p in mine}


def test_a_classic_member_in_a_consumer_group_is_fenced_the_same_way_with_its_own_codes():
    # Online migration brings classic members over with their partitions at epoch =
    # generation; they commit with OffsetCommit below v9 and hear ILLEGAL_GENERATION.
    from tests.unit.core.test_migration_scenarios import classic_stable_group

    ctx = TxnContext()
    a, b = classic_stable_group(ctx)
    generation = ctx.group("cg").generation
    assert ctx.cg_heartbeat("new", 0, topics=["t"]).error is E.NONE
    member = ctx.cgroup().members[a]
    assert member.meta.is_classic and member.current.assignment_epochs == ((T, 0, generation), (T, 1, generation))
    ok = ctx.commit("cg", a, generation, {("t", 0): 3}, version=8)
    assert ok.raised is None and ok.response.partitions[0].error is E.NONE
    assert ctx.commit("cg", a, generation + 1, {("t", 0): 4}, version=8).error is E.ILLEGAL_GENERATION
    assert ctx.commit("cg", a, generation - 1, {("t", 0): 4}, version=8).error is E.ILLEGAL_GENERATION


def test_the_record_carries_the_epochs_in_kafkas_layout_and_refuses_mismatched_ones():
    value = ConsumerCurrentValue(7, 6, MemberState.UNREVOKED_PARTITIONS, (("id-a", (0, 2)), ("id-b", (1,))),
                                 (("id-a", (5,)),), (("id-a", 0, 3), ("id-a", 2, 7), ("id-a", 5, 3), ("id-b", 1, 6)))
    payload = encode(ConsumerCurrentRecord("cg", "m", value))
    assert decode(payload).value == value
    raw = json.loads(payload[payload.index(b"["):])
    assert raw[5] == [["id-a", [0, 2, 5], [3, 7, 3]], ["id-b", [1], [6]]]
    head = payload[:payload.index(b"[")]
    raw[5][0][2] = [3, 7]
    with pytest.raises(RecordDecodeError):
        decode(head + json.dumps(raw).encode())
