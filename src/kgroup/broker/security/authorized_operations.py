"""Authorized operations in describe answers when the client asks for them
(Metadata v8+ `include_*_authorized_operations`, DescribeCluster, DescribeGroups v3+,
ConsumerGroupDescribe, ShareGroupDescribe).

Kafka fills the field only when it is asked for, and leaves INT32_MIN ("not requested")
otherwise. Without an authorizer it reports every operation the resource type supports
(core/acls.py's SUPPORTED_OPERATIONS: a topic READ, WRITE, CREATE, DELETE, ALTER,
DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS; a group READ, DESCRIBE, DELETE,
DESCRIBE_CONFIGS, ALTER_CONFIGS; the cluster CREATE, ALTER, DESCRIBE, CLUSTER_ACTION,
DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE), which is what the handlers put here.
With an authorizer, the API's guard (each concern's guards.py) replaces it with the principal's
allowed set, decided by the same `Authorizer` that enforces the ACLs.
"""

from __future__ import annotations

from kgroup.acl_bindings import ResourceType
from kgroup.core.acls import all_operations

# Kafka's "not requested" value of every authorized-operations field.
NOT_REQUESTED = -(2**31)


def if_asked(asked: object, resource_type: ResourceType) -> int:
    """The field of an answer: every supported operation when `asked`, else NOT_REQUESTED."""
    return all_operations(resource_type) if asked else NOT_REQUESTED
