"""A share group (KIP-932) in a 3-node cluster: its coordinator node is killed with
`kill -9` while a confluent-kafka ShareConsumer works, and the consumer carries on with the
node that takes the group and the partition over, and again after the hand-back."""

from __future__ import annotations


import pytest

from kgroup.storage.group_hash import partition_for_group
from tests.integration.clients import create_topic, wait_for
from tests.integration.cluster_process import METADATA_PARTITIONS, ClusterProcess, coordinator_of
from tests.integration.share_clients import SHARE_SETTINGS, ShareProc, delivered_after_accept, produce
from tests.integration.waits import hold

pytestmark = pytest.mark.integration

BATCH = 300


def share_group_with_its_partition(prefix: str) -> str:
    """A group whose metadata partition moves with topic partition 0: both are preferred by
    node 0 and dealt to the same live node when node 0 is down (placement.py), so this test
    covers a takeover of both at once (test_cluster_share_nodes.py: a leader on another node)."""
    for i in range(10_000):
        group = f"{prefix}-{i}"
        m = partition_for_group(group, METADATA_PARTITIONS)
        if m % 3 == 0 and (m // 3) % 2 == 0:
            return group
    raise AssertionError("no such group id")


def test_kip932_share_consumer_keeps_consuming_after_kill9_of_its_coordinator_node(tmp_path) -> None:
    cluster = ClusterProcess(tmp_path, extra={"node_timeout_ms": 3000},
                             group={**SHARE_SETTINGS, "initial_rebalance_delay_ms": 300}).start()
    group = share_group_with_its_partition("workers")
    proc = None
    try:
        create_topic(cluster.bootstrap, "jobs", 1)
        assert coordinator_of(cluster.bootstrap, group) == 0
        produce(cluster.bootstrap, "jobs", BATCH, 1)
        proc = ShareProc("confluent", cluster.bootstrap, group, "jobs", "explicit", "accept").wait_ready()
        wait_for(lambda: len(proc.done()) > 0, 60, what="the first records accepted")
        cluster.nodes[0].kill9()
        # Node 1 takes the group and the partition over; the consumer carries on there.
        live = cluster.live_bootstrap()
        wait_for(lambda: coordinator_of(live, group) == 1, 30, what="node 1 coordinating the group")
        produce(live, "jobs", BATCH, 1)
        wait_for(lambda: proc.done() >= {(0, o) for o in range(2 * BATCH)}, 120,
                 what="every record accepted after the takeover")
        # The node comes back and gets both back by a hand-over; consuming goes on there.
        cluster.nodes[0].start()
        wait_for(lambda: coordinator_of(cluster.bootstrap, group) == 0, 60, what="the hand-back to node 0")
        produce(cluster.bootstrap, "jobs", BATCH, 1)
        everything = {(0, o) for o in range(3 * BATCH)}
        wait_for(lambda: proc.done() >= everything, 120, what="every record accepted after the hand-back")
        hold(1.0, "a redelivery of an accepted record would show by now")
    finally:
        if proc is not None:
            proc.stop()
        cluster.finish()
    # Once a node confirmed a record's ACCEPT, it is never delivered again (to anyone: this is
    # the only member), whichever node served it.
    again = delivered_after_accept(proc)
    assert not again, f"accepted records delivered again: {again[:10]}"
    assert proc.done() == everything
    for node in cluster.nodes:
        assert "Traceback" not in node.log()
