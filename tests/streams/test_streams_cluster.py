"""kill -9 of the kgroup node that coordinates a running Kafka Streams app, in a 3-node cluster
(issue 31's third acceptance point).

The stateful count app (exactly_once_v2, one standby per task) runs with two instances on a
3-node kgroup cluster: its transactions cross nodes (markers to the leaders and the group's
coordinator on other nodes, tests/interop/test_cluster_transactions.py). The node that
coordinates the app's streams group is killed mid-stream; another node takes the group over
from the group log. What must hold (Kafka's rules: a coordinator failover is no reason to
rebalance):

- the app keeps its tasks: after the failover, as before, each instance runs the same active
  and standby tasks, at the same group and assignment epochs (StreamsGroupDescribe polled
  every 100 ms throughout; no task is ever active on two instances);
- every word is counted exactly once, nothing lost (read_committed: the last count of each
  word equals the words sent).

Only kgroup runs it: the reference Kafka is a single node.
"""

from __future__ import annotations

import threading

import pytest

from kgroup.testing.cluster import Cluster
from tests.integration.waits import hold, pace
from tests.streams.conftest import KGROUP_GROUP
from tests.streams.poller import Poller
from tests.streams.support import APP_CONFIGS, WordWriter, create_topics, latest_counts, wait_for, wait_value
from tests.streams.wire import Wire

pytestmark = pytest.mark.integration

RECORDS = 1_200
PARTITIONS = 4


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = Cluster(3, tmp_path_factory.mktemp("streams-cluster"), group=KGROUP_GROUP).start()
    try:
        yield c
    finally:
        c.close()


def test_a_coordinator_killed_under_a_streams_app_moves_its_group_without_a_rebalance(cluster, jvm, name, tmp_path):
    app, src, out = f"cluster-{name}", f"in-{name}", f"out-{name}"
    bootstrap = cluster.bootstrap
    create_topics(bootstrap, **{src: PARTITIONS, out: 1})
    # A session long enough to outlive the failover (the new coordinator gives every member
    # a fresh session), heartbeats often.
    with Wire(bootstrap) as w:
        w.alter_group_configs(app, to_coordinator=True, streams_session_timeout_ms=10_000,
                              streams_heartbeat_interval_ms=300, streams_num_standby_replicas=1)
    words = WordWriter(bootstrap, src, PARTITIONS)
    produce, sent = words.produce, words.sent

    produce(0, RECORDS // 3)
    names = ["a", "b"]
    for instance in names:
        jvm.start(instance + name, "stateful", {
            "bootstrap.servers": bootstrap, "application.id": app, "client.id": instance,
            "state.dir": str(tmp_path / f"state-{instance}"), "processing.guarantee": "exactly_once_v2",
            **APP_CONFIGS}, input=src, output=out)
    poller = Poller(bootstrap, app)
    try:
        jvm.wait_running(*(n + name for n in names), timeout=90)
        poller.start()
        # Eight tasks (2 subtopologies x 4 partitions), four per instance, and a standby of
        # each of the four stateful tasks on the other instance; the group settled.
        settled = wait_for(lambda: (d := poller.latest()) and sorted(len(a) for a, _ in d.values()) == [4, 4]
                           and sum(len(s) for _, s in d.values()) == 4 and poller.epochs[-1][0] ==
                           poller.epochs[-1][1] and d, 60, "4+4 tasks, 4 standbys")
        hold(1.0, "the members reach their target (no task changes hands from here on)")
        before, epochs_before = poller.latest(), poller.epochs[-1]
        seen_before = len(poller.snapshots)
        victim = cluster.coordinator_of(app)
        assert victim is not None
        writer = threading.Thread(target=produce, args=(RECORDS // 3, 2 * RECORDS // 3, 20), daemon=True)
        writer.start()
        pace(1.0)
        cluster.kill_node(victim)                                         # kill -9, mid-stream
        wait_for(lambda: (c := cluster.coordinator_of(app)) is not None and c != victim, 30,
                 "another node coordinates the group")
        # Answers from the new coordinator, over a few sessions' worth of heartbeats.
        wait_for(lambda: len(poller.snapshots) > seen_before + 30, 60, "describes after the failover")
        writer.join(timeout=120)
        counts = wait_value(lambda: latest_counts(bootstrap, out), dict(sent), 120, "every word counted")
        after = poller.snapshots[seen_before:]
        assert settled and after
        for snapshot in after:
            assert snapshot == before, (before, snapshot)
        assert set(poller.epochs[seen_before:]) == {epochs_before}
        assert counts == dict(sent), (counts, dict(sent))           # exactly once
        assert poller.overlaps == []
        assert not jvm.errors()
    finally:
        poller.stop()
        for instance in names:
            jvm.close_app(instance + name)
