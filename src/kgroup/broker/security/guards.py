"""Guards of the security APIs (security/apis.py lists which guards which API): ACLs and
SCRAM credentials, both on the cluster resource (DESCRIBE to read, ALTER to change); the
delegation token APIs are admitted (their checks follow the connection's: token_api.py).
"""

from __future__ import annotations

from typing import Any

from kgroup.acl_bindings import AclOperation as Op
from kgroup.broker.security.authorization import Access, Admission, cluster_guard
from kgroup.error_codes import ErrorCode
from kgroup.wire import RequestHeader, response_class
from kgroup.wire.kio_build import build, item


# Kafka explains a refused ACL request with the error's own text.
_CLUSTER_REFUSED = "Cluster authorization failed."


def _acl_creations_refused(header: RequestHeader, request: Any, code: ErrorCode) -> Any:
    cls = response_class(header.api_key, header.api_version)
    return build(cls, results=tuple(build(item(cls, "results"), error_code=code, error_message=_CLUSTER_REFUSED)
                                    for _ in request.creations))


def _acl_deletions_refused(header: RequestHeader, request: Any, code: ErrorCode) -> Any:
    cls = response_class(header.api_key, header.api_version)
    return build(cls, filter_results=tuple(
        build(item(cls, "filter_results"), error_code=code, error_message=_CLUSTER_REFUSED, matching_acls=())
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


def _acl_describe_refused(header: RequestHeader, request: Any, code: ErrorCode) -> Any:
    return build(response_class(header.api_key, header.api_version), error_code=code,
                 error_message=_CLUSTER_REFUSED, resources=())


describe_acls = cluster_guard(Op.DESCRIBE, _acl_describe_refused)
create_acls = cluster_guard(Op.ALTER, _acl_creations_refused)
delete_acls = cluster_guard(Op.ALTER, _acl_deletions_refused)
describe_user_scram_credentials = cluster_guard(Op.DESCRIBE, _scram_describe_refused)
alter_user_scram_credentials = cluster_guard(Op.ALTER, _scram_alter_refused)


def tokens(access: Access, header: RequestHeader, request: Any) -> Admission:
    """The delegation token APIs: Kafka checks the connection first, then CREATE_TOKENS /
    DESCRIBE_TOKENS on the owner's User resource; both are the handler's (token_api.py)."""
    return Admission(request)
