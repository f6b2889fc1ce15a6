"""The share.* group configs (KIP-932) as a share group runs with them, and the broker checks.

How this works: the configs themselves (names, Kafka's defaults, bounds from the broker's
`[group] share_min_*` / `share_max_*` settings, INT or STRING) are rows of group_configs.py's
table, so IncrementalAlterConfigs / DescribeConfigs on the GROUP resource handle them like
the consumer.* ones. A group's value is its dynamic config (a GroupConfigRecord in the
group-metadata log, replayed into `stored.group_configs`) or else the broker's default;
`ShareConfigs` reads it on every call, so a change applies from the next heartbeat, fetch or
acquisition. The lower bounds are looser than Kafka's (a 1 s record lock, a 1 s session) so
tests can run fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kgroup.core.group_configs import (
    SHARE_AUTO_OFFSET_RESET,
    SHARE_DELIVERY_COUNT_LIMIT,
    SHARE_GROUP_CONFIGS,
    SHARE_HEARTBEAT_INTERVAL,
    SHARE_ISOLATION_LEVEL,
    SHARE_MAX_RECORD_LOCKS,
    SHARE_RECORD_LOCK_DURATION,
    SHARE_SESSION_TIMEOUT,
    GroupConfigs,
)
from kgroup.core.share_partition import ShareLimits

if TYPE_CHECKING:
    from kgroup.core.config import GroupConfig
    from kgroup.core.state import ShardState


def check_broker_share_configs(config: "GroupConfig") -> None:
    """Raise ValueError unless every broker-wide share default is within its bounds."""
    if config.share_heartbeat_interval_ms >= config.share_session_timeout_ms:
        raise ValueError("[group] share_heartbeat_interval_ms must be below share_session_timeout_ms")
    for d in SHARE_GROUP_CONFIGS:
        key = d.name.replace(".", "_")                      # the [group] TOML key
        value = d.default(config)
        if d.choices:
            if value not in d.choices:
                raise ValueError(f"[group] {key}: must be one of {', '.join(d.choices)}, not {value!r}")
            continue
        low, high = d.minimum(config), d.maximum(config)
        if low > high:
            raise ValueError(f"[group] {key.replace('share_', 'share_min_', 1)} ({low}) is above "
                             f"{key.replace('share_', 'share_max_', 1)} ({high})")
        if not low <= value <= high:  # type: ignore[operator]
            raise ValueError(f"[group] {key}: must be between {low} and {high}, not {value}")
    if config.share_max_size < 1:
        raise ValueError("[group] share_max_size must be >= 1")


class ShareConfigs:
    """A share group's configs: its dynamic values over the broker's defaults."""

    def __init__(self, shard: "ShardState") -> None:
        self.configs = GroupConfigs(shard)

    def session_timeout(self, group_id: str) -> int:
        return self.configs.int_value(group_id, SHARE_SESSION_TIMEOUT)

    def heartbeat_interval(self, group_id: str) -> int:
        return self.configs.int_value(group_id, SHARE_HEARTBEAT_INTERVAL)

    def auto_offset_reset(self, group_id: str) -> str:
        return str(self.configs.value(group_id, SHARE_AUTO_OFFSET_RESET))

    def limits(self, group_id: str) -> ShareLimits:
        """What the group's share partitions run with."""
        return ShareLimits(self.configs.int_value(group_id, SHARE_RECORD_LOCK_DURATION),
                           self.configs.int_value(group_id, SHARE_DELIVERY_COUNT_LIMIT),
                           self.configs.int_value(group_id, SHARE_MAX_RECORD_LOCKS),
                           self.configs.value(group_id, SHARE_ISOLATION_LEVEL) == "read_committed")
