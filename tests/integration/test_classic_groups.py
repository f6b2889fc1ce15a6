"""Classic consumer groups against a real `kgroup serve`, with real clients from PyPI."""

from __future__ import annotations


import pytest

from tests.integration.clients import (
    ConsumerThread, caught_up, create_topic, end_offsets, produce_keyed, wait_for,
)
from tests.integration.waits import hold

pytestmark = pytest.mark.integration
CLIENTS = ["kafka-python", "aiokafka", "confluent-kafka"]
MESSAGES = 10_000


@pytest.mark.parametrize("kind", CLIENTS)
def test_group_of_three_consumes_everything_once_and_commits(broker, kind):
    create_topic(broker.bootstrap, "orders", 6)
    produce_keyed(broker.bootstrap, "orders", MESSAGES)
    consumers = [ConsumerThread(kind, broker.bootstrap, "g", "orders", f"{kind}-{i}") for i in range(3)]
    for c in consumers:
        c.start()
    ends = end_offsets(broker.bootstrap, "orders", 6)
    assert sum(ends.values()) == MESSAGES
    wait_for(lambda: all(len(c.tally.assigned) == 2 and caught_up(c, ends) for c in consumers),
             timeout=90, what=f"3 {kind} consumers to share 6 partitions and read {MESSAGES} messages")
    for c in consumers:                     # everyone commits while the group is still whole
        c.commit_now()
    for c in consumers:
        c.stop(commit=False)
    for c in consumers:
        assert c.tally.error is None, c.tally.error
        assert c.tally.committed
    seen = [(p, o) for c in consumers for p, o, *_ in c.tally.consumed]
    assert len(set(seen)) == MESSAGES, "every message consumed, none twice... across the final assignment"
    keys = {k for c in consumers for _, _, k, _ in c.tally.consumed}
    assert len(keys) == MESSAGES
    # A fresh member of the same group starts from the committed offsets: nothing old.
    fresh = ConsumerThread(kind, broker.bootstrap, "g", "orders", f"{kind}-fresh")
    fresh.start()
    wait_for(lambda: len(fresh.tally.assigned) == 6, timeout=60, what="fresh consumer assignment")
    hold(2, "an old record would reach the fresh member by now")
    fresh.stop(commit=False)
    assert fresh.tally.error is None, fresh.tally.error
    assert fresh.tally.consumed == []
