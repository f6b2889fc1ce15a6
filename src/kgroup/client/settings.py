"""Client settings by their Kafka names ("group.id", "max.poll.interval.ms", ...).

A ``Consumer`` or ``Producer`` takes a dict with Kafka's dotted names (as librdkafka and the
Java client do) and/or keyword arguments with underscores (``group_id=...``); unknown names
raise ``ValueError`` so a typo is not silently ignored.

``group.protocol`` is ``classic`` (JoinGroup/SyncGroup, client-side assignors from
``partition.assignment.strategy``, ``session.timeout.ms``, ``heartbeat.interval.ms``) or
``consumer`` (KIP-848 ConsumerGroupHeartbeat: the coordinator assigns with
``group.remote.assignor``, or its default when unset, and sets the session timeout and
heartbeat interval; the three classic settings are then unused).

Both take the security settings of ``client/security.py`` (``security.protocol``,
``sasl.mechanism``, ``sasl.username``, ``sasl.password``, ``ssl.ca.location``, ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .security import SECURITY_DEFAULTS

CONSUMER_DEFAULTS: dict[str, Any] = {
    "bootstrap.servers": "127.0.0.1:9092",
    "client.id": "kgroup-consumer",
    "group.id": None,
    "group.instance.id": None,
    "group.protocol": "classic",
    "group.remote.assignor": None,
    "partition.assignment.strategy": "range,cooperative-sticky",
    "session.timeout.ms": 45_000,
    "heartbeat.interval.ms": 3_000,
    "max.poll.interval.ms": 300_000,
    "max.poll.records": 500,
    "auto.offset.reset": "latest",
    "enable.auto.commit": True,
    "auto.commit.interval.ms": 5_000,
    "fetch.min.bytes": 1,
    "fetch.max.bytes": 52_428_800,
    "fetch.max.wait.ms": 500,
    "max.partition.fetch.bytes": 1_048_576,
    "metadata.max.age.ms": 300_000,
    "retry.backoff.ms": 100,
    "request.timeout.ms": 30_000,
    "check.crcs": True,
    # read_committed: only records of committed transactions (and none past the last stable
    # offset); read_uncommitted: every record.
    "isolation.level": "read_uncommitted",
    **SECURITY_DEFAULTS,
}

# A Membership (and LeaderElection, TaskAssignment): Kafka Connect's group defaults for the
# session and rebalance timeouts, so a dead member's share moves within seconds.
MEMBERSHIP_DEFAULTS: dict[str, Any] = {
    "bootstrap.servers": "127.0.0.1:9092",
    "client.id": "kgroup-membership",
    "group.id": None,
    "group.instance.id": None,
    "session.timeout.ms": 10_000,
    "heartbeat.interval.ms": 3_000,
    "rebalance.timeout.ms": 60_000,
    "retry.backoff.ms": 100,
    "request.timeout.ms": 30_000,
}

PRODUCER_DEFAULTS: dict[str, Any] = {
    "bootstrap.servers": "127.0.0.1:9092",
    "client.id": "kgroup-producer",
    "acks": -1,
    "linger.ms": 5,
    "batch.size": 16_384,
    "compression.type": "none",
    "max.in.flight.requests.per.connection": 5,
    "request.timeout.ms": 30_000,
    "retries": 5,
    "retry.backoff.ms": 100,
    "max.request.size": 1_048_576,
    # Idempotence (KIP-98): a producer id and sequence numbers, so a retried batch is stored
    # once. On by itself with a transactional.id.
    "enable.idempotence": False,
    "transactional.id": None,
    "transaction.timeout.ms": 60_000,
    **SECURITY_DEFAULTS,
}


def resolve(defaults: Mapping[str, Any], config: Mapping[str, Any] | None,
            kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults overlaid with ``config`` then ``kwargs`` (underscores read as dots)."""
    out = dict(defaults)
    items = list((config or {}).items()) + [(k.replace("_", "."), v) for k, v in kwargs.items()]
    for name, value in items:
        if name not in out:
            raise ValueError(f"unknown setting {name!r}")
        default = defaults[name]
        if isinstance(default, bool) and isinstance(value, str):
            value = value.lower() in ("true", "1", "yes")
        elif isinstance(default, int) and not isinstance(default, bool) and isinstance(value, str):
            value = int(value)
        out[name] = value
    return out
