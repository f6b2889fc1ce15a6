"""The admin client's security calls: ACLs and SCRAM credentials (KIP-554).

``SecurityAdmin`` is a part of ``AdminClient`` (it works over ``self.cluster``): CreateAcls,
DescribeAcls and DeleteAcls with the bindings and filters of ``kgroup.acl_bindings``, and
DescribeUserScramCredentials / AlterUserScramCredentials. A password given to
``set_scram_credentials`` is salted and hashed here (PBKDF2 with a fresh random salt), so only
the salted password travels, as Kafka's admin clients do. Requests go to any broker: the ACLs
and credentials are the cluster's.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from kgroup.acl_bindings import AclBinding, AclFilter, AclOperation, AclPermission, PatternType, ResourceType
from kgroup.wire.scram import MIN_ITERATIONS, ScramMechanism, salted_password
from kgroup.wire.api_keys import ApiKey

from .cluster import request_fields
from .errors import BrokerError

if TYPE_CHECKING:
    from .cluster import ClusterClient

SALT_BYTES = 32


def _filter_fields(flt: AclFilter) -> dict[str, Any]:
    return {"resource_type_filter": int(flt.resource_type), "resource_name_filter": flt.resource_name,
            "pattern_type_filter": int(flt.pattern_type), "principal_filter": flt.principal,
            "host_filter": flt.host, "operation": int(flt.operation), "permission_type": int(flt.permission)}


def _binding(resource_type: int, name: str, pattern: int, acl: Any) -> AclBinding:
    return AclBinding(ResourceType.of(resource_type), name, PatternType.of(pattern), acl.principal, acl.host,
                      AclOperation.of(acl.operation), AclPermission.of(acl.permission_type))


class SecurityAdmin:
    """ACL and SCRAM credential calls of ``AdminClient`` (see the module comment)."""

    cluster: ClusterClient

    async def _any(self, api_key: int, body: Any) -> Any:
        conn = await self.cluster.connect()
        return await self.cluster.request(conn, api_key, body)

    # -- ACLs ------------------------------------------------------------------------------

    async def create_acls(self, bindings: Sequence[AclBinding]) -> None:
        """Create ACLs; BrokerError (the first refused one) if any is refused."""
        resp = await self._any(ApiKey.CREATE_ACLS, request_fields(creations=[
            {"resource_type": int(b.resource_type), "resource_name": b.resource_name,
             "resource_pattern_type": int(b.pattern_type), "principal": b.principal, "host": b.host,
             "operation": int(b.operation), "permission_type": int(b.permission)} for b in bindings]))
        for b, result in zip(bindings, resp.results):
            if int(result.error_code):
                raise BrokerError(int(result.error_code), f"create ACL for {b.principal} on {b.resource_name}",
                                  result.error_message)

    async def describe_acls(self, flt: AclFilter = AclFilter()) -> list[AclBinding]:
        """Every ACL the filter matches."""
        resp = await self._any(ApiKey.DESCRIBE_ACLS, request_fields(**_filter_fields(flt)))
        if int(resp.error_code):
            raise BrokerError(int(resp.error_code), "describe ACLs", resp.error_message)
        return sorted(_binding(r.resource_type, r.resource_name, r.pattern_type, a)
                      for r in resp.resources for a in r.acls)

    async def delete_acls(self, filters: Sequence[AclFilter]) -> list[list[AclBinding]]:
        """Delete the ACLs each filter matches; per filter, the ACLs deleted."""
        resp = await self._any(ApiKey.DELETE_ACLS, request_fields(filters=[_filter_fields(f) for f in filters]))
        out = []
        for result in resp.filter_results:
            if int(result.error_code):
                raise BrokerError(int(result.error_code), "delete ACLs", result.error_message)
            out.append([_binding(m.resource_type, m.resource_name, m.pattern_type, m) for m in result.matching_acls])
        return out

    # -- SCRAM credentials -------------------------------------------------------------------

    async def describe_scram_credentials(self, users: Iterable[str] | None = None) -> dict[str, dict[str, int]]:
        """user -> {mechanism: iterations} for the named users (all when None)."""
        names = None if users is None else [{"name": u} for u in users]
        resp = await self._any(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, request_fields(users=names))
        if int(resp.error_code):
            raise BrokerError(int(resp.error_code), "describe SCRAM credentials", resp.error_message)
        out = {}
        for r in resp.results:
            if int(r.error_code):
                raise BrokerError(int(r.error_code), f"describe SCRAM credentials of {r.user}", r.error_message)
            out[r.user] = {ScramMechanism(i.mechanism).sasl_name: int(i.iterations) for i in r.credential_infos}
        return out

    async def set_scram_credentials(self, user: str, mechanism: str, password: str,
                                    iterations: int = MIN_ITERATIONS) -> None:
        """Create or replace ``user``'s credential for ``mechanism`` (e.g. SCRAM-SHA-512)."""
        mech = ScramMechanism.from_sasl_name(mechanism)
        salt = secrets.token_bytes(SALT_BYTES)
        await self._alter_scram(upsertions=[{
            "name": user, "mechanism": int(mech), "iterations": iterations, "salt": salt,
            "salted_password": salted_password(mech.hash_name, password, salt, iterations)}])

    async def delete_scram_credentials(self, user: str, mechanism: str) -> None:
        """Delete ``user``'s credential for ``mechanism``."""
        mech = ScramMechanism.from_sasl_name(mechanism)
        await self._alter_scram(deletions=[{"name": user, "mechanism": int(mech)}])

    async def _alter_scram(self, upsertions: Sequence[dict] = (), deletions: Sequence[dict] = ()) -> None:
        resp = await self._any(ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
                               request_fields(upsertions=list(upsertions), deletions=list(deletions)))
        for r in resp.results:
            if int(r.error_code):
                raise BrokerError(int(r.error_code), f"SCRAM credentials of {r.user}", r.error_message)
