"""Share groups with confluent-kafka's ShareConsumer on a real `kgroup serve`: a consumer that
accepts its last records and closes (its leave and its final acknowledgement race) never
gets them again, round after round; a read_committed share group (`share.isolation.level`)
is never handed a record of an aborted transaction, nor one of an open transaction before
it commits."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import create_topic, wait_for
from tests.integration.share_clients import SHARE_SETTINGS, KgroupCluster
from tests.integration.share_session_race import RECORDS, close_race, max_bytes_zero

pytestmark = pytest.mark.integration

ROUNDS = 20
PER_ROUND = 5


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("share-sessions") / "data", group=SHARE_SETTINGS).start()
    yield proc
    proc.finish()


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for value in values:
        producer.produce(topic, value, partition=0)
    assert producer.flush(30) == 0


def _consume(bootstrap: str, group: str, topic: str, want: int, timeout: float = 30.0,
             errors: list | None = None) -> list:
    """A ShareConsumer polls until it has `want` records, ACCEPTs each (explicit
    acknowledgement), and closes: the accepts ride on the final ShareAcknowledge, sent with
    the leave. The records."""
    from confluent_kafka import AcknowledgeType, ShareConsumer

    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([topic])
    got = []
    deadline = time.monotonic() + timeout
    try:
        while len(got) < want and time.monotonic() < deadline:
            for m in consumer.poll(0.2) or []:
                if m.error():
                    if errors is not None:
                        errors.append(str(m.error()))
                    continue
                got.append(m)
                consumer.acknowledge(m, AcknowledgeType.ACCEPT)
    finally:
        consumer.close()
    return got


def test_kip932_a_share_consumer_that_accepts_its_last_records_and_closes_never_gets_them_again(broker):
    cluster = KgroupCluster(broker)
    topic, group = f"own-{uuid.uuid4().hex[:6]}", f"own-g-{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, topic, 1)
    delivered: list[int] = []
    errors: list[str] = []
    for r in range(ROUNDS):
        _produce(broker.bootstrap, topic, [f"r{r}-{i}".encode() for i in range(PER_ROUND)])
        got = _consume(broker.bootstrap, group, topic, PER_ROUND, errors=errors)
        delivered += [m.offset() for m in got]
        # Closing accepted them: the share partition starts past every record so far.
        done = (r + 1) * PER_ROUND
        wait_for(lambda: cluster.start_offsets(group) == {(topic, 0): done}, 10,
                 what=f"round {r}: every record accepted ({cluster.start_offsets(group)})")
    assert errors == []
    assert sorted(delivered) == list(range(ROUNDS * PER_ROUND)), "a record was delivered again (or never)"


@pytest.mark.parametrize("leave_first", [True, False], ids=["leave-then-acknowledge", "acknowledge-then-leave"])
def test_kip932_a_leaving_members_records_stay_with_its_session_until_its_final_acknowledgement(broker, leave_first):
    """The race of the test above, each order forced (tests/reference runs it on Kafka too)."""
    assert asyncio.run(close_race(broker.bootstrap, leave_first)) == {
        "acquired": [(0, RECORDS - 1)], "leave": 0, "acknowledge": (0, [0]), "delivered again": []}


def test_kip932_share_fetch_with_max_bytes_zero_acquires_nothing(broker):
    assert asyncio.run(max_bytes_zero(broker.bootstrap)) == {
        "open": (0, [], 0), "with acknowledgements": ([], [(0, 0, 0, b"")]), "plain": ([], 0),
        "released records come back": True}


def _set_isolation(bootstrap: str, group: str, level: str) -> None:
    """share.isolation.level of one group, with confluent-kafka's AdminClient (GROUP resource)."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    admin = AdminClient({"bootstrap.servers": bootstrap})
    change = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.isolation.level", level, incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([change]).values():
        future.result(15)
    (described,) = admin.describe_configs([ConfigResource(ResourceType.GROUP, group)]).values()
    assert described.result(15)["share.isolation.level"].value == level


def test_kip932_a_read_committed_share_group_never_sees_aborted_or_open_transactions(broker):
    from confluent_kafka import Producer

    topic = f"iso-{uuid.uuid4().hex[:6]}"
    committed_group, uncommitted_group = f"iso-rc-{uuid.uuid4().hex[:6]}", f"iso-ru-{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, topic, 1)
    _set_isolation(broker.bootstrap, committed_group, "read_committed")
    _set_isolation(broker.bootstrap, uncommitted_group, "read_uncommitted")
    txn = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"iso-{uuid.uuid4().hex[:6]}"})
    txn.init_transactions(30)

    def transaction(values: list[bytes], commit: bool) -> None:
        txn.begin_transaction()
        for value in values:
            txn.produce(topic, value, partition=0)
        txn.flush(30)
        (txn.commit_transaction if commit else txn.abort_transaction)(30)

    transaction([b"c1", b"c2"], commit=True)
    transaction([b"a1", b"a2", b"a3"], commit=False)
    _produce(broker.bootstrap, topic, [b"plain"])
    transaction([b"c3"], commit=True)
    # An open transaction: past the last stable offset until it commits.
    txn.begin_transaction()
    txn.produce(topic, b"late", partition=0)
    txn.flush(30)
    first = [m.value() for m in _consume(broker.bootstrap, committed_group, topic, 4)]
    assert first == [b"c1", b"c2", b"plain", b"c3"]
    assert [m.value() for m in _consume(broker.bootstrap, committed_group, topic, 1, timeout=2)] == []
    txn.commit_transaction(30)
    assert [m.value() for m in _consume(broker.bootstrap, committed_group, topic, 1)] == [b"late"]
    # The same log read uncommitted: every record, the aborted ones too.
    every = [m.value() for m in _consume(broker.bootstrap, uncommitted_group, topic, 8)]
    assert every == [b"c1", b"c2", b"a1", b"a2", b"a3", b"plain", b"c3", b"late"]
