"""Settings a group member needs, named after the Kafka consumer properties they mirror."""

from __future__ import annotations

from dataclasses import dataclass

from kgroup.assignors import COOPERATIVE, EAGER, get_client_assignor


@dataclass(frozen=True, slots=True)
class MemberConfig:
    """What a member is configured with (all times in milliseconds).

    ``assignors`` are client-side assignor names, preferred first
    (``partition.assignment.strategy``); ``rebalance_timeout_ms`` is ``max.poll.interval.ms``
    as in Kafka's Java client. ``server_assignor`` is what a consumer-protocol member asks
    the coordinator to assign with (None: the coordinator's default).
    """

    group_id: str
    group_instance_id: str | None = None          # group.instance.id
    session_timeout_ms: int = 45_000               # session.timeout.ms
    heartbeat_interval_ms: int = 3_000             # heartbeat.interval.ms
    max_poll_interval_ms: int = 300_000            # max.poll.interval.ms
    assignors: tuple[str, ...] = ("range", "cooperative-sticky")
    auto_commit: bool = True                       # enable.auto.commit
    retry_backoff_ms: int = 100                    # retry.backoff.ms
    server_assignor: str | None = None             # group.remote.assignor (consumer protocol)

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def rebalance_protocol(self) -> str:
        """COOPERATIVE when every configured assignor supports it, else EAGER (KIP-429)."""
        if all(COOPERATIVE in get_client_assignor(n).supported_protocols for n in self.assignors):
            return COOPERATIVE
        return EAGER
