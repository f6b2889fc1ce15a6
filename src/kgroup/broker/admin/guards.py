"""Guards of the admin APIs on the cluster (see acl_rules.py for the table): ACLs, SCRAM
credentials, and — served later — configs, log dirs and DescribeCluster.
"""

from __future__ import annotations

from typing import Any

from kgroup.acl_bindings import AclOperation as Op
from kgroup.broker.security.authorization import (
    CLUSTER,
    GROUP,
    TOPIC,
    Access,
    Admission,
    Guard,
    Refused,
    admit_items,
    cluster_guard,
    error_for,
    plain_refusal,
)
from kgroup.error_codes import ErrorCode
from kgroup.wire import RequestHeader, response_class
from kgroup.wire.kio_build import build, get, item
from kgroup.wire.kio_build import replace_fields as replaced

E = ErrorCode
GROUP_FAILED = E.GROUP_AUTHORIZATION_FAILED
TOPIC_FAILED = E.TOPIC_AUTHORIZATION_FAILED


def _acl_creations_refused(header: RequestHeader, request: Any, code: ErrorCode) -> Any:
    cls = response_class(header.api_key, header.api_version)
    return build(cls, results=tuple(build(item(cls, "results"), error_code=code, error_message=None)
                                    for _ in request.creations))


def _acl_deletions_refused(header: RequestHeader, request: Any, code: ErrorCode) -> Any:
    cls = response_class(header.api_key, header.api_version)
    return build(cls, filter_results=tuple(
        build(item(cls, "filter_results"), error_code=code, error_message=None, matching_acls=())
        for _ in request.filters))


def _scram_describe_refused(header: RequestHeader, request: Any, code: ErrorCode) -> Any:
    cls = response_class(header.api_key, header.api_version)
    users = [u.name for u in request.users or ()]
    return build(cls, error_code=code, error_message=None, results=tuple(
        build(item(cls, "results"), user=u, error_code=code, error_message=None, credential_infos=())
        for u in users))


def _scram_alter_refused(header: RequestHeader, request: Any, code: ErrorCode) -> Any:
    cls = response_class(header.api_key, header.api_version)
    users = dict.fromkeys([d.name for d in request.deletions] + [u.name for u in request.upsertions])
    return build(cls, results=tuple(build(item(cls, "results"), user=u, error_code=code, error_message=None)
                                    for u in users))


describe_acls = cluster_guard(Op.DESCRIBE)
create_acls = cluster_guard(Op.ALTER, _acl_creations_refused)
delete_acls = cluster_guard(Op.ALTER, _acl_deletions_refused)
describe_user_scram_credentials = cluster_guard(Op.DESCRIBE, _scram_describe_refused)
alter_user_scram_credentials = cluster_guard(Op.ALTER, _scram_alter_refused)


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


def describe_log_dirs(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    if access.cluster(Op.DESCRIBE):
        return Admission(request)
    return plain_refusal(header, E.CLUSTER_AUTHORIZATION_FAILED, results=())


def describe_cluster(access: Access, header: RequestHeader, request: Any) -> Refused | Admission:
    """Anyone may describe the cluster; its authorized operations are filled in if asked."""
    if not get(request, "include_cluster_authorized_operations", False):
        return Admission(request)
    return Admission(request, lambda r: replaced(
        r, cluster_authorized_operations=access.operations(CLUSTER, "kafka-cluster")))
