"""The newest data-API versions (issue 29 item 4): Produce v13 by topic id (KIP-516),
ListOffsets v9–v11's special timestamps on a broker without tiered storage (KIP-1005,
KIP-1075, KIP-1023) and ListTransactions v2's filters (KIP-994 duration, KIP-1152 pattern)."""

from __future__ import annotations

import uuid
from typing import Any

from kgroup.conformance import observe
from kgroup.conformance.messages import request
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.scenarios.transactions_raw import TxnProducer, txn_ready
from kgroup.conformance.target import Target


async def with_topic(t: Target, partitions: int) -> tuple[Any, str]:
    """A raw connection and a new topic of `partitions` partitions."""
    raw = await t.raw()
    topic = t.names.topic()
    await observe.create_topic(raw, topic, partitions)
    return raw, topic


def produce_by_id(parts: list[tuple[uuid.UUID | None, int, list[bytes]]], *, acks: int = -1) -> Any:
    """Produce v13: each (topic id, partition, values) in its own topic entry, in order."""
    return request("Produce", 13, acks=acks, timeout_ms=30_000, transactional_id=None, topic_data=[
        {"topic_id": tid, "partition_data": [{"index": p, "records": observe.batch(values)}]}
        for tid, p, values in parts])


@scenario("data", "Produce v13: topics by id, an unknown id answered UNKNOWN_TOPIC_ID",
          rule="from v13 (KIP-516) Produce names topics by id and answers by id; an id no topic has (the zero "
               "id too) is UNKNOWN_TOPIC_ID for each of its partitions and appends nothing, a partition past "
               "a known topic's count UNKNOWN_TOPIC_OR_PARTITION; the other partitions of the request land")
async def produce_topic_ids(t: Target) -> None:
    raw, topic = await with_topic(t, 2)
    tid = await observe.topic_id(raw, topic)
    nobody = uuid.uuid5(uuid.NAMESPACE_URL, t.names.topic("nobody"))
    await t.ask(raw, "produce by id", produce_by_id([(tid, 0, [b"a", b"b"]), (tid, 1, [b"c"])]))
    await t.ask(raw, "produce to an id no topic has", produce_by_id([(nobody, 0, [b"x"])]))
    await t.ask(raw, "produce to the zero id", produce_by_id([(None, 0, [b"x"])]))
    await t.ask(raw, "a known id past its partitions, an unknown id, a known partition", produce_by_id(
        [(tid, 5, [b"y"]), (nobody, 1, [b"z"]), (tid, 0, [b"d"])]))
    for p in (0, 1):
        t.add(f"partition {p} holds", await observe.read_all(raw, topic, p))


