"""A 3-node cluster seen from outside: who leads and coordinates what, errors from the
wrong node, topic changes through any node, SIGTERM hand-over, the CLI, `kgroup cluster`."""

from __future__ import annotations

import signal
import socket
import subprocess
import time

import pytest

from kgroup.wire import request_class
from kgroup.wire.kio_build import build, item
from kgroup.testing.ports import free_run
from tests.integration.broker_process import KGROUP
from tests.integration.cli_inprocess import kgroup_inprocess
from tests.integration.clients import create_topic, produce_keyed, wait_for
from tests.integration.cluster_process import ClusterProcess, call, coordinator_of, group_coordinated_by, metadata
from tests.integration.cluster_workload import MemberProcess

pytestmark = pytest.mark.integration

NOT_LEADER_OR_FOLLOWER, NOT_COORDINATOR = 6, 16


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = ClusterProcess(tmp_path_factory.mktemp("basics"), extra={"node_timeout_ms": 3000},
                       group={"initial_rebalance_delay_ms": 300}).start()
    yield c
    c.finish()


def kgroup(cluster, *args: str) -> str:
    out = kgroup_inprocess(["--bootstrap-server", cluster.bootstrap, *args])     # the script's main, in-process
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_every_node_names_the_same_leaders_and_coordinators(cluster) -> None:
    create_topic(cluster.bootstrap, "spread", 6)
    for node in cluster.nodes:
        md = metadata(node.port, "spread")
        assert sorted(b.node_id for b in md.brokers) == [0, 1, 2]
        assert {p.partition_index: p.leader_id for p in md.topics[0].partitions} == {p: p % 3 for p in range(6)}
        # DescribeCluster (issue 17's admin API) lists the same live nodes, the lowest the controller.
        described = call(node.port, 60, 0, include_cluster_authorized_operations=False)
        assert described.error_code == 0 and described.controller_id == 0
        assert {(b.broker_id, b.port) for b in described.brokers} == {(n.node_id, n.port) for n in cluster.nodes}
    for want in (0, 1, 2):
        group = group_coordinated_by(want, "where")
        for node in cluster.nodes:
            assert coordinator_of(node.bootstrap, group) == want
    described = kgroup(cluster, "topics", "describe", "spread")
    assert "Partition: 4\tLeader: 1" in described


def test_the_wrong_node_answers_not_leader_and_not_coordinator(cluster) -> None:
    create_topic(cluster.bootstrap, "wrong", 3)
    produce_keyed(cluster.bootstrap, "wrong", 30)
    cls = request_class(1, 12)
    topics = item(cls, "topics")
    fetch = call(cluster.nodes[2].port, 1, 12, max_wait=0, min_bytes=1, max_bytes=1 << 20, session_id=0,
                 session_epoch=-1, forgotten_topics_data=(),
                 topics=(build(topics, topic="wrong", partitions=(
                     build(item(topics, "partitions"), partition=0, fetch_offset=0, partition_max_bytes=1 << 20),
                     build(item(topics, "partitions"), partition=2, fetch_offset=0, partition_max_bytes=1 << 20),
                 )),))
    codes = {p.partition_index: p.error_code for p in fetch.responses[0].partitions}
    assert codes == {0: NOT_LEADER_OR_FOLLOWER, 2: 0}      # node 2 leads partition 2 only
    group = group_coordinated_by(0, "wrong-coordinator")
    hb = call(cluster.nodes[1].port, 12, 3, group_id=group, generation_id=1, member_id="m", group_instance_id=None)
    assert hb.error_code == NOT_COORDINATOR


