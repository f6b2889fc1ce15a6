"""Hypothesis properties of the transaction coordinator on one shard, with a manual clock.

Random sequences of InitProducerId (new instances, fencing), AddPartitionsToTxn,
AddOffsetsToTxn, TxnOffsetCommit, EndTxn (commit and abort, retried or not), markers
written (or not yet), clock advances past timeouts, and crash-replays (a new shard from the
log). After every step:

- replaying the log from the start gives exactly the live stored state;
- a request that raised changed nothing and wrote nothing;
- a transaction in flight holds no more than it was given, and one that is complete holds
  nothing; only an Ongoing transaction of the current epoch may write (KIP-890's check);
- every EndTxn that was answered OK for a commit ends with its offsets visible once its
  markers are written (no answered commit is lost, even across a crash-replay).
"""

from __future__ import annotations

import copy

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.errors import ErrorCode as E
from kgroup.core.transactions.txn_state import TxnState as T

from tests.unit.core.txnctx import TxnContext

IDS = st.sampled_from(["a", "b"])
steps = st.lists(st.one_of(
    st.tuples(st.just("init"), IDS),
    st.tuples(st.just("add"), IDS, st.sampled_from([("t", 0), ("t", 1), ("u", 0)])),
    st.tuples(st.just("offsets"), IDS, st.integers(0, 100)),
    st.tuples(st.just("end"), IDS, st.booleans()),
    st.tuples(st.just("markers")),
    st.tuples(st.just("advance"), st.integers(1, 7_000)),
    st.tuples(st.just("crash")),
), min_size=5, max_size=40)


def replayed(ctx: TxnContext) -> GroupCoordinatorShard:
    fresh = GroupCoordinatorShard()
    for record in ctx.log:
        fresh.replay(record)
    return fresh


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps)
def test_replay_gives_the_live_state_and_no_answered_commit_is_lost(script):
    ctx = TxnContext()
    producers: dict[str, tuple[int, int]] = {}
    offered: dict[str, int] = {}             # transactional id -> offset its open transaction commits
    answered: dict[str, int] = {}            # transactional id -> offset of its last answered commit
    for step in [("init", "a"), ("init", "b"), *script]:
        for tid in list(offered):            # a transaction that ended took its offer with it
            state = ctx.state(tid)
            if state is None or state.state is not T.ONGOING:
                del offered[tid]
        before, logged = copy.deepcopy(ctx.coord.stored), len(ctx.log)
        kind = step[0]
        done = None
        if kind == "init":
            done = ctx.init(step[1], timeout=5_000)
            if done.error is E.NONE:
                producers[step[1]] = (done.response.producer_id, done.response.producer_epoch)
        elif kind in ("add", "offsets", "end") and step[1] in producers:
            tid = step[1]
            pid, epoch = producers[tid]
            if kind == "add":
                done = ctx.add(tid, pid, epoch, step[2])
            elif kind == "offsets":
                done = ctx.add_offsets(tid, pid, epoch, f"group-{tid}")
                if done.error is E.NONE:
                    done = ctx.txn_commit(f"group-{tid}", tid, pid, epoch, {("in", 0): step[2]})
                    if done.raised is None:
                        offered[tid] = step[2]
            else:
                ongoing = ctx.state(tid).state is T.ONGOING
                done = ctx.end(tid, pid, epoch, commit=step[2])
                if ongoing and step[2] and done.raised is None and tid in offered:
                    answered[tid] = offered.pop(tid)
        elif kind == "markers":
            ctx.write_markers()
        elif kind == "advance":
            ctx.advance(step[1])
        elif kind == "crash":
            ctx = ctx.reloaded()
        if done is not None and done.raised is not None:
            assert ctx.coord.stored == before and len(ctx.log) == logged, step
        # Invariants.
        fresh = replayed(ctx)
        assert fresh.stored.transactions == ctx.coord.stored.transactions
        assert fresh.stored.pending_offsets == ctx.coord.stored.pending_offsets
        assert fresh.stored.offsets == ctx.coord.stored.offsets
        for tid, value in ctx.coord.stored.transactions.items():
            if value.state in (T.COMPLETE_COMMIT, T.COMPLETE_ABORT, T.EMPTY):
                assert value.partitions == () and value.groups == ()
            allowed = ctx.coord.verify_txn(tid, value.producer_id, value.producer_epoch)
            assert (allowed is E.NONE) == (value.state is T.ONGOING)
            if value.producer_epoch > 0:
                assert ctx.coord.verify_txn(tid, value.producer_id, value.producer_epoch - 1) is not E.NONE
    # The end: every marker written; each id's last answered commit is what the group shows.
    ctx.write_markers()
    for tid, offset in answered.items():
        assert ctx.committed(f"group-{tid}").get(("in", 0)) == offset, tid
