"""Transactions v2 (KIP-890 part 2, transaction.version 2), asked with exact request
sequences of a TV2 client: no AddPartitionsToTxn (Produce v12 adds the partition), no
AddOffsetsToTxn (TxnOffsetCommit v5 adds the group), EndTxn v5 bumping the epoch."""

from __future__ import annotations

import uuid
from typing import Any

from kgroup.conformance import observe
from kgroup.conformance.messages import request
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.scenarios.classic_raw import stable_member
from kgroup.conformance.scenarios.consumer_raw import joined, member_id
from kgroup.conformance.scenarios.consumer_raw import set_up as consumer_set_up
from kgroup.conformance.scenarios.offsets_raw import fetch
from kgroup.conformance.scenarios.transactions_raw import TxnProducer, read, state, txn_ready, until_settled
from kgroup.conformance.target import Target

TV2_PRODUCE = 12


class Tv2Producer(TxnProducer):
    """A transaction.version 2 producer: its epoch moves on with every EndTxn answer."""

    async def produce2(self, topic: str, values: list[bytes], label: str, *, epoch: int | None = None,
                       version: int = TV2_PRODUCE) -> Any:
        r = await observe.produce(self.raw, topic, 0, values, version=version, transactional_id=self.txn_id,
                                  producer_id=self.pid, producer_epoch=self.epoch if epoch is None else epoch,
                                  base_sequence=self.seq, transactional=True)
        self.t.add(f"{label} (Produce v{version})", r)
        if int(r.error_code) == 0:
            self.seq += len(values)
        return r

    async def end2(self, commit: bool, label: str, *, epoch: int | None = None, follow: bool = True) -> Any:
        r = await self.t.ask(self.raw, label, request(
            "EndTxn", 5, transactional_id=self.txn_id, producer_id=self.pid,
            producer_epoch=self.epoch if epoch is None else epoch, committed=commit))
        if follow and int(r.error_code) == 0:
            # The producer goes on with the id and epoch answered; its sequences start over.
            self.pid, self.epoch, self.seq = int(r.producer_id), int(r.producer_epoch), 0
        return r

    async def commit_offsets5(self, group: str, offsets: dict[tuple[str, int], int], label: str, *,
                              generation: int = -1, member: str = "") -> Any:
        return await self.t.ask(self.raw, label, txn_commit(
            self, 5, group, [(t, p, o) for (t, p), o in offsets.items()], generation=generation, member=member))


async def describe(t: Target, raw, txn_id: str, label: str) -> None:
    """The open transaction's state, epoch and partitions (DescribeTransactions)."""
    r = await raw.call(request("DescribeTransactions", 0, transactional_ids=[txn_id]))
    t.add(label, r)


@scenario("transactions", "transactions v2: Produce v12 adds the partition, EndTxn v5 bumps the epoch",
          rule="KIP-890 part 2: a transaction.version 2 producer's Produce v12 adds the partition to its "
               "transaction itself (no AddPartitionsToTxn); EndTxn v5 bumps the producer epoch on every commit "
               "and abort and answers the new id and epoch; the transaction's records are committed or "
               "aborted as under v1")
async def txn_v2_implicit_add_and_epoch_bump(t: Target) -> None:
    raw, txn_id, topic = await txn_ready(t)
    p = Tv2Producer(t, raw, txn_id)
    await p.init()
    await p.produce2(topic, [b"a", b"b"], "produce, no AddPartitionsToTxn")
    await describe(t, raw, txn_id, "describe the open transaction")
    await p.end2(True, "commit (EndTxn v5)")
    await until_settled(raw, txn_id)
    await p.produce2(topic, [b"c"], "produce at the bumped epoch")
    await p.end2(False, "abort (EndTxn v5)")
    await until_settled(raw, txn_id)
    await read(t, raw, topic, "after a commit and an abort")
    t.add("list", await state(raw, txn_id))


@scenario("transactions", "transactions v2: the old epoch is fenced, a retried EndTxn answered again",
          rule="KIP-890 part 2: after EndTxn v5 bumped the epoch, a retry of it (the old epoch) is answered "
               "again with the new epoch (CONCURRENT_TRANSACTIONS while the markers are written); the old "
               "epoch's writes are fenced (INVALID_PRODUCER_EPOCH) and its EndTxn, once a new transaction is "
               "open, is PRODUCER_FENCED")
async def txn_v2_old_epoch_fenced(t: Target) -> None:
    raw, txn_id, topic = await txn_ready(t)
    p = Tv2Producer(t, raw, txn_id)
    await p.init()
    await p.produce2(topic, [b"a"], "produce")
    old = p.epoch
    await p.end2(True, "commit")
    await until_settled(raw, txn_id)
    await p.end2(True, "retry the commit with the old epoch", epoch=old, follow=False)
    await p.end2(False, "abort with the old epoch", epoch=old, follow=False)
    await p.produce2(topic, [b"late"], "produce with the old epoch", epoch=old)
    await p.produce2(topic, [b"b"], "produce at the new epoch")
    await p.end2(True, "commit with the old epoch, a transaction open", epoch=old, follow=False)
    await p.end2(True, "commit")
    await until_settled(raw, txn_id)
    await read(t, raw, topic, "after")


