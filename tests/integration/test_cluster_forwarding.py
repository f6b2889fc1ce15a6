"""Every request Apache Kafka 4.4 accepts on any broker, accepted on any node of a 3-node
kgroup cluster (issue 32, item 5): group configs altered and described through a node that
does not coordinate the group (Kafka's own kafka-configs), in force on the coordinator and
kept across its kill -9; and each admin request of that kind sent to a node that owns
nothing it names, answered as Kafka answers it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from kgroup.testing.reference import require_reference, run_java
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
    require_reference()
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
    # The other tests ask node 0 about groups node 2 coordinates: wait for the hand-back.
    wait_for(lambda: _coordinator_or_none(cluster.bootstrap, group) == 2, 30, what="node 2 coordinating again")


def test_a_group_config_change_sent_while_its_coordinator_dies_waits_and_succeeds(cluster):
    """Kafka keeps group configs in KRaft, so an alteration sent to any broker succeeds while
    a group's coordinator moves; its Admin client does not retry a per-resource error. A
    kgroup node waits for the dead coordinator's successor (admin/group_forwarding.py)."""
    group = group_coordinated_by(2, "fwd-moving")
    assert coordinator_of(cluster.bootstrap, group) == 2
    cls = request_class(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1)
    cluster.nodes[2].kill9()
    try:
        # At once: node 0 still sees node 2 as the owner (its lease runs for node_timeout_ms),
        # then no owner, then a successor loading the partition.
        answer = call(cluster.nodes[0].port, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, resources=(
            _config_resource(cls, GROUP_RESOURCE, group, "consumer.heartbeat.interval.ms", "6000"),))
        assert [int(r.error_code) for r in answer.responses] == [NONE], answer
        successor = coordinator_of(cluster.live_bootstrap(), group)
        assert successor in (0, 1)
        assert _group_configs(cluster.nodes[1 - successor].port, group)["consumer.heartbeat.interval.ms"] == "6000"
    finally:
        cluster.nodes[2].start()
    wait_for(lambda: _coordinator_or_none(cluster.bootstrap, group) == 2, 30, what="node 2 coordinating again")


def _coordinator_or_none(bootstrap: str, group: str) -> int | None:
    try:
        return coordinator_of(bootstrap, group)
    except Exception:  # noqa: BLE001 - a coordinator moving: ask again
        return None


# ---- each request Kafka 4.4 accepts on any broker, sent to a node that owns nothing it names ----
#
# Node 0 is asked throughout; the group is coordinated by node 2 and partition 1 of topic
# "fwd-led" is led by node 1 (partition p prefers node p mod 3). Each row: the API, its version, the request's fields (built from
# the request class), and what Kafka 4.4 answers on a broker that is not the group's
# coordinator, the partition's leader or the controller: the error code of each result.

NONE, NOT_LEADER, INVALID_REQUEST, SECURITY_DISABLED, NOT_COORDINATOR = 0, 6, 42, 54, 16


def _r(cls, field: str, **values):
    return build(item(cls, field), **values)


def _topics(cls):
    return tuple(_r(cls, "topics", name=name, num_partitions=3, replication_factor=1, assignments=(), configs=())
                 for name in ("fwd-new-a", "fwd-new-b"))


def _config_resource(cls, rtype: int, name: str, key: str, value: str | None, op: int | None = 0):
    config = _r(item(cls, "resources"), "configs", name=key, value=value,
                **({} if op is None else {"config_operation": op}))
    return _r(cls, "resources", resource_type=rtype, resource_name=name, configs=(config,))


def _describe_resource(cls, rtype: int, name: str):
    return _r(cls, "resources", resource_type=rtype, resource_name=name, configuration_keys=None)


def _acl_creation(cls):
    return (_r(cls, "creations", resource_type=2, resource_name="fwd", resource_pattern_type=3,
               principal="User:fwd", host="*", operation=3, permission_type=3),)


def _acl_filter(cls):
    return (_r(cls, "filters", resource_type_filter=2, resource_name_filter="fwd", pattern_type_filter=3,
               principal_filter="User:fwd", host_filter="*", operation=3, permission_type=3),)


def _scram(cls):
    return (_r(cls, "upsertions", name="fwd-user", mechanism=1, iterations=4096, salt=b"salt" * 4,
               salted_password=b"p" * 32),)


