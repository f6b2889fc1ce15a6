"""GetTelemetrySubscriptions and PushTelemetry (KIP-714; observe/apis.py: the versions served).

A kio request in, a kio response of the same version out; client_telemetry.py decides. The
client is known by what the request path gives: its client id (the request header) and the
address it connects from (Kafka's `client_source_address`); the software name, version and
source port (which Kafka also matches on) are not carried to handlers here, so a `match`
on them selects no kgroup client.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from kgroup.broker.observe.client_telemetry import ACCEPTED_COMPRESSION, ClientTelemetry, TelemetryRefused
from kgroup.error_codes import ErrorCode
from kgroup.wire import RequestHeader, response_class
from kgroup.wire.kio_build import build

ZERO = uuid.UUID(int=0)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class TelemetryApi:
    """The two telemetry requests over the broker's ClientTelemetry."""

    def __init__(self, telemetry: ClientTelemetry, clock=now_ms) -> None:
        self.telemetry = telemetry
        self.clock = clock

    def _attributes(self, header: RequestHeader, client_host: str) -> dict[str, str | None]:
        name, version = self.telemetry.software_of(header.client_id, client_host)
        return {"client_id": header.client_id, "client_source_address": client_host.lstrip("/") or None,
                "client_software_name": name, "client_software_version": version, "client_source_port": None}

    async def get_telemetry_subscriptions(self, header: RequestHeader, request: Any, client_host: str) -> Any:
        cls = response_class(header.api_key, header.api_version)
        try:
            c = self.telemetry.get_subscriptions(request.client_instance_id, self._attributes(header, client_host),
                                                 self.clock())
        except TelemetryRefused as exc:
            return build(cls, throttle_time=0, error_code=exc.code, client_instance_id=ZERO, subscription_id=0,
                         accepted_compression_types=(), push_interval=0, telemetry_max_bytes=0,
                         delta_temporality=False, requested_metrics=())
        return build(cls, throttle_time=0, error_code=ErrorCode.NONE, client_instance_id=c.instance_id,
                     subscription_id=c.subscription_id, accepted_compression_types=ACCEPTED_COMPRESSION,
                     push_interval=c.interval_ms, telemetry_max_bytes=self.telemetry.max_bytes,
                     delta_temporality=True, requested_metrics=c.metrics)

    async def push_telemetry(self, header: RequestHeader, request: Any, client_host: str) -> Any:
        cls = response_class(header.api_key, header.api_version)
        try:
            self.telemetry.push(request.client_instance_id, int(request.subscription_id), bool(request.terminating),
                                int(request.compression_type), request.metrics, self._attributes(header, client_host),
                                self.clock())
            code = ErrorCode.NONE
        except TelemetryRefused as exc:
            code = exc.code
        return build(cls, throttle_time=0, error_code=code)
