"""The client telemetry APIs (KIP-714): one entry each (broker/apis.py says what an entry holds).

Version notes: both v0, all Kafka 4.4 serves. Kafka advertises them only with a telemetry
receiver configured; kgroup always has one (it shows the metrics in /metrics, the console
and the CLI).
"""

from __future__ import annotations

from kgroup.broker.apis import Api, Takes
from kgroup.broker.observe import guards
from kgroup.broker.observe.telemetry_api import TelemetryApi
from kgroup.wire.api_keys import ApiKey as K

APIS = (
    Api(K.GET_TELEMETRY_SUBSCRIPTIONS, 0, 0, TelemetryApi.get_telemetry_subscriptions,
        guards.get_telemetry_subscriptions, edits=False, takes=Takes.CLIENT_HOST),
    Api(K.PUSH_TELEMETRY, 0, 0, TelemetryApi.push_telemetry, guards.push_telemetry, edits=False,
        takes=Takes.CLIENT_HOST),
)
