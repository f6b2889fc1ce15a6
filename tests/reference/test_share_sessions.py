"""Share sessions own their acquisitions, and MaxBytes 0 fetches nothing — differential: the
same hand-built ShareGroupHeartbeat / ShareFetch / ShareAcknowledge sequences to kgroup and
to Apache Kafka 4.4 give the same answers.

A member that closes sends its leave (heartbeat epoch -1) and its final ShareAcknowledge
(session epoch -1, ACCEPT) at once; in either order the acknowledgement lands and a new
member is not handed the accepted records again. Normalization: none; a fetch is repeated
until records come (Kafka answers the first fetches of a new share partition empty while it
initializes its state). And confluent-kafka's ShareConsumer in a read_committed share group
(`share.isolation.level`) sees the same records on both: never an aborted transaction's,
never an open one's before it commits.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.integration.share_session_race import ISOLATION_SEEN, RECORDS, close_race, isolation_scenario, max_bytes_zero

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("leave_first", [True, False], ids=["leave-then-acknowledge", "acknowledge-then-leave"])
def test_kip932_a_closing_members_final_accept_lands_whatever_the_order_of_its_leave(
        kgroup_broker_session, kafka_reference, leave_first):
    ours = asyncio.run(close_race(kgroup_broker_session.bootstrap, leave_first))
    assert ours == {"acquired": [(0, RECORDS - 1)], "leave": 0, "acknowledge": (0, [0]), "delivered again": []}
    assert asyncio.run(close_race(kafka_reference.bootstrap, leave_first)) == ours


def test_kip932_share_fetch_with_max_bytes_zero_acquires_nothing(kgroup_broker_session, kafka_reference):
    ours = asyncio.run(max_bytes_zero(kgroup_broker_session.bootstrap))
    assert ours == {"open": (0, [], 0), "with acknowledgements": ([], [(0, 0, 0, b"")]),
                    "plain": ([], 0), "released records come back": True}
    assert asyncio.run(max_bytes_zero(kafka_reference.bootstrap)) == ours


def test_kip932_a_read_committed_share_group_never_sees_aborted_or_open_transactions_as_in_kafka(
        kgroup_broker_session, kafka_reference):
    assert isolation_scenario(kgroup_broker_session.bootstrap) == ISOLATION_SEEN
    assert isolation_scenario(kafka_reference.bootstrap) == ISOLATION_SEEN
