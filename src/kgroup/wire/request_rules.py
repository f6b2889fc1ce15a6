"""Checks Kafka's request classes make while parsing, beyond the schema.

Apache Kafka builds a request object from its parsed data, and some constructors validate it
(`DescribeAclsRequest`, `CreateAclsRequest`, `DeleteAclsRequest` refuse the UNKNOWN code of
a resource type, pattern type, operation or permission type): the broker then cannot parse
the request and closes the connection. `check(api_key, request)` raises MalformedRequest
where Kafka's parsing fails, so the server closes the connection as Kafka does.
"""

from __future__ import annotations

from typing import Any

from .errors import MalformedRequest

DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS = 29, 30, 31
_UNKNOWN = 0    # the UNKNOWN code of ResourceType, PatternType, AclOperation, AclPermissionType


def _acl_filter(entry: Any, *fields: str) -> None:
    if any(int(getattr(entry, f)) == _UNKNOWN for f in fields):
        raise MalformedRequest("ACL request with UNKNOWN elements")


def check(api_key: int, request: Any) -> None:
    """Raise MalformedRequest where Kafka's request constructor refuses `request`."""
    if api_key == DESCRIBE_ACLS:
        _acl_filter(request, "pattern_type_filter", "resource_type_filter", "permission_type", "operation")
    elif api_key == CREATE_ACLS:
        for creation in request.creations:
            _acl_filter(creation, "resource_pattern_type", "resource_type", "permission_type", "operation")
    elif api_key == DELETE_ACLS:
        for f in request.filters:
            _acl_filter(f, "pattern_type_filter", "resource_type_filter", "operation", "permission_type")


CHECKED = frozenset({DESCRIBE_ACLS, CREATE_ACLS, DELETE_ACLS})
