"""Transactions (KIP-98/447/890), asked with exact request sequences (the v3 client flow:
AddPartitionsToTxn before producing)."""

from __future__ import annotations

from typing import Any

from kgroup.conformance import observe
from kgroup.conformance.messages import request
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.scenarios.classic_raw import stable_member
from kgroup.conformance.scenarios.offsets_raw import commit, fetch
from kgroup.conformance.target import Target

READ_UNCOMMITTED, READ_COMMITTED = 0, 1
# COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, CONCURRENT_TRANSACTIONS
RETRIABLE = (14, 15, 16, 51)


class TxnProducer:
    """A transactional producer on a raw connection: its id, epoch and next sequence."""

    def __init__(self, t: Target, raw, txn_id: str, name: str = "producer") -> None:
        self.t, self.raw, self.txn_id, self.name = t, raw, txn_id, name
        self.pid, self.epoch, self.seq = -1, -1, 0

    async def init(self, label: str | None = None) -> Any:
        """InitProducerId, retried (unrecorded) while the coordinator loads or an earlier
        transaction is still completing, as every client retries it."""
        req = request("InitProducerId", 4, transactional_id=self.txn_id, transaction_timeout_ms=60_000,
                      producer_id=-1, producer_epoch=-1)

        async def answered() -> Any:
            r = await self.raw.call(req)
            return None if int(r.error_code) in RETRIABLE else r
        r = await observe.until(answered, f"InitProducerId for {self.txn_id}")
        self.t.add(f"{label or self.name + ' InitProducerId'} (InitProducerId v4)", r)
        self.pid, self.epoch, self.seq = int(r.producer_id), int(r.producer_epoch), 0
        return r

    async def add_partitions(self, topic: str, partitions: list[int], label: str) -> Any:
        return await self.t.ask(self.raw, label, request(
            "AddPartitionsToTxn", 3, v3_and_below_transactional_id=self.txn_id,
            v3_and_below_producer_id=self.pid, v3_and_below_producer_epoch=self.epoch,
            v3_and_below_topics=[{"name": topic, "partitions": partitions}]))

    async def produce(self, topic: str, values: list[bytes], label: str, *, epoch: int | None = None) -> Any:
        r = await observe.produce(self.raw, topic, 0, values, transactional_id=self.txn_id,
                                  producer_id=self.pid, producer_epoch=self.epoch if epoch is None else epoch,
                                  base_sequence=self.seq, transactional=True)
        self.t.add(f"{label} (Produce v9)", r)
        if int(r.error_code) == 0:
            self.seq += len(values)
        return r

    async def add_offsets(self, group: str, label: str) -> Any:
        return await self.t.ask(self.raw, label, request(
            "AddOffsetsToTxn", 3, transactional_id=self.txn_id, producer_id=self.pid, producer_epoch=self.epoch,
            group_id=group))

    async def commit_offsets(self, group: str, offsets: dict[tuple[str, int], int], label: str, *,
                             generation: int = -1, member: str = "", instance: str | None = None) -> Any:
        topics: dict[str, list] = {}
        for (topic, partition), offset in offsets.items():
            topics.setdefault(topic, []).append({"partition_index": partition, "committed_offset": offset,
                                                 "committed_leader_epoch": -1, "committed_metadata": ""})
        return await self.t.ask(self.raw, label, request(
            "TxnOffsetCommit", 3, transactional_id=self.txn_id, group_id=group, producer_id=self.pid,
            producer_epoch=self.epoch, generation_id=generation, member_id=member, group_instance_id=instance,
            topics=[{"name": t, "partitions": ps} for t, ps in topics.items()]))

    async def end(self, commit: bool, label: str) -> Any:
        return await self.t.ask(self.raw, label, request(
            "EndTxn", 3, transactional_id=self.txn_id, producer_id=self.pid, producer_epoch=self.epoch,
            committed=commit))


async def txn_ready(t: Target, partitions: int = 1) -> tuple[Any, str, str]:
    raw = await t.raw()
    txn_id, topic = t.names.group("txn"), t.names.topic()
    await observe.coordinator(raw, txn_id, key_type=1)
    await observe.create_topic(raw, topic, partitions)
    return raw, txn_id, topic


