"""The share.* group configs (KIP-932) as a share group runs with them (group_configs.py
`check_broker_defaults` checks the broker's defaults).

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

from kgroup.core.group_configs import (
    SHARE_ASSIGNMENT_INTERVAL,
    SHARE_AUTO_OFFSET_RESET,
    SHARE_DELIVERY_COUNT_LIMIT,
    SHARE_HEARTBEAT_INTERVAL,
    SHARE_ISOLATION_LEVEL,
    SHARE_MAX_RECORD_LOCKS,
    SHARE_RECORD_LOCK_DURATION,
    SHARE_SESSION_TIMEOUT,
    DLQ_COPY_RECORD_ENABLE,
    DLQ_TOPIC_NAME,
    SHARE_RENEW_ACKNOWLEDGE_ENABLE,
    KindConfigs,
)
from kgroup.core.share_partition import ShareLimits


class ShareConfigs(KindConfigs):
    """A share group's configs: its dynamic values over the broker's defaults."""

    SESSION_TIMEOUT = SHARE_SESSION_TIMEOUT
    HEARTBEAT_INTERVAL = SHARE_HEARTBEAT_INTERVAL

    def assignment_interval(self, group_id: str) -> int:
        return self.configs.int_value(group_id, SHARE_ASSIGNMENT_INTERVAL)

    def auto_offset_reset(self, group_id: str) -> str:
        return str(self.configs.value(group_id, SHARE_AUTO_OFFSET_RESET))

    def limits(self, group_id: str) -> ShareLimits:
        """What the group's share partitions run with."""
        return ShareLimits(self.configs.int_value(group_id, SHARE_RECORD_LOCK_DURATION),
                           self.configs.int_value(group_id, SHARE_DELIVERY_COUNT_LIMIT),
                           self.configs.int_value(group_id, SHARE_MAX_RECORD_LOCKS),
                           self.configs.value(group_id, SHARE_ISOLATION_LEVEL) == "read_committed",
                           self.configs.value(group_id, SHARE_RENEW_ACKNOWLEDGE_ENABLE) == "true")

    def renew_acknowledge_enabled(self, group_id: str) -> bool:
        """share.renew.acknowledge.enable (KIP-1222): whether the group's members may renew
        their acquisition locks with the RENEW acknowledge type."""
        return self.configs.value(group_id, SHARE_RENEW_ACKNOWLEDGE_ENABLE) == "true"

    def dead_letter_topic(self, group_id: str) -> str | None:
        """errors.deadletterqueue.topic.name (KIP-1191), None when blank."""
        return str(self.configs.value(group_id, DLQ_TOPIC_NAME)) or None

    def dead_letter_copy(self, group_id: str) -> bool:
        """errors.deadletterqueue.copy.record.enable (KIP-1191): copy the original value."""
        return str(self.configs.value(group_id, DLQ_COPY_RECORD_ENABLE)) == "true"