def _feature(cls):
    return (_r(cls, "feature_updates", feature="group.version", max_version_level=1, upgrade_type=1),)


def _delete_records(cls):
    topic = _r(cls, "topics", name="fwd-led", partitions=(_r(item(cls, "topics"), "partitions",
                                                                partition_index=1, offset=0),))
    return (topic,)


def _codes(answer, path: str) -> list[int]:
    """The error codes along `path` ("results" or "topics.partitions") of an answer."""
    level = [answer]
    for field in path.split("."):
        level = [x for node in level for x in getattr(node, field)]
    return [int(x.error_code) for x in level]


@pytest.fixture(scope="module")
def topics(cluster):
    """Topic "fwd-led" (partition 1 led by node 1), "fwd-grow" to grow and "fwd-gone" to delete."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.nodes[1].bootstrap})
    wanted = [NewTopic("fwd-led", 2, 1), NewTopic("fwd-grow", 3, 1), NewTopic("fwd-gone", 1, 1)]
    for future in admin.create_topics(wanted, operation_timeout=30).values():
        future.result(30)


ROWS = [
    # (id, api, version, fields(cls, group) -> dict, path of the codes, Kafka's codes)
    ("CreateTopics", ApiKey.CREATE_TOPICS, 7, lambda c, g: dict(topics=_topics(c), timeout=timedelta(seconds=30)),
     "topics", [NONE, NONE]),
    ("CreatePartitions", ApiKey.CREATE_PARTITIONS, 3, lambda c, g: dict(topics=(
        _r(c, "topics", name="fwd-grow", count=4, assignments=None),), timeout=timedelta(seconds=30)), "results", [NONE]),
    ("DeleteTopics", ApiKey.DELETE_TOPICS, 6, lambda c, g: dict(
        topics=(_r(c, "topics", name="fwd-gone", topic_id=None),), timeout=timedelta(seconds=30)), "responses", [NONE]),
    ("IncrementalAlterConfigs TOPIC", ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, lambda c, g: dict(resources=(
        _config_resource(c, TOPIC_RESOURCE, "fwd-led", "retention.ms", "600000"),)), "responses", [NONE]),
    ("IncrementalAlterConfigs GROUP", ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, lambda c, g: dict(resources=(
        _config_resource(c, GROUP_RESOURCE, g, "consumer.session.timeout.ms", "55000"),)), "responses", [NONE]),
    ("IncrementalAlterConfigs BROKER cluster default", ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, lambda c, g: dict(
        resources=(_config_resource(c, BROKER_RESOURCE, "", "log.retention.ms", "604800000"),)), "responses", [NONE]),
    # Kafka checks a per-broker resource names the broker asked (ConfigAdminManager), as kgroup does.
    ("IncrementalAlterConfigs BROKER another node", ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, lambda c, g: dict(
        resources=(_config_resource(c, BROKER_RESOURCE, "1", "log.retention.ms", "604800000"),)), "responses",
     [INVALID_REQUEST]),
    ("IncrementalAlterConfigs CLIENT_METRICS", ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, lambda c, g: dict(resources=(
        _config_resource(c, CLIENT_METRICS_RESOURCE, "fwd-sub", "interval.ms", "60000"),)), "responses", [NONE]),
    ("AlterConfigs GROUP", ApiKey.ALTER_CONFIGS, 2, lambda c, g: dict(resources=(
        _config_resource(c, GROUP_RESOURCE, g, "consumer.session.timeout.ms", "50000", op=None),)),
     "responses", [NONE]),
    ("DescribeConfigs GROUP", ApiKey.DESCRIBE_CONFIGS, 4, lambda c, g: dict(resources=(
        _describe_resource(c, GROUP_RESOURCE, g),)), "results", [NONE]),
    ("DescribeConfigs TOPIC", ApiKey.DESCRIBE_CONFIGS, 4, lambda c, g: dict(resources=(
        _describe_resource(c, TOPIC_RESOURCE, "fwd-led"),)), "results", [NONE]),
    ("DescribeConfigs CLIENT_METRICS", ApiKey.DESCRIBE_CONFIGS, 4, lambda c, g: dict(resources=(
        _describe_resource(c, CLIENT_METRICS_RESOURCE, "fwd-sub"),)), "results", [NONE]),
    ("DescribeConfigs BROKER another node", ApiKey.DESCRIBE_CONFIGS, 4, lambda c, g: dict(resources=(
        _describe_resource(c, BROKER_RESOURCE, "1"),)), "results", [INVALID_REQUEST]),
    # No authorizer configured: Kafka answers SECURITY_DISABLED on every broker.
    ("CreateAcls", ApiKey.CREATE_ACLS, 3, lambda c, g: dict(creations=_acl_creation(c)), "results",
     [SECURITY_DISABLED]),
    ("DeleteAcls", ApiKey.DELETE_ACLS, 3, lambda c, g: dict(filters=_acl_filter(c)), "filter_results",
     [SECURITY_DISABLED]),
    ("AlterUserScramCredentials", ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, lambda c, g: dict(
        deletions=(), upsertions=_scram(c)), "results", [NONE]),
    ("UpdateFeatures", ApiKey.UPDATE_FEATURES, 1, lambda c, g: dict(
        timeout=timedelta(seconds=30), feature_updates=_feature(c), validate_only=True), "results", [NONE]),
    # The partition's leader only, on Kafka as on kgroup.
    ("DeleteRecords", ApiKey.DELETE_RECORDS, 2, lambda c, g: dict(topics=_delete_records(c), timeout=timedelta(seconds=30)),
     "topics.partitions", [NOT_LEADER]),
    # Group offsets stay with the coordinator, on Kafka as on kgroup.
    ("OffsetFetch", ApiKey.OFFSET_FETCH, 7, lambda c, g: dict(group_id=g, topics=None, require_stable=False),
     "", [NOT_COORDINATOR]),
]


@pytest.mark.parametrize("row", ROWS, ids=[r[0] for r in ROWS])
def test_any_node_answers_as_kafka(cluster, topics, row):
    name, api, version, fields, path, expected = row
    group = group_coordinated_by(2, "fwd-table")
    answer = call(cluster.nodes[0].port, api, version, **fields(request_class(api, version), group))
    codes = _codes(answer, path) if path else [int(answer.error_code)]
    assert codes == expected, answer


def test_list_config_resources_lists_groups_of_every_node(cluster):
    """ListConfigResources v1 on node 0 names the group configs node 2 coordinates."""
    group = group_coordinated_by(2, "fwd-listed")
    cls = request_class(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1)
    # The nodes start at once and node 2 may still be taking its partitions over from the
    # node that held them first: it waits for its load and answers, as Kafka (configs in
    # KRaft) never answers COORDINATOR_LOAD_IN_PROGRESS here.
    answer = call(cluster.nodes[2].port, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, resources=(
        _config_resource(cls, GROUP_RESOURCE, group, "consumer.session.timeout.ms", "50000"),))
    assert [int(r.error_code) for r in answer.responses] == [NONE], answer
    answer = call(cluster.nodes[0].port, ApiKey.LIST_CONFIG_RESOURCES, 1, resource_types=(GROUP_RESOURCE,))
    assert int(answer.error_code) == NONE
    assert group in {r.resource_name for r in answer.config_resources}


# The rows whose answer does not depend on where things live, asked of Kafka 4.4 itself (the
# session's reference broker) to hold the table to Kafka's answers; alterations validate only,
# so the shared reference keeps no state of this module.
ON_KAFKA = ("IncrementalAlterConfigs GROUP", "AlterConfigs GROUP", "DescribeConfigs GROUP",
            "IncrementalAlterConfigs CLIENT_METRICS", "CreateAcls", "DeleteAcls", "UpdateFeatures")


ON_KAFKA_ROWS = [r for r in ROWS if r[0] in ON_KAFKA]


@pytest.mark.parametrize("row", ON_KAFKA_ROWS, ids=[r[0] for r in ON_KAFKA_ROWS])
def test_the_table_is_what_kafka_answers(kafka_reference, row):
    import dataclasses

    name, api, version, fields, path, expected = row
    request = build(request_class(api, version), **fields(request_class(api, version), "fwd-table-kafka"))
    if any(f.name == "validate_only" for f in dataclasses.fields(request)):
        request = dataclasses.replace(request, validate_only=True)
    answer = call(kafka_reference.port, api, version, **{f.name: getattr(request, f.name)
                                                          for f in dataclasses.fields(request)})
    assert (_codes(answer, path) if path else [int(answer.error_code)]) == expected, answer
