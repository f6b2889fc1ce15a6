"""The streams.* group configs (KIP-1071) as a streams group runs with them (group_configs.py
`check_broker_defaults` checks the broker's defaults).

The configs themselves are rows of group_configs.py's table (names, Kafka's defaults, bounds
from the broker's `[group] streams_min_*` / `streams_max_*` settings), so
IncrementalAlterConfigs / DescribeConfigs on the GROUP resource handle them like the others.
`StreamsConfigs` reads a group's value on every call, so a change applies from the next
heartbeat; the ones the assignment depends on (`ASSIGNMENT_CONFIGS`) are kept with the group
epoch, and a heartbeat that finds them changed starts a new assignment, as Kafka's does.
"""

from __future__ import annotations

from kgroup.assignors.streams_spec import TaskAssignmentConfig
from kgroup.core.group_configs import (
    STREAMS_ACCEPTABLE_RECOVERY_LAG,
    STREAMS_HEARTBEAT_INTERVAL,
    STREAMS_INITIAL_REBALANCE_DELAY,
    STREAMS_NUM_STANDBY_REPLICAS,
    STREAMS_NUM_WARMUP_REPLICAS,
    STREAMS_SESSION_TIMEOUT,
    STREAMS_TASK_OFFSET_INTERVAL,
    KindConfigs,
)

# The configs a target assignment is computed with, by Kafka's assignment-config names.
ASSIGNMENT_CONFIGS = (("acceptable.recovery.lag", STREAMS_ACCEPTABLE_RECOVERY_LAG),
                      ("num.standby.replicas", STREAMS_NUM_STANDBY_REPLICAS),
                      ("num.warmup.replicas", STREAMS_NUM_WARMUP_REPLICAS))


class StreamsConfigs(KindConfigs):
    """A streams group's configs: its dynamic values over the broker's defaults."""

    SESSION_TIMEOUT = STREAMS_SESSION_TIMEOUT
    HEARTBEAT_INTERVAL = STREAMS_HEARTBEAT_INTERVAL

    def initial_rebalance_delay(self, group_id: str) -> int:
        return self.configs.int_value(group_id, STREAMS_INITIAL_REBALANCE_DELAY)

    def task_offset_interval(self, group_id: str) -> int:
        return self.configs.int_value(group_id, STREAMS_TASK_OFFSET_INTERVAL)

    def acceptable_recovery_lag(self, group_id: str) -> int:
        return self.configs.int_value(group_id, STREAMS_ACCEPTABLE_RECOVERY_LAG)

    def assignment_configs(self, group_id: str) -> tuple[tuple[str, str], ...]:
        """What the target is computed with, as stored with the group epoch."""
        return tuple((name, str(self.configs.int_value(group_id, config))) for name, config in ASSIGNMENT_CONFIGS)

    def for_assignor(self, configs: tuple[tuple[str, str], ...]) -> TaskAssignmentConfig:
        """The assignor's settings from the stored assignment configs. Warm-ups only with the
        broker's `streams_assign_warmups` (Kafka 4.4 gives none whatever num.warmup.replicas says)."""
        values = dict(configs)
        warmups = int(values.get("num.warmup.replicas", 0)) if self.configs.shard.config.streams_assign_warmups else 0
        return TaskAssignmentConfig(num_standby_replicas=int(values.get("num.standby.replicas", 0)),
                                    num_warmup_replicas=warmups,
                                    acceptable_recovery_lag=int(values.get("acceptable.recovery.lag", 10_000)))