def list_offsets(version: int, topic: str, timestamps: list[int], *, isolation_level: int = 0) -> Any:
    """ListOffsets of partition 0, one request per timestamp (a partition is asked once)."""
    extra = {"timeout": 30_000} if version >= 10 else {}
    return [request("ListOffsets", version, replica_id=-1, isolation_level=isolation_level, topics=[
        {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": ts}]}],
        **extra) for ts in timestamps]


# -1 latest, -2 earliest, -3 max timestamp, -4 earliest local, -5 latest tiered, -6 earliest
# pending upload, -7 and -100 (no such special timestamp), and two times.
SPECIAL = [-1, -2, -3, -4, -5, -6, -7, -100, 1_001, 5_000]


@scenario("data", "ListOffsets v9-v11: the special timestamps without tiered storage",
          rule="ListOffsets' special timestamps on a single broker without tiered storage: -1 latest, -2 "
               "earliest and -4 earliest local (KIP-405) the log start, -3 the largest timestamp (KIP-734); "
               "-5 latest tiered (KIP-1005, v9) and -6 earliest pending upload (KIP-1023, v11) as Kafka answers "
               "them with nothing tiered; v10 adds a timeout (KIP-1075) that changes nothing here; an empty "
               "log and a read_committed request answered as Kafka does")
async def list_offsets_special_timestamps(t: Target) -> None:
    raw, topic = await with_topic(t, 1)
    for req in list_offsets(11, topic, SPECIAL):
        await t.ask(raw, f"empty log: v11 timestamp {req.topics[0].partitions[0].timestamp}", req)
    await observe.produce(raw, topic, 0, [b"a", b"b", b"c"], timestamp=1_000)
    for version in (1, 2, 4, 6, 7, 8, 9, 10, 11):
        for req in list_offsets(version, topic, SPECIAL):
            await t.ask(raw, f"v{version} timestamp {req.topics[0].partitions[0].timestamp}", req)
    for req in list_offsets(11, topic, SPECIAL, isolation_level=1):
        await t.ask(raw, f"read_committed v11 timestamp {req.topics[0].partitions[0].timestamp}", req)
    nowhere = t.names.topic("nowhere")
    for req in list_offsets(8, nowhere, [-1, -5]):
        await t.ask(raw, f"a topic that does not exist: v8 timestamp {req.topics[0].partitions[0].timestamp}", req)


def list_transactions(**filters: Any) -> Any:
    fields = dict(state_filters=[], producer_id_filters=[], duration_filter=-1, transactional_id_pattern=None)
    fields.update(filters)
    return request("ListTransactions", 2, **fields)


@scenario("transactions", "ListTransactions v2: duration and transactional-id pattern filters",
          rule="ListTransactions v1+ lists only transactions running longer than duration_filter ms (KIP-994; "
               "a negative duration: all); v2 (KIP-1152) lists only transactional ids the pattern (an RE2 "
               "regular expression) matches as a whole, null or empty: all; a pattern that does not compile is "
               "INVALID_REGULAR_EXPRESSION")
async def list_transactions_filters(t: Target) -> None:
    raw, txn_id, topic = await txn_ready(t)
    idle_id = txn_id + "-idle"
    await observe.coordinator(raw, idle_id, key_type=1)
    idle = TxnProducer(t, raw, idle_id, "idle producer")
    await idle.init()
    p = TxnProducer(t, raw, txn_id)
    await p.init()
    await p.add_partitions(topic, [0], "add the partition")
    mine = (txn_id, idle_id)

    async def listed(label: str, **filters: Any) -> None:
        r = await raw.call(list_transactions(**filters))
        t.add(label, {"error_code": r.error_code, "unknown_state_filters": list(r.unknown_state_filters),
                      "transaction_states": sorted(
                          (s.transactional_id, s.transaction_state) for s in r.transaction_states
                          if s.transactional_id in mine)})
    await listed("no filter")
    await listed("running longer than an hour", duration_filter=3_600_000)
    await listed("running longer than 0 ms", duration_filter=0)
    await listed("pattern: the whole id", transactional_id_pattern=txn_id)
    await listed("pattern: a prefix only (must match the whole id)", transactional_id_pattern=txn_id[:4])
    await listed("pattern: prefix and .*", transactional_id_pattern=txn_id + ".*")
    await listed("pattern: the idle one", transactional_id_pattern=".*-idle")
    await listed("pattern: empty", transactional_id_pattern="")
    await listed("pattern: does not compile", transactional_id_pattern="(unclosed")
    for probe in ("(?=c).*", "(c)\\1.*", "c++.*", "(?>c).*", "(?P<x>c).*", "(?<x>c).*", "\\Ac.*\\z", "[[:alpha:]].*"):
        await listed(f"pattern: {probe}", transactional_id_pattern=probe)
    await listed("pattern and state", transactional_id_pattern=txn_id + ".*", state_filters=["Ongoing"])
    await listed("pattern and an unknown state", transactional_id_pattern=txn_id + ".*",
                 state_filters=["Sleeping"])
    await listed("unknown state and a bad pattern", transactional_id_pattern="[", state_filters=["Sleeping"])
    await p.end(False, "abort")
