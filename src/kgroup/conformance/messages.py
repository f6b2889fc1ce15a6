"""Requests built by API name and version from plain values (nested dicts and lists).

    request("JoinGroup", 5, group_id="g", session_timeout_ms=...)        # fields by kio name

`request` finds kio's class for the version, builds nested entities from dicts (a list of
dicts for a tuple of entities), turns milliseconds into the timedelta kio wants and error
codes into kio's enum (`kgroup.wire.kio_build.build`), and drops fields that version lacks
— so one scenario step can be written once and sent at any version.
"""

from __future__ import annotations

import dataclasses
import typing
from functools import cache
from typing import Any

from kgroup.wire.codec import request_class
from kgroup.wire.kio_build import build
from kgroup.broker.concerns import SERVED as SUPPORTED_APIS

# API keys by name, for the APIs kgroup's table does not list (Kafka-only ones).
EXTRA_KEYS = {
    "OffsetForLeaderEpoch": 23, "WriteTxnMarkers": 27, "DescribeDelegationToken": 41,
    "AlterReplicaLogDirs": 34, "CreateDelegationToken": 38, "RenewDelegationToken": 39,
    "ExpireDelegationToken": 40, "ElectLeaders": 43, "AlterPartitionReassignments": 45,
    "ListPartitionReassignments": 46, "DescribeClientQuotas": 48, "AlterClientQuotas": 49,
    "DescribeQuorum": 55, "UpdateFeatures": 57, "UnregisterBroker": 64,
    "DescribeTopicPartitions": 75, "GetTelemetrySubscriptions": 71, "PushTelemetry": 72,
    "ListConfigResources": 74, "StreamsGroupHeartbeat": 88, "StreamsGroupDescribe": 89,
    "InitializeShareGroupState": 83, "ReadShareGroupState": 84, "WriteShareGroupState": 85,
    "DeleteShareGroupState": 86, "ReadShareGroupStateSummary": 87,
    "DescribeShareGroupOffsets": 90, "AlterShareGroupOffsets": 91, "DeleteShareGroupOffsets": 92,
}
KEYS = {**EXTRA_KEYS, **{api.name: key for key, api in SUPPORTED_APIS.items()}}
NAMES = {key: name for name, key in KEYS.items()}


def api_name(key: int) -> str:
    return NAMES.get(key, f"API{key}")


@cache
def _hints(cls: type) -> dict[str, Any]:
    return {f.name: typing.get_type_hints(cls).get(f.name) for f in dataclasses.fields(cls)}


def _entity_of(hint: Any) -> type | None:
    """The entity class inside a field's type (X, tuple[X, ...], X | None)."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return hint
    for arg in typing.get_args(hint):
        found = _entity_of(arg)
        if found is not None:
            return found
    return None


def make(cls: type, **values: Any) -> Any:
    """An instance of kio entity `cls`; nested dicts / lists of dicts become its entities."""
    hints = _hints(cls)
    converted = {}
    for name, value in values.items():
        if name not in hints:
            if name.endswith("_ms") and name[:-3] in hints:      # session_timeout_ms -> session_timeout
                converted[name[:-3]] = value
            continue
        entity = _entity_of(hints[name])
        if entity is not None and isinstance(value, dict):
            value = make(entity, **value)
        elif entity is not None and isinstance(value, (list, tuple)):
            value = tuple(make(entity, **v) if isinstance(v, dict) else v for v in value)
        elif isinstance(value, list):
            value = tuple(value)
        converted[name] = value
    return build(cls, **converted)


def request(api: str | int, version: int, **fields: Any) -> Any:
    """The kio request of `api` (a name or a key) at `version` with these fields."""
    key = KEYS[api] if isinstance(api, str) else api
    return make(request_class(key, version), **fields)
