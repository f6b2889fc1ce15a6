"""The admin client's client-quota calls (KIP-546): DescribeClientQuotas and
AlterClientQuotas, to any broker (the quotas are the cluster's).

An entity is a list of (type, name) pairs: type `user`, `client-id` or `ip`, a None name the
type's default entity. A filter component is (type, match, name) with match "exact",
"default" or "any", as Admin.describeClientQuotas takes ClientQuotaFilterComponent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kgroup.wire.api_keys import ApiKey

from .cluster import request_fields
from .errors import BrokerError

MATCH_TYPES = {"exact": 0, "default": 1, "any": 2}

Entity = list[tuple[str, str | None]]


async def describe_client_quotas(admin: Any, components: Sequence[tuple[str, str, str | None]],
                                 strict: bool = False) -> list[tuple[Entity, dict[str, float]]]:
    """The entities the filter matches with their quotas; BrokerError if refused."""
    conn = await admin.cluster.connect()
    resp = await admin.cluster.request(conn, ApiKey.DESCRIBE_CLIENT_QUOTAS, request_fields(strict=strict, components=[
        {"entity_type": kind, "match_type": MATCH_TYPES[match], "match": name} for kind, match, name in components]))
    if int(resp.error_code):
        raise BrokerError(int(resp.error_code), "describe client quotas", resp.error_message)
    return sorted(([(e.entity_type, e.entity_name) for e in sorted(x.entity, key=lambda e: e.entity_type)],
                   {v.key: float(v.value) for v in x.values}) for x in resp.entries or ())


async def alter_client_quotas(admin: Any, entity: Entity, set_values: dict[str, float], remove: Sequence[str],
                              validate_only: bool = False) -> None:
    """Set and remove quotas of one entity; BrokerError if refused."""
    ops = [{"key": k, "value": float(v), "remove": False} for k, v in set_values.items()]
    ops += [{"key": k, "value": 0.0, "remove": True} for k in remove]
    conn = await admin.cluster.connect()
    resp = await admin.cluster.request(conn, ApiKey.ALTER_CLIENT_QUOTAS, request_fields(validate_only=validate_only, entries=[
        {"entity": [{"entity_type": k, "entity_name": n} for k, n in entity], "ops": ops}]))
    for entry in resp.entries:
        if int(entry.error_code):
            raise BrokerError(int(entry.error_code), "alter client quotas", entry.error_message)
