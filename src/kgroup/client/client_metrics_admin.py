"""The admin client's client-metrics subscription calls (KIP-714): the subscriptions are
CLIENT_METRICS config resources, listed with ListConfigResources (v0 was
ListClientMetricsResources, which lists only them) and read and changed with DescribeConfigs
and IncrementalAlterConfigs (``TopicsAdmin.describe_configs`` / ``alter_configs``)."""

from __future__ import annotations

from typing import Any

from kgroup.wire.api_keys import ApiKey

from .cluster import request_fields
from .errors import raise_for

CLIENT_METRICS_RESOURCE = 16


async def list_client_metrics(admin: Any) -> list[str]:
    """The names of the client-metrics subscriptions, in the order the broker lists them."""
    conn = await admin.cluster.connect()
    resp = await admin.cluster.request(conn, ApiKey.LIST_CONFIG_RESOURCES,
                                       request_fields(resource_types=[CLIENT_METRICS_RESOURCE]))
    raise_for(int(resp.error_code), "list client metrics resources", None)
    return [r.resource_name for r in resp.config_resources
            if int(getattr(r, "resource_type", CLIENT_METRICS_RESOURCE)) == CLIENT_METRICS_RESOURCE]
