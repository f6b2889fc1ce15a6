"""Transactions with real clients against a real `kgroup serve` (KIP-98, KIP-447, KIP-890).

One broker for the module. Each client's transactional producer commits one transaction and
aborts one; read_committed readers of the same client and of librdkafka see exactly the
committed records, read_uncommitted ones see both. Then: zombie fencing (a second producer
with the same transactional id), a TxnOffsetCommit from a stale generation, offsets that
commit with the transaction (and are unstable until then), a transaction that outlives its
timeout, and the admin side (ListTransactions, DescribeTransactions, DescribeProducers, the
`kgroup transactions` command).

Set KGROUP_TEST_BROKER=HOST:PORT to run the module against another broker (the peer
check in bench/README.md, "Transactions": Tansu); the kgroup-only tests are skipped then.
"""

from __future__ import annotations

import asyncio
import os
import time

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.broker_process import BrokerProcess
from tests.integration.cli_inprocess import kgroup_inprocess
from tests.integration.test_group_events import read_events
from tests.integration.txn_clients import KINDS, read, transactions
from tests.integration.waits import until

pytestmark = pytest.mark.integration

EXTERNAL = os.environ.get("KGROUP_TEST_BROKER")
kgroup_only = pytest.mark.skipif(EXTERNAL is not None, reason="inspects kgroup itself")


class External:
    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    if EXTERNAL:
        yield External(EXTERNAL)
        return
    proc = BrokerProcess(tmp_path_factory.mktemp("txn") / "data",
                         transactions={"max_timeout_ms": 120_000}).start()
    yield proc
    proc.finish()


def create(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(15)
    except Exception:
        if not EXTERNAL:
            raise    # another broker may have it already, or create topics its own way


# ---- commit and abort, every client ----------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_kip98_a_transactional_producer_commits_and_aborts_and_readers_see_only_what_committed(broker, kind):
    topic = f"txn-{kind}"
    create(broker.bootstrap, topic, 3)
    committed = [f"{kind}-committed-{i}".encode() for i in range(9)]
    aborted = [f"{kind}-aborted-{i}".encode() for i in range(9)]
    transactions(kind, broker.bootstrap, f"tx-{kind}", topic, 3, committed, aborted)
    for reader in dict.fromkeys((kind, "confluent-kafka")):
        seen = read(reader, broker.bootstrap, topic, 3, "read_committed", len(committed))
        assert sorted(seen) == sorted(committed), reader
        seen = read(reader, broker.bootstrap, topic, 3, "read_uncommitted", len(committed) + len(aborted))
        assert sorted(seen) == sorted(committed + aborted), reader


# ---- fencing -------------------------------------------------------------------------------


def test_kip98_a_second_producer_with_the_same_transactional_id_fences_the_first(broker):
    create(broker.bootstrap, "txn-fence", 1)
    zombie = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-fence"})
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce("txn-fence", b"from the zombie")
    zombie.flush(10)
    # The new instance: its InitProducerId aborts the zombie's open transaction and bumps the epoch.
    successor = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-fence"})
    successor.init_transactions(30)
    with pytest.raises(KafkaException) as info:
        zombie.produce("txn-fence", b"zombie again")
        zombie.commit_transaction(10)
    # librdkafka reports the fence as _FENCED (fatal) or, from a Produce, as PRODUCER_FENCED /
    # INVALID_PRODUCER_EPOCH; the zombie's transaction cannot commit either way.
    error = info.value.args[0]
    assert error.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH), error
    successor.begin_transaction()
    successor.produce("txn-fence", b"from the successor")
    successor.commit_transaction(30)
    assert read("confluent-kafka", broker.bootstrap, "txn-fence", 1, "read_committed", 1) == [b"from the successor"]


def test_kip98_our_producer_is_fenced_by_a_newer_instance(broker):
    from kgroup.client import Producer as Ours
    from kgroup.client import ProducerFenced

    create(broker.bootstrap, "txn-fence-ours", 1)

    async def scenario() -> None:
        async with Ours({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-fence-ours"}) as zombie, \
                Ours({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-fence-ours"}) as successor:
            await zombie.init_transactions()
            zombie.begin_transaction()
            await zombie.send_and_wait("txn-fence-ours", b"zombie", partition=0)
            await successor.init_transactions()
            with pytest.raises(ProducerFenced):
                await zombie.commit_transaction()
            successor.begin_transaction()
            await successor.send("txn-fence-ours", b"successor", partition=0)
            await successor.commit_transaction()

    asyncio.run(scenario())
    assert read("kgroup", broker.bootstrap, "txn-fence-ours", 1, "read_committed", 1) == [b"successor"]


