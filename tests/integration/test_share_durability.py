"""Share-partition state survives `kill -9` of the broker (KIP-932 on kgroup's group-metadata
log): an acknowledgement the broker confirmed is never undone, and records that were only
acquired come back.

An acknowledgement the broker was killed before answering has no known outcome, in Kafka as
here: the broker may have made it durable (then the record is finished, never delivered
again, and the consumer never hears so) or not (then the record comes back and is accepted
again). So the end state asked for is: every record accepted by the consumer (confirmed, or
sent with the answer lost to a kill) and finished at the broker (the share partitions'
start offsets at the log end)."""

from __future__ import annotations


import pytest

from tests.integration.broker_process import BrokerProcess
from tests.integration.clients import wait_for
from tests.integration.share_clients import SHARE_SETTINGS, KgroupCluster, ShareProc, delivered_after_accept, produce
from tests.integration.waits import hold

CYCLES = 10
PER_CYCLE = 400


@pytest.mark.parametrize("client", ["confluent", "kgroup"], ids=["confluent", "ours"])
def test_kip932_broker_kill9_during_consumption_never_redelivers_an_accepted_record(tmp_path, client):
    broker = BrokerProcess(tmp_path / "data", group=SHARE_SETTINGS).start()
    cluster = KgroupCluster(broker)
    cluster.create_topic("orders", 2)
    proc = ShareProc(client, broker.bootstrap, "workers", "orders", "explicit", "accept").wait_ready()
    try:
        for cycle in range(CYCLES):
            produce(broker.bootstrap, "orders", PER_CYCLE, 2)
            half = PER_CYCLE // 2                  # round-robin: this cycle's offsets on each partition
            this_cycle = {(p, o) for p in (0, 1) for o in range(cycle * half, (cycle + 1) * half)}
            # Kill it in the middle of consuming: once some of this cycle's records are in. (Not
            # "more accepted than when produce() returned": on a loaded machine the consumer can
            # accept the whole cycle while produce() still waits for its acks, and then there is
            # no more to come.)
            wait_for(lambda: proc.done() & this_cycle, 60, what=f"a record of cycle {cycle} accepted")
            broker.kill9()
            broker.start()
        everything = {(p, o) for p in (0, 1) for o in range(CYCLES * PER_CYCLE // 2)}
        finished = {("orders", p): 0 for p in (0, 1)}
        wait_for(lambda: proc.done() | proc.unconfirmed() >= everything, 120, what="every record accepted")
        # No lag: every record finished at the broker (the start offsets DescribeShareGroupOffsets
        # reads trail one change, as in Kafka 4.4: core/share_partition.py).
        wait_for(lambda: cluster.lags("workers") == finished, 60,
                 what="every record finished at the broker (no share partition lags)")
        hold(1.0, "a redelivery of an accepted record would show by now")
    finally:
        proc.stop()
        broker.finish()
    # Once the broker confirmed a record's ACCEPT, the record must never be delivered again
    # (to anyone: this is the only member).
    again = delivered_after_accept(proc)
    assert not again, f"accepted records delivered again: {again[:10]}"
    # Every record was accepted: with the broker's confirmation, or (where the kill came
    # first) without, and then the broker finished it all the same (no lag above)
    # or delivered it again for another ACCEPT.
    assert proc.done() | proc.unconfirmed() == everything
    assert "Traceback" not in broker.log()
