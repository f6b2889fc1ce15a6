"""Where a share partition with no state starts: its group's `share.auto.offset.reset`.

`latest` starts at the log end, `earliest` at the log start, and KIP-1106's
`by_duration:<ISO 8601 duration>` at the first record whose timestamp is at most that old
(a ListOffsets lookup by timestamp). When no record is that recent there is no start yet:
the share partition stays without state and its fetches get OFFSET_NOT_AVAILABLE until one
is, as Kafka 4.4 answers.
"""

from __future__ import annotations

from kgroup.broker.data.list_offsets_api import lookup
from kgroup.core.group_configs import by_duration_ms
from kgroup.storage.partition_log import PartitionLog


def reset_start_offset(reset: str, plog: PartitionLog, now_ms: int) -> int | None:
    """The start offset of a share partition that has no state, under ``reset``; None when
    by_duration finds no record that recent."""
    if reset == "earliest":
        return plog.log_start_offset
    duration = by_duration_ms(reset)
    if duration is not None:
        offset, _ = lookup(plog, max(0, now_ms - duration))
        return offset if offset >= 0 else None
    return plog.log_end_offset
