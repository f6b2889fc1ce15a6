"""Share groups with confluent-kafka's ShareConsumer on a real `kgroup serve`: a consumer that
accepts its last records and closes (its leave and its final acknowledgement race) never
gets them again, round after round; a read_committed share group (`share.isolation.level`)
is never handed a record of an aborted transaction, nor one of an open transaction before
it commits."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import create_topic, wait_for
from tests.integration.share_clients import SHARE_SETTINGS, KgroupCluster
from tests.integration.share_session_race import (
    ISOLATION_SEEN,
    RECORDS,
    close_race,
    consume,
    isolation_scenario,
    max_bytes_zero,
    produce,
)

pytestmark = pytest.mark.integration

ROUNDS = 20
PER_ROUND = 5


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    proc = BrokerProcess(tmp_path_factory.mktemp("share-sessions") / "data", group=SHARE_SETTINGS).start()
    yield proc
    proc.finish()


def test_kip932_a_share_consumer_that_accepts_its_last_records_and_closes_never_gets_them_again(broker):
    cluster = KgroupCluster(broker)
    topic, group = f"own-{uuid.uuid4().hex[:6]}", f"own-g-{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, topic, 1)
    delivered: list[int] = []
    errors: list[str] = []
    for r in range(ROUNDS):
        produce(broker.bootstrap, topic, [f"r{r}-{i}".encode() for i in range(PER_ROUND)])
        got = consume(broker.bootstrap, group, topic, PER_ROUND, errors=errors)
        delivered += [m.offset() for m in got]
        # Closing accepted them: no record is left unacknowledged (the lag; the start offset
        # DescribeShareGroupOffsets reads trails one change, as in Kafka 4.4).
        wait_for(lambda: cluster.lags(group) == {(topic, 0): 0}, 10,
                 what=f"round {r}: every record accepted ({cluster.lags(group)})")
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


def test_kip932_a_read_committed_share_group_never_sees_aborted_or_open_transactions(broker):
    assert isolation_scenario(broker.bootstrap) == ISOLATION_SEEN