async def read(t: Target, raw, topic: str, label: str) -> None:
    """What each isolation level reads, and the offsets ListOffsets gives (end and LSO)."""
    for level, name in ((READ_UNCOMMITTED, "read_uncommitted"), (READ_COMMITTED, "read_committed")):
        got = await observe.read_all(raw, topic, isolation_level=level)
        got["aborted_transactions"] = [{"producer_id": pid, "first_offset": first}
                                       for pid, first in got["aborted_transactions"]]
        t.add(f"{label}: {name} read", got)
        r = await raw.call(request("ListOffsets", 7, replica_id=-1, isolation_level=level, topics=[
            {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]))
        t.add(f"{label}: {name} latest offset", r.topics[0].partitions[0])


async def state(raw, txn_id: str) -> Any:
    """The transaction's listing (ListTransactions): DescribeTransactions is not used once no
    transaction is open, as Kafka then answers TransactionStartTimeMs -1, which kio 0.6.5
    cannot read."""
    r = await raw.call(request("ListTransactions", 1, state_filters=[], producer_id_filters=[], duration_filter=-1))
    mine = [s for s in r.transaction_states if s.transactional_id == txn_id]
    return {"error_code": r.error_code, "transaction_states": mine}


async def until_settled(raw, txn_id: str) -> None:
    """Wait until the transaction is no longer PrepareCommit/PrepareAbort (markers written)."""
    async def settled() -> bool:
        listed = (await state(raw, txn_id))["transaction_states"]
        return bool(listed) and listed[0].transaction_state not in ("PrepareCommit", "PrepareAbort")
    await observe.until(settled, f"transaction {txn_id} settled")


@scenario("transactions", "commit: records visible to read_committed after the marker",
          rule="records produced in a transaction are invisible to read_committed consumers until EndTxn "
               "commits (the last stable offset stays at the transaction's first offset); after the commit "
               "marker they are read, followed by the control batch")
async def txn_commit(t: Target) -> None:
    raw, txn_id, topic = await txn_ready(t)
    p = TxnProducer(t, raw, txn_id)
    await p.init()
    await p.add_partitions(topic, [0], "add the partition")
    await p.produce(topic, [b"a", b"b"], "produce")
    await read(t, raw, topic, "open")
    t.add("describe the open transaction", await raw.call(request("DescribeTransactions", 0,
                                                                 transactional_ids=[txn_id])))
    await p.end(True, "commit")
    await until_settled(raw, txn_id)
    await read(t, raw, topic, "committed")
    t.add("list", await state(raw, txn_id))


@scenario("transactions", "abort: records never visible to read_committed",
          rule="an aborted transaction's records are skipped by read_committed consumers (the fetch lists the "
               "aborted transaction) and stay visible to read_uncommitted ones")
async def txn_abort(t: Target) -> None:
    raw, txn_id, topic = await txn_ready(t)
    p = TxnProducer(t, raw, txn_id)
    await p.init()
    await p.add_partitions(topic, [0], "add the partition")
    await p.produce(topic, [b"x"], "produce")
    await p.end(False, "abort")
    await until_settled(raw, txn_id)
    await read(t, raw, topic, "aborted")
    await p.add_partitions(topic, [0], "add the partition again")
    await p.produce(topic, [b"y"], "produce again")
    await p.end(True, "commit")
    await until_settled(raw, txn_id)
    await read(t, raw, topic, "then committed")


@scenario("transactions", "zombie fencing: a new InitProducerId fences the old epoch",
          rule="InitProducerId for a transactional id in use bumps the epoch (aborting what was open); the "
               "old producer's writes and EndTxn are fenced (PRODUCER_FENCED / INVALID_PRODUCER_EPOCH)")
async def txn_zombie_fencing(t: Target) -> None:
    raw, txn_id, topic = await txn_ready(t)
    old = TxnProducer(t, raw, txn_id, "old producer")
    await old.init()
    await old.add_partitions(topic, [0], "old adds the partition")
    await old.produce(topic, [b"zombie"], "old produces")
    new = TxnProducer(t, await t.raw("raw-new"), txn_id, "new producer")
    await new.init()
    await until_settled(raw, txn_id)
    await old.produce(topic, [b"late"], "old produces again")
    await old.add_partitions(topic, [0], "old adds the partition again")
    await old.end(True, "old commits")
    await new.add_partitions(topic, [0], "new adds the partition")
    await new.produce(topic, [b"fresh"], "new produces")
    await new.end(True, "new commits")
    await until_settled(raw, txn_id)
    await read(t, raw, topic, "after")


@scenario("transactions", "TxnOffsetCommit: offsets of a transaction, fenced by the group",
          rule="offsets committed in a transaction are pending (OffsetFetch with RequireStable answers "
               "UNSTABLE_OFFSET_COMMIT) until the commit marker; a wrong generation or member is fenced "
               "(KIP-447); an abort drops them")
async def txn_offset_commit(t: Target) -> None:
    raw, txn_id, topic = await txn_ready(t)
    group = t.names.group()
    await observe.coordinator(raw, group)
    member, gen = await stable_member(t, raw, group)
    p = TxnProducer(t, raw, txn_id)
    await p.init()
    await p.add_offsets(group, "add the group's offsets")
    await p.commit_offsets(group, {(topic, 0): 5}, "commit offsets as the member", generation=gen, member=member)
    await p.commit_offsets(group, {(topic, 0): 6}, "commit with a wrong generation", generation=gen + 1,
                           member=member)
    await p.commit_offsets(group, {(topic, 0): 7}, "commit as an unknown member", generation=gen, member="nobody")
    await t.ask(raw, "fetch, require stable", fetch(8, group, {topic: [0]}, require_stable=True))
    await t.ask(raw, "fetch", fetch(8, group, {topic: [0]}))
    await p.end(True, "commit")
    await until_settled(raw, txn_id)
    await t.ask(raw, "fetch after the commit, require stable", fetch(8, group, {topic: [0]}, require_stable=True))
    await p.add_offsets(group, "add the group's offsets again")
    await p.commit_offsets(group, {(topic, 0): 9}, "commit offsets", generation=gen, member=member)
    await p.end(False, "abort")
    await until_settled(raw, txn_id)
    await t.ask(raw, "fetch after the abort", fetch(8, group, {topic: [0]}, require_stable=True))


@scenario("transactions", "requests out of order and unknown transactional ids",
          rule="EndTxn with no transaction open, AddPartitionsToTxn with a wrong producer id, producing to a "
               "partition not in the transaction, DescribeTransactions of an unknown id: each gets Kafka's code")
async def txn_invalid(t: Target) -> None:
    raw, txn_id, topic = await txn_ready(t)
    p = TxnProducer(t, raw, txn_id)
    await p.init()
    await p.end(True, "commit with nothing open")
    real = p.pid
    p.pid = real + 1000
    await p.add_partitions(topic, [0], "add with a wrong producer id")
    p.pid = real
    await p.produce(topic, [b"z"], "produce without adding the partition")
    await p.add_partitions(topic, [7], "add a partition that does not exist")
    # (DescribeTransactions of an unknown id is left out: Kafka answers TransactionStartTimeMs
    # -1, which kio 0.6.5 cannot read — see docs/conformance.md.)
    t.add("list", await state(raw, txn_id))


@scenario("transactions", "KIP-890: a later batch waits for a lower sequence that failed verification",
          rule="a transaction's first batch in a partition that fails verification leaves its sequence "
               "behind: a later batch of the same producer and epoch, verified, is OUT_OF_ORDER_SEQUENCE_NUMBER "
               "until the lower one is written; then both are taken in order")
async def txn_verification_keeps_the_lowest_sequence(t: Target) -> None:
    raw, txn_id, topic = await txn_ready(t)
    p = TxnProducer(t, raw, txn_id)
    await p.init()
    await p.produce(topic, [b"a", b"b"], "sequences 0-1 before the partition is added (refused)")
    await p.add_partitions(topic, [0], "add the partition")
    p.seq = 2
    await p.produce(topic, [b"c"], "sequence 2 overtaking 0-1")
    p.seq = 0
    await p.produce(topic, [b"a", b"b"], "sequences 0-1 again")
    await p.produce(topic, [b"c"], "sequence 2 again")
    await p.end(True, "commit")
    await until_settled(raw, txn_id)
    await read(t, raw, topic, "committed")