@scenario("transactions", "transactions v2: EndTxn v5 with nothing open",
          rule="KIP-890 part 2: EndTxn v5 of a producer with no transaction open (after InitProducerId, and "
               "after a completed transaction at the current epoch) answers as Kafka 4.4 does")
async def txn_v2_end_without_transaction(t: Target) -> None:
    raw, txn_id, topic = await txn_ready(t)
    p = Tv2Producer(t, raw, txn_id)
    await p.init()
    await p.end2(True, "commit with nothing open")
    await p.end2(False, "abort with nothing open")
    await until_settled(raw, txn_id)
    await p.produce2(topic, [b"a"], "produce")
    await p.end2(True, "commit")
    await until_settled(raw, txn_id)
    await p.end2(True, "commit again at the new epoch")
    await p.end2(False, "abort at the new epoch")
    await until_settled(raw, txn_id)
    t.add("list", await state(raw, txn_id))


@scenario("transactions", "transactions v2: TxnOffsetCommit v5 adds the group to the transaction",
          rule="KIP-890 part 2: a transaction.version 2 producer sends no AddOffsetsToTxn: TxnOffsetCommit v5 "
               "adds the group to its transaction; the offsets are pending until EndTxn v5 commits them, "
               "and a fenced epoch's commit is refused")
async def txn_v2_offset_commit(t: Target) -> None:
    raw, txn_id, topic = await txn_ready(t)
    group = t.names.group()
    await observe.coordinator(raw, group)
    member, gen = await stable_member(t, raw, group)
    p = Tv2Producer(t, raw, txn_id)
    await p.init()
    await p.produce2(topic, [b"out"], "produce")
    await p.commit_offsets5(group, {(topic, 0): 5}, "commit offsets, no AddOffsetsToTxn", generation=gen,
                            member=member)
    await describe(t, raw, txn_id, "describe the open transaction")
    await t.ask(raw, "fetch, require stable", fetch(8, group, {topic: [0]}, require_stable=True))
    old = p.epoch
    await p.end2(True, "commit")
    await until_settled(raw, txn_id)
    await t.ask(raw, "fetch after the commit", fetch(8, group, {topic: [0]}, require_stable=True))
    p.epoch, fresh = old, p.epoch
    await p.commit_offsets5(group, {(topic, 0): 9}, "commit offsets with the old epoch", generation=gen,
                            member=member)
    p.epoch = fresh
    await p.commit_offsets5(group, {(topic, 0): 7}, "commit offsets at the new epoch", generation=gen,
                            member=member)
    await p.end2(False, "abort")
    await until_settled(raw, txn_id)
    await t.ask(raw, "fetch after the abort", fetch(8, group, {topic: [0]}, require_stable=True))


@scenario("transactions", "transactions v2: Produce v11 does not add partitions",
          rule="KIP-890: only Produce v12+ (a transaction.version 2 client) adds a partition implicitly; a "
               "transactional Produce v11 to a partition not in the transaction is refused (part 1's check)")
async def txn_v2_produce_v11_not_added(t: Target) -> None:
    raw, txn_id, topic = await txn_ready(t)
    p = Tv2Producer(t, raw, txn_id)
    await p.init()
    await p.produce2(topic, [b"a"], "produce without adding the partition", version=11)
    await p.add_partitions(topic, [0], "add the partition")
    await p.produce2(topic, [b"b"], "produce", version=11)
    await p.end(True, "commit (EndTxn v3)")
    await until_settled(raw, txn_id)
    await read(t, raw, topic, "after")


def txn_commit(p: TxnProducer, version: int, group: str, topics: list[tuple[Any, int, int]], *,
               generation: int = -1, member: str = "") -> Any:
    """TxnOffsetCommit at `version`: (topic name, or id from v6; partition; offset) each."""
    key = "topic_id" if version >= 6 else "name"
    return request("TxnOffsetCommit", version, transactional_id=p.txn_id, group_id=group, producer_id=p.pid,
                   producer_epoch=p.epoch, generation_id=generation, member_id=member, group_instance_id=None,
                   topics=[{key: t, "partitions": [{"partition_index": i, "committed_offset": o,
                                                    "committed_leader_epoch": -1, "committed_metadata": ""}]}
                           for t, i, o in topics])


@scenario("transactions", "TxnOffsetCommit v6: topics by id, STALE_MEMBER_EPOCH, GROUP_ID_NOT_FOUND",
          rule="KIP-1319: TxnOffsetCommit v6 names topics by id (an id no topic has is UNKNOWN_TOPIC_ID) and "
               "answers STALE_MEMBER_EPOCH for a consumer-protocol member's wrong epoch and GROUP_ID_NOT_FOUND "
               "for a group that does not exist, where v5 answers ILLEGAL_GENERATION")