# ---- offsets with the transaction (KIP-447) ------------------------------------------------


def _joined(consumer, topic: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.2)
    assert consumer.assignment(), "never joined the group"


def test_kip447_txn_offset_commit_with_a_stale_generation_is_refused(broker):
    from confluent_kafka import Consumer, TopicPartition

    create(broker.bootstrap, "txn-in", 2)
    settings = {"bootstrap.servers": broker.bootstrap, "group.id": "eos-stale", "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500, "auto.offset.reset": "earliest", "enable.auto.commit": False}
    first = Consumer(settings)
    first.subscribe(["txn-in"])
    _joined(first, "txn-in")
    stale = first.consumer_group_metadata()
    # A second member joins: a new generation, and the first member's metadata is stale.
    second = Consumer(settings)
    second.subscribe(["txn-in"])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (second.assignment() and len(first.assignment()) == 1):
        first.poll(0.1)
        second.poll(0.1)
    assert second.assignment()
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-stale"})
    producer.init_transactions(30)
    producer.begin_transaction()
    with pytest.raises(KafkaException) as info:
        producer.send_offsets_to_transaction([TopicPartition("txn-in", 0, 5)], stale, 10)
    assert info.value.args[0].txn_requires_abort(), info.value.args[0]
    producer.abort_transaction(30)
    # The current metadata commits.
    producer.begin_transaction()
    producer.send_offsets_to_transaction([TopicPartition("txn-in", 0, 5)], first.consumer_group_metadata(), 10)
    producer.commit_transaction(30)
    committed = first.committed([TopicPartition("txn-in", 0)], 10)
    assert committed[0].offset == 5
    first.close()
    second.close()


@kgroup_only
def test_kip447_offsets_commit_with_the_transaction_and_are_unstable_until_then(broker):
    from kgroup.client import Consumer, Producer as Ours, TopicPartition
    from kgroup.client.cluster import request_fields
    from kgroup.wire.api_keys import ApiKey

    # Its own topic: TxnOffsetCommit for a topic the broker does not know is refused with
    # UNKNOWN_TOPIC_OR_PARTITION (as Kafka's KafkaApis does), so it must not borrow another
    # test's topic, which random order may not have created yet.
    create(broker.bootstrap, "txn-offsets-in", 2)

    async def scenario() -> None:
        async with Ours({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-offsets"}) as p, \
                Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "eos-offsets"}) as c:
            async def fetch_stable() -> tuple[int, int]:
                resp = await p.cluster.call_coordinator("eos-offsets", ApiKey.OFFSET_FETCH, request_fields(
                    group_id="eos-offsets", require_stable=True,
                    topics=[{"name": "txn-offsets-in", "partition_indexes": [1]}]), max_version=7)
                (part,) = resp.topics[0].partitions
                return int(part.committed_offset), int(part.error_code)

            await p.init_transactions()
            p.begin_transaction()
            await p.send_offsets_to_transaction({TopicPartition("txn-offsets-in", 1): 17}, c.group_metadata())
            assert await fetch_stable() == (-1, 88)          # UNSTABLE_OFFSET_COMMIT
            assert await c.committed(TopicPartition("txn-offsets-in", 1)) is None
            await p.commit_transaction()
            for _ in range(50):                              # the markers are written after EndTxn
                if await fetch_stable() == (17, 0):
                    break
                await asyncio.sleep(0.05)
            assert await fetch_stable() == (17, 0)
            p.begin_transaction()
            await p.send_offsets_to_transaction({TopicPartition("txn-offsets-in", 1): 99}, "eos-offsets")
            await p.abort_transaction()
            await asyncio.sleep(0.3)
            assert await fetch_stable() == (17, 0)

    asyncio.run(scenario())
    # The group events say when the committed transaction's offsets became visible (once:
    # the aborted one made nothing visible).
    events = [value for key, value in read_events(broker.bootstrap) if key == b"eos-offsets"]
    assert [(e["kind"], e["partitions"]) for e in events if e["kind"] == "txn_offsets_committed"] == \
        [("txn_offsets_committed", [["txn-offsets-in", 1]])]


@kgroup_only
def test_kip447_our_read_committed_consumer_waits_for_offsets_a_transaction_is_committing(broker):
    from kgroup.client import Consumer, Producer as Ours, TopicPartition

    create(broker.bootstrap, "txn-stable", 1)
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        plain.produce("txn-stable", b"r%d" % i)
    assert plain.flush(10) == 0
    tp = TopicPartition("txn-stable", 0)

    async def scenario() -> int:
        async with Ours({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-stable"}) as p, \
                Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "stable-group",
                          "isolation.level": "read_committed", "auto.offset.reset": "earliest"}) as c:
            await p.init_transactions()
            p.begin_transaction()
            await p.send_offsets_to_transaction({tp: 7}, "stable-group")   # pending: unstable
            c.assign([tp])
            first = asyncio.ensure_future(c.getmany(timeout_ms=10_000))
            await asyncio.sleep(1.0)
            await p.commit_transaction()
            records = (await first).get(tp) or (await c.getmany(timeout_ms=5_000))[tp]
            return records[0].offset

    # Not offset 0 (what "no committed offset, earliest" gives): it waited for the commit.
    assert asyncio.run(scenario()) == 7


# ---- timeouts ------------------------------------------------------------------------------


def test_kip98_a_transaction_past_its_timeout_is_aborted_and_its_records_never_read(broker):
    create(broker.bootstrap, "txn-timeout", 1)
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-timeout",
                  "transaction.timeout.ms": 3000})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce("txn-timeout", b"left open")
    p.flush(10)
    # The broker aborts it once its timeout (3 s) has passed: wait for that state.
    until(lambda: asyncio.run(_describe(broker.bootstrap, "tx-timeout"))[0].state in ("PrepareAbort", "CompleteAbort"),
          60, 0.2, what="the broker to abort the timed-out transaction")
    with pytest.raises(KafkaException):
        p.commit_transaction(10)
    after = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-after-timeout"})
    after.init_transactions(30)
    after.begin_transaction()
    after.produce("txn-timeout", b"committed later")
    after.commit_transaction(30)
    # The aborted transaction no longer holds the last stable offset back.
    assert read("confluent-kafka", broker.bootstrap, "txn-timeout", 1, "read_committed", 1) == [b"committed later"]


# ---- admin ---------------------------------------------------------------------------------


@kgroup_only
def test_list_and_describe_transactions_and_producers_and_the_cli(broker):
    from kgroup.client import AdminClient as Ours

    create(broker.bootstrap, "txn-admin", 2)
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "tx-admin",
                  "transaction.timeout.ms": 60_000})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce("txn-admin", b"open", partition=1)
    p.flush(10)

    async def look():
        async with Ours(broker.bootstrap) as admin:
            listed = await admin.transactions.list(states=["Ongoing"])
            (described,) = await admin.transactions.describe(["tx-admin"])
            producers = await admin.transactions.producers("txn-admin", [0, 1])
            return listed, described, producers

    listed, described, producers = asyncio.run(look())
    assert "tx-admin" in [t.transactional_id for t in listed]
    assert described.state == "Ongoing" and described.partitions == (("txn-admin", 1),)
    assert described.timeout_ms == 60_000 and described.start_ms > 0
    assert producers[0] == [] and [s.txn_start_offset for s in producers[1]] == [0]
    assert producers[1][0].producer_id == described.producer_id
    run = kgroup_inprocess(["transactions", "list", "--state", "Ongoing", "--bootstrap-server", broker.bootstrap])
    assert run.returncode == 0 and "tx-admin" in run.stdout and "Ongoing" in run.stdout, run.stderr
    run = kgroup_inprocess(["transactions", "describe", "tx-admin", "--bootstrap-server", broker.bootstrap])
    assert run.returncode == 0 and "txn-admin-1" in run.stdout, run.stderr
    run = kgroup_inprocess(["transactions", "describe", "no-such-id", "--bootstrap-server", broker.bootstrap])
    assert run.returncode == 1 and run.stderr.startswith("kgroup: error:") and "Traceback" not in run.stderr
    p.commit_transaction(30)
    (after,) = asyncio.run(_describe(broker.bootstrap, "tx-admin"))
    assert after.state in ("PrepareCommit", "CompleteCommit")


async def _describe(bootstrap: str, tid: str):
    from kgroup.client import AdminClient as Ours

    async with Ours(bootstrap) as admin:
        return await admin.transactions.describe([tid])
