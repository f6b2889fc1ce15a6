"""How often a group shard writes a snapshot, and so how much a restart replays.

A snapshot is due once the records appended since the last one reach the larger of
SNAPSHOT_MIN_EVERY and the last snapshot's size (the live state), so a restart replays at
most about twice the live state plus SNAPSHOT_MIN_EVERY records, however long the groups
have committed (a fixed 100,000 made a shard of a few thousand live offsets replay up to
100,000). A real shard over a real data dir; the replay is read back with `load()`.
"""

from __future__ import annotations

import asyncio
import logging

from kgroup.broker.durability import Durability
from kgroup.broker.groups.shard import SNAPSHOT_MIN_EVERY, Shard
from kgroup.core.config import GroupConfig
from kgroup.core.messages import OffsetCommitPartition, OffsetCommitRequest
from kgroup.core.state import counter_member_ids
from kgroup.storage import DataDir, FsyncPolicy


def _replayed(data: DataDir) -> tuple[int, int]:
    """(snapshot records, tail records) a restart of partition 0 would replay."""
    replay = data.metadata_log.partition(0).load()
    snapshot = sum(1 for _ in replay.snapshot)
    return snapshot, sum(len(chunk) for chunk in replay.tail_chunks)


async def _commit(live: int, rounds: int, data: DataDir) -> None:
    durability = Durability(FsyncPolicy.parse("never"))
    durability.start()
    shard = Shard(0, data.metadata_log.partition(0), GroupConfig(), durability, counter_member_ids())
    shard.load()
    for r in range(rounds):
        for start in range(0, live, 500):       # a simple group's commits, 500 offsets a request
            await shard.call(shard.coordinator.commit_offsets, OffsetCommitRequest(
                "g", -1, "", tuple(OffsetCommitPartition("t", p, r) for p in range(start, min(live, start + 500)))))
            while shard._snapshot_task is not None:  # a snapshot being written (a thread): let it finish
                await asyncio.sleep(0.01)
    shard.close()
    await durability.close()


def test_a_small_live_state_is_snapshotted_every_min_every_records(tmp_path):
    data = DataDir(tmp_path / "d", metadata_partitions=1)
    live = 500
    asyncio.run(_commit(live, rounds=50, data=data))          # 25,000 records, 500 live offsets
    snapshot, tail = _replayed(data)
    data.close()
    assert snapshot == live
    assert tail < SNAPSHOT_MIN_EVERY
    assert snapshot + tail <= 2 * live + SNAPSHOT_MIN_EVERY


def test_a_large_live_state_is_snapshotted_after_as_many_records_as_it_holds(tmp_path, caplog):
    data = DataDir(tmp_path / "d", metadata_partitions=1)
    live = 2 * SNAPSHOT_MIN_EVERY
    with caplog.at_level(logging.INFO, logger="kgroup.broker.coordinator"):
        asyncio.run(_commit(live, rounds=4, data=data))       # 80,000 records, 20,000 live offsets
    written = [r for r in caplog.records if "snapshot of" in r.getMessage()]
    # Not every SNAPSHOT_MIN_EVERY records (8 here): each rewrites the whole live state.
    assert len(written) <= 4 * live // live + 2
    snapshot, tail = _replayed(data)
    data.close()
    assert snapshot == live
    assert tail <= live                     # due after as many records as the snapshot holds
    assert snapshot + tail <= 2 * live + SNAPSHOT_MIN_EVERY


def test_a_snapshot_begins_a_segment_so_old_records_go_and_a_restart_reads_only_the_tail(tmp_path):
    # The shard rolls its group-log segment as it takes a snapshot's cut: the segments below
    # the older retained snapshot are deleted (without the roll one segment of 100 MB kept
    # every commit ever written), and a restart reads the log from the snapshot's segment
    # instead of splitting the whole segment up to it.
    data = DataDir(tmp_path / "d", metadata_partitions=1)
    live = 500
    asyncio.run(_commit(live, rounds=100, data=data))         # 50,000 records, 500 live offsets
    part = data.metadata_log.partition(0)
    written = part.log_end_offset
    bases = sorted(int(p.name.split(".")[0]) for p in part.log.directory.glob("*.log"))
    replay = part.load()
    tail = sum(len(chunk) for chunk in replay.tail_chunks)
    data.close()
    assert written == 50_000                                  # every commit, one record each
    assert replay.snapshot_offset in bases                    # the snapshot begins a segment
    assert bases[0] >= written - 3 * SNAPSHOT_MIN_EVERY       # older segments were deleted
    assert len(bases) <= 3
    assert tail == written - replay.snapshot_offset