async def txn_offset_commit_v6_topic_ids(t: Target) -> None:
    raw, group, topic = await consumer_set_up(t, 2)
    member = member_id(t, "txn-v6")
    epoch, _ = await joined(t, raw, group, member, topic)
    topic_id = await observe.topic_id(raw, topic)
    txn_id = t.names.group("txn-v6")
    await observe.coordinator(raw, txn_id, key_type=1)
    p = Tv2Producer(t, raw, txn_id)
    await p.init()
    await t.ask(raw, "v6 commit as the member, by id", txn_commit(p, 6, group, [(topic_id, 0, 5)],
                                                                  generation=epoch, member=member))
    await t.ask(raw, "v6 commit of a topic id no topic has", txn_commit(
        p, 6, group, [(uuid.UUID(int=7), 0, 5)], generation=epoch, member=member))
    await t.ask(raw, "v6 commit of a partition past the topic's count", txn_commit(
        p, 6, group, [(topic_id, 9, 5)], generation=epoch, member=member))
    await t.ask(raw, "v6 commit with a newer epoch", txn_commit(p, 6, group, [(topic_id, 0, 6)],
                                                                generation=epoch + 1, member=member))
    await t.ask(raw, "v5 commit with a newer epoch", txn_commit(p, 5, group, [(topic, 0, 6)],
                                                                generation=epoch + 1, member=member))
    missing = t.names.group("nobody")
    await observe.coordinator(raw, missing)
    await t.ask(raw, "v6 commit to a group that does not exist", txn_commit(p, 6, missing, [(topic_id, 0, 1)],
                                                                            generation=3, member="m"))
    await t.ask(raw, "v5 commit to a group that does not exist", txn_commit(p, 5, missing, [(topic, 0, 1)],
                                                                            generation=3, member="m"))
    await p.end2(True, "commit")
    await until_settled(raw, txn_id)
    await t.ask(raw, "fetch after the commit", fetch(8, group, {topic: [0, 1]}))


@scenario("transactions", "transactions v2: a timed-out transaction is aborted at a bumped epoch",
          rule="KIP-890 part 2: a transaction.version 2 producer's transaction open past its timeout is aborted "
               "by the coordinator, which bumps the epoch once (fencing the producer); the producer's next "
               "write at the old epoch is fenced, one at the bumped epoch starts a new transaction",
          timeout=90.0)
async def txn_v2_timeout_bumps_the_epoch(t: Target) -> None:
    raw, txn_id, topic = await txn_ready(t)
    p = Tv2Producer(t, raw, txn_id)
    r = await observe.until(lambda: _init(raw, txn_id, 1_000), f"InitProducerId for {txn_id}")
    t.add("InitProducerId with a 1 s timeout", r)
    p.pid, p.epoch, p.seq = int(r.producer_id), int(r.producer_epoch), 0
    await p.produce2(topic, [b"timed out"], "produce")

    async def aborted() -> bool:
        listed = (await state(raw, txn_id))["transaction_states"]
        return bool(listed) and listed[0].transaction_state == "CompleteAbort"
    await observe.until(aborted, "the coordinator aborted the transaction", timeout=60.0)
    t.add("list after the timeout", await state(raw, txn_id))
    old = p.epoch
    await p.produce2(topic, [b"late"], "produce at the old epoch")
    p.epoch, p.seq = old + 1, 0
    await p.produce2(topic, [b"again"], "produce at the epoch bumped once")
    await p.end2(True, "commit at the epoch bumped once")
    await until_settled(raw, txn_id)
    await read(t, raw, topic, "after")


async def _init(raw, txn_id: str, timeout_ms: int) -> Any:
    r = await raw.call(request("InitProducerId", 4, transactional_id=txn_id, transaction_timeout_ms=timeout_ms,
                               producer_id=-1, producer_epoch=-1))
    return None if int(r.error_code) in (14, 15, 16, 51) else r


@scenario("transactions", "transactions v2: a new producer fences the open transaction's",
          rule="KIP-890 part 2: InitProducerId for a transactional id whose transaction.version 2 producer has "
               "a transaction open aborts it at a bumped epoch and hands the new producer the next one; the old "
               "producer's writes are fenced and its EndTxn v5 is PRODUCER_FENCED")
async def txn_v2_new_producer_fences(t: Target) -> None:
    raw, txn_id, topic = await txn_ready(t)
    old = Tv2Producer(t, raw, txn_id, "old producer")
    await old.init()
    await old.produce2(topic, [b"zombie"], "old produces")
    new = Tv2Producer(t, await t.raw("raw-new"), txn_id, "new producer")
    await new.init()
    await until_settled(raw, txn_id)
    await old.produce2(topic, [b"late"], "old produces again")
    await old.end2(True, "old commits", follow=False)
    await new.produce2(topic, [b"fresh"], "new produces")
    await new.end2(True, "new commits")
    await until_settled(raw, txn_id)
    await read(t, raw, topic, "after")
