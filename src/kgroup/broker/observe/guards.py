"""Guards of the telemetry APIs (observe/apis.py): Kafka checks no ACL for
GetTelemetrySubscriptions and PushTelemetry — any connected client may push its metrics."""

from __future__ import annotations

from typing import Any

from kgroup.broker.security.authorization import Access, Admission


def any_client(access: Access, header: Any, request: Any) -> Admission:
    return Admission(request)


get_telemetry_subscriptions = push_telemetry = any_client
