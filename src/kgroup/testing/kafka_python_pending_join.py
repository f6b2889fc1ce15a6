"""A workaround for a kafka-python 3.0.12 hang: a rebalance round left unfinished by poll().

How the hang happens. kafka-python runs one JoinGroup -> SyncGroup round as a task and, when
poll()'s timer runs out first, leaves the task in flight for the next poll to pick up. But the
next poll only looks at the task if `need_rejoin()` still says yes, and that answer is made of
the triggers alone, never of the round in flight (Java's client asks `rejoinNeededOrPending()`).
When the round was started by the coordinator (a heartbeat answered REBALANCE_IN_PROGRESS) the
trigger is a flag that stays set until the round's result is used, so all is well. When it was
started by a local change, the trigger is gone before the round ends: the leader that saw a new
partition count records that count as it computes the assignment; a member that changed its
subscription records it when it sends JoinGroup. If poll()'s timer expires after that and before
the SyncGroup answer, no later poll asks for the result: the member stays REBALANCING with its
heartbeat switched off and nothing assigned, for good. The coordinator expels it when its
session times out and the rest of the group shares its partitions. Under CPU load this hung the
CreatePartitions test in 4 runs of 15 (the leader's SyncGroup answer outlasting what was left of
its 200 ms poll); with a 5 ms poll it hangs every run.

The fix counts a round in flight as a reason to rejoin, as Java's client does. It only changes
an answer that was "no" while a round is in flight, so every other path is kafka-python's own. The
next poll then sends a fresh JoinGroup (kafka-python never reuses a finished round's result) and
the group settles one generation later.
"""

from __future__ import annotations


def count_pending_join_as_rejoin(consumer) -> None:
    """Make this KafkaConsumer's coordinator treat an unfinished join round as "rejoin needed"."""
    coordinator = consumer._coordinator
    # Loud, not silent, if a kafka-python upgrade moves these: then check whether the bug is gone.
    assert hasattr(coordinator, "_join_task") and callable(coordinator.need_rejoin), \
        "kafka-python internals changed: recheck kafka_python_pending_join.py"
    triggers = coordinator.need_rejoin
    coordinator.need_rejoin = lambda: triggers() or coordinator._join_task is not None