def test_topics_change_through_any_node_and_groups_see_it(cluster) -> None:
    create = call(cluster.nodes[0].port, 19, 5, timeout=10000, validate_only=False, topics=(
        build(item(request_class(19, 5), "topics"), name="grown", num_partitions=3, replication_factor=-1,
              assignments=(), configs=()),))
    assert create.topics[0].error_code == 0
    group = group_coordinated_by(1, "grower")          # on node 1; the topic grows through node 2
    member = MemberProcess("kgroup-consumer", cluster.bootstrap, group, "grown", "grower")
    try:
        wait_for(lambda: member.owned() == {0, 1, 2}, 60, what="the member owning the first 3 partitions")
        grown = call(cluster.nodes[2].port, 37, 1, timeout=10000, validate_only=False, topics=(
            build(item(request_class(37, 1), "topics"), name="grown", count=5, assignments=None),))
        assert grown.results[0].error_code == 0
        wait_for(lambda: member.owned() == {0, 1, 2, 3, 4}, 30, what="the new partitions assigned")
        assert [p.leader_id for p in metadata(cluster.nodes[1].port, "grown").topics[0].partitions] == [0, 1, 2, 0, 1]
    finally:
        member.close()
    deleted = kgroup(cluster, "topics", "delete", "grown")
    assert "Deleted" in deleted
    for node in cluster.nodes:
        wait_for(lambda node=node: metadata(node.port, "grown").topics[0].error_code != 0 or
                 not metadata(node.port, "grown").topics[0].partitions, 10, what="the topic gone everywhere")
    create_topic(cluster.bootstrap, "grown", 2)          # a new topic of that name starts empty
    md = metadata(cluster.nodes[0].port, "grown")
    assert len(md.topics[0].partitions) == 2


def test_sigterm_hands_a_nodes_groups_and_partitions_over_before_it_exits(cluster) -> None:
    create_topic(cluster.bootstrap, "handed", 3)
    produce_keyed(cluster.bootstrap, "handed", 30)      # positions to commit
    group = group_coordinated_by(2, "handed")
    member = MemberProcess("kafka-python", cluster.bootstrap, group, "handed", "handed")
    node = cluster.nodes[2]
    try:
        wait_for(lambda: member.owned() == {0, 1, 2}, 60, what="the member owning the topic")
        before = time.time()
        assert node.stop() == 0
        assert "handed group-metadata partition" in node.log()
        others = ",".join(n.bootstrap for n in cluster.nodes if n is not node)
        assert coordinator_of(others, group) in (0, 1)
        try:
            wait_for(lambda: member.of("committed", after=time.time() - 0.5), 30, what="a commit after the hand-over")
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {member.describe()}") from None
        node.start()
        wait_for(lambda: coordinator_of(cluster.bootstrap, group) == 2, 30, what="the group handed back")
        wait_for(lambda: member.of("committed", after=time.time() - 0.5), 30, what="a commit after the hand-back")
        assert not member.rebalances_after(before), member.describe()
    finally:
        member.close()


def test_groups_describe_names_the_coordinator(cluster) -> None:
    group = group_coordinated_by(1, "described")
    create_topic(cluster.bootstrap, "described", 1)
    member = MemberProcess("confluent-cooperative", cluster.bootstrap, group, "described", "described")
    try:
        wait_for(lambda: member.owned() == {0}, 60, what="the member assigned")
        # Kafka's tool names the coordinator in `--state`: "HOST:PORT  (ID)".
        out = kgroup(cluster, "groups", "describe", group, "--state")
        assert f"{cluster.nodes[1].bootstrap}  (1)" in out.splitlines()[1]
    finally:
        member.close()


def test_kgroup_cluster_runs_n_nodes_and_stops_them_on_ctrl_c(tmp_path) -> None:
    base = free_run(3)
    proc = subprocess.Popen([KGROUP, "cluster", "--nodes", "3", "--base-port", str(base),
                             "--data-dir", str(tmp_path / "c")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        lines = [proc.stdout.readline() for _ in range(5)]
        assert lines[0].startswith("kgroup cluster: 3 nodes")
        assert [line.split()[-1] for line in lines[1:4]] == [f"127.0.0.1:{base + i}" for i in range(3)]
        create_topic(f"127.0.0.1:{base + 1}", "made-here", 3)
        assert [p.leader_id for p in metadata(base + 2, "made-here").topics[0].partitions] == [0, 1, 2]
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    for i in range(3):
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", base + i), timeout=0.5).close()
    assert "Traceback" not in err




def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False
