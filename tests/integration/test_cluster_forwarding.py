"""Every request Apache Kafka 4.4 accepts on any broker, accepted on any node of a 3-node
kgroup cluster (issue 32, item 5): group configs altered and described through a node that
does not coordinate the group (Kafka's own kafka-configs), in force on the coordinator and
kept across its kill -9; and each admin request of that kind sent to a node that owns
nothing it names, answered as Kafka answers it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from kgroup.testing.reference import reference_unavailable, run_java
from kgroup.wire import request_class
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.kio_build import build, item
from tests.integration.waits import wait_for
from tests.integration.cluster_process import ClusterProcess, call, coordinator_of, group_coordinated_by

pytestmark = pytest.mark.integration

GROUP_RESOURCE, TOPIC_RESOURCE, BROKER_RESOURCE, CLIENT_METRICS_RESOURCE = 32, 2, 4, 16


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = ClusterProcess(tmp_path_factory.mktemp("cluster-forwarding"), extra={"node_timeout_ms": 3000}).start()
    yield c
    c.finish()


def _heartbeat_interval(port: int, group: str) -> int | None:
    """The heartbeat interval a new member of `group` is given (its coordinator's config in
    force), or None while that node does not serve the group."""
    answer = call(port, ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, group_id=group, member_id="", member_epoch=0,
                  rebalance_timeout=timedelta(seconds=30), subscribed_topic_names=("fwd-none",), topic_partitions=())
    return int(answer.heartbeat_interval.total_seconds() * 1000) if int(answer.error_code) == 0 else None


def _group_configs(port: int, group: str) -> dict[str, str]:
    """DescribeConfigs v4 of a GROUP resource, sent to one node: name -> value."""
    cls = request_class(ApiKey.DESCRIBE_CONFIGS, 4)
    answer = call(port, ApiKey.DESCRIBE_CONFIGS, 4, resources=(build(
        item(cls, "resources"), resource_type=GROUP_RESOURCE, resource_name=group, configuration_keys=None),))
    (result,) = answer.results
    assert int(result.error_code) == 0, result
    return {c.name: c.value for c in result.configs}


def test_kafka_configs_on_a_node_that_does_not_coordinate_the_group(cluster):
    if reference_unavailable():
        pytest.skip(reference_unavailable())
    group = group_coordinated_by(2, "fwd-configs")
    assert coordinator_of(cluster.bootstrap, group) == 2
    other = cluster.nodes[0]
    tool = run_java("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", other.bootstrap, "--alter",
                    "--entity-type", "groups", "--entity-name", group, "--add-config",
                    "consumer.heartbeat.interval.ms=7000,consumer.session.timeout.ms=50000")
    assert tool.returncode == 0, tool.stderr[-2000:]
    assert f"Completed updating config for group {group}." in tool.stdout
    tool = run_java("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", other.bootstrap, "--describe",
                    "--entity-type", "groups", "--entity-name", group)
    assert tool.returncode == 0, tool.stderr[-2000:]
    assert "consumer.heartbeat.interval.ms=7000" in tool.stdout and "consumer.session.timeout.ms=50000" in tool.stdout
    # In force on the coordinator: a new member is told the group's heartbeat interval.
    assert _heartbeat_interval(cluster.nodes[2].port, group) == 7000
    # The coordinator dies; its successor has the configs, and any node describes them.
    cluster.nodes[2].kill9()
    try:
        wait_for(lambda: coordinator_of(cluster.live_bootstrap(), group) in (0, 1), 30, what="a new coordinator")
        successor = coordinator_of(cluster.live_bootstrap(), group)
        wait_for(lambda: _heartbeat_interval(cluster.nodes[successor].port, group) == 7000, 30,
                 what="the successor serving the group")
        elsewhere = cluster.nodes[1 - successor]
        configs = _group_configs(elsewhere.port, group)
        assert configs["consumer.heartbeat.interval.ms"] == "7000"
        assert configs["consumer.session.timeout.ms"] == "50000"
    finally:
        cluster.nodes[2].start()
