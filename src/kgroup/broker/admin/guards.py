"""Guards of the admin APIs (admin/apis.py lists which guards which API): configs of
topics, groups and the broker, DeleteRecords, DescribeLogDirs, partition moves and elections.
"""

from __future__ import annotations

from typing import Any

from kgroup.acl_bindings import AclOperation as Op
from kgroup.broker.admin.quotas_api import quota_answer
from kgroup.broker.admin.reassignments_api import elections_failed, reassignments_failed
from kgroup.broker.security.authorization import (CLUSTER, GROUP, TOPIC, Access, Admission, Guard, Refused,
    TopicList, admit_items, cluster_guard, error_for, per_topic, plain_refusal)
from kgroup.core.quotas import QuotaRefused
from kgroup.error_codes import ErrorCode
from kgroup.wire import RequestHeader, response_class
from kgroup.wire.kio_build import build, item

E = ErrorCode
GROUP_FAILED = E.GROUP_AUTHORIZATION_FAILED
TOPIC_FAILED = E.TOPIC_AUTHORIZATION_FAILED


delete_records = per_topic(Op.DELETE, TopicList(failed={"low_watermark": -1}))


# -- configs (DescribeConfigs, AlterConfigs, IncrementalAlterConfigs) ---------------------------

# ConfigResource types: the ACL resource each is checked on (others: the cluster).
_CONFIG_TOPIC, _CONFIG_GROUP = 2, 32


def _config_resource(resource: Any) -> tuple[Any, str]:
    kind = int(resource.resource_type)
    if kind == _CONFIG_TOPIC:
        return TOPIC, resource.resource_name
    if kind == _CONFIG_GROUP:
        return GROUP, resource.resource_name
    return CLUSTER, "kafka-cluster"  # BROKER, BROKER_LOGGER, CLIENT_METRICS


def configs_guard(op: Op, response_field: str) -> Guard:
    """``op`` (DESCRIBE_CONFIGS or ALTER_CONFIGS) on each resource's topic, group or the
    cluster; a refused resource gets that resource type's error."""

    def guard(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
        def keep(resource: Any) -> bool:
            rtype, name = _config_resource(resource)
            return access.cluster(op) if rtype is CLUSTER else access.allowed(op, rtype, name)

        def refused(cls: type, resource: Any) -> Any:
            return build(item(cls, response_field), error_code=error_for(_config_resource(resource)[0]),
                         error_message=None, resource_type=resource.resource_type,
                         resource_name=resource.resource_name, configs=())

        return admit_items(request, "resources", keep, refused, response_field)

    return guard


describe_configs = configs_guard(Op.DESCRIBE_CONFIGS, "results")
alter_configs = configs_guard(Op.ALTER_CONFIGS, "responses")
incremental_alter_configs = configs_guard(Op.ALTER_CONFIGS, "responses")
# KIP-1142: DESCRIBE_CONFIGS on the cluster (Kafka's handleListConfigResources).
list_config_resources = cluster_guard(Op.DESCRIBE_CONFIGS, lambda header, request, code: build(
    response_class(header.api_key, header.api_version), error_code=code, config_resources=()))


def describe_log_dirs(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    if access.cluster(Op.DESCRIBE):
        return Admission(request)
    return plain_refusal(header, E.CLUSTER_AUTHORIZATION_FAILED, results=())


def update_features(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    """ALTER on the cluster (Kafka's ControllerApis.handleUpdateFeatures)."""
    if access.cluster(Op.ALTER):
        return Admission(request)
    # (With the error's own text, as Kafka's ApiError carries it.)
    return plain_refusal(header, E.CLUSTER_AUTHORIZATION_FAILED, error_message="Cluster authorization failed.",
                         results=())


# -- partition moves and log dirs (reassignments_api.py, records_api.py) -------------------------
# Refused, Kafka answers every partition named with the error (and the top level, where the
# response has one).

_REFUSED = "Cluster authorization failed."


def _refused_log_dirs(cls: type, request: Any, code: ErrorCode) -> Any:
    topic_cls = item(cls, "results")
    part_cls = item(topic_cls, "partitions")
    return build(cls, throttle_time=0, results=tuple(
        build(topic_cls, topic_name=t.name, partitions=tuple(
            build(part_cls, partition_index=int(p), error_code=code) for p in t.partitions))
        for d in request.dirs for t in d.topics))


def _cluster_alter(refused: Any) -> Guard:
    """ALTER on the cluster (Kafka's ControllerApis for reassignments and elections,
    KafkaApis for log dirs)."""

    def guard(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
        if access.cluster(Op.ALTER):
            return Admission(request)
        cls = response_class(header.api_key, header.api_version)
        return Refused(refused(cls, request, E.CLUSTER_AUTHORIZATION_FAILED))

    return guard


alter_partition_reassignments = _cluster_alter(
    lambda cls, request, code: reassignments_failed(cls, request, code, _REFUSED))
elect_leaders = _cluster_alter(lambda cls, request, code: elections_failed(cls, request, code, _REFUSED))
alter_replica_log_dirs = _cluster_alter(_refused_log_dirs)


def list_partition_reassignments(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    """DESCRIBE on the cluster."""
    if access.cluster(Op.DESCRIBE):
        return Admission(request)
    return plain_refusal(header, E.CLUSTER_AUTHORIZATION_FAILED, error_message=_REFUSED, topics=())


# -- client quotas (Kafka's AuthHelper: DESCRIBE_CONFIGS / ALTER_CONFIGS on the cluster) ------

describe_client_quotas = cluster_guard(Op.DESCRIBE_CONFIGS)


def _quota_entries_refused(header: RequestHeader, request: Any, code: ErrorCode) -> Any:
    """Every entry refused, with Kafka's text, in Kafka's order (admin/quotas_api.py)."""
    return quota_answer(header, [(list(dict((e.entity_type, e.entity_name) for e in entry.entity).items()),
                                  QuotaRefused(code, "Cluster authorization failed.")) for entry in request.entries])


alter_client_quotas = cluster_guard(Op.ALTER_CONFIGS, _quota_entries_refused)
