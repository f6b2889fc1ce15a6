"""Writing the markers that end a transaction: the seam between a transaction coordinator and
the partitions and group coordinators its transaction touched.

How this works: when a shard's Result asks for `TxnMarkers` (EndTxn, a fence, a timeout, or
a load that found a transaction still preparing), the shard hands them to `send` once the
PrepareCommit/PrepareAbort record behind them is durable. One task per transaction then

1. writes a control batch (COMMIT or ABORT, at the producer's epoch and the coordinator's
   epoch) into every partition of the transaction -- `write_partition_markers`, the one
   place that touches a partition on the coordinator's behalf: a local append through the
   partition's producer state today, and the place that becomes a WriteTxnMarkers request
   to the partition's owner in a cluster;
2. tells the coordinator of every group whose offsets the transaction commits
   (`TxnOffsetsMarker` to the group's shard: local today, the same seam in a cluster);
3. waits until all of it is durable, then tells the transaction's shard (`MarkersWritten`),
   which records CompleteCommit/CompleteAbort.

Anything that fails (a group shard still loading, a storage error) is tried again after a
backoff until it succeeds: a committed transaction always gets its markers. A partition of
a deleted topic is skipped, and so is one that refuses the marker as fenced (a newer
producer epoch or coordinator wrote there already), as Kafka does.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from kgroup.broker.durability import Durability
from kgroup.broker.data.producer_states import ProducerStates
from kgroup.broker.groups.shard import Shard, now_ms
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.transactions.messages import MarkersWritten, TxnMarkers, TxnOffsetsMarker
from kgroup.core.transactions.producer_state import ProducerStateError
from kgroup.storage import DataDir, PartitionLog, StorageError
from kgroup.storage.errors import NotOwnedError, TopicError

log = logging.getLogger("kgroup.broker.transactions")

RETRY_FIRST_S = 0.05
RETRY_MAX_S = 2.0


class TxnMarkerChannel:
    """Writes the markers of ending transactions (see the module docstring)."""

    def __init__(self, data: DataDir, producers: ProducerStates, durability: Durability,
                 shard_for: Callable[[str], Shard]) -> None:
        self.data = data
        self.producers = producers
        self.durability = durability
        # The shard that coordinates a group id or a transactional id (the same hash).
        self.shard_for = shard_for
        self._tasks: dict[tuple[str, int, int], asyncio.Task] = {}
        self.written = 0

    def send(self, shard: Shard, markers: TxnMarkers) -> None:
        """Write `markers` (from `shard`, the transaction's coordinator) in the background."""
        key = (markers.transactional_id, markers.producer_id, markers.producer_epoch)
        if key in self._tasks:
            return  # already on their way
        task = asyncio.get_running_loop().create_task(self._deliver(shard, markers),
                                                      name=f"kgroup-txn-markers-{markers.transactional_id}")
        self._tasks[key] = task
        task.add_done_callback(lambda _: self._tasks.pop(key, None))

    @property
    def pending(self) -> int:
        return len(self._tasks)

    async def _deliver(self, shard: Shard, markers: TxnMarkers) -> None:
        delay = RETRY_FIRST_S
        remaining = list(markers.partitions)
        groups_done = not markers.groups
        warned = False
        while True:
            if shard.closed:
                # This node handed the transaction's partition on or lost it: the node that
                # loads it finds the transaction deciding and writes its markers.
                log.info("transaction %s: its coordinator moved; the new one writes the markers",
                         markers.transactional_id)
                return
            try:
                if remaining:
                    await self.write_partition_markers(markers, remaining, shard.coordinator_epoch)
                    remaining = []
                if not groups_done:
                    await self.write_group_markers(markers)
                    groups_done = True
                await shard.call(shard.coordinator.txn_markers_written, MarkersWritten(
                    markers.transactional_id, markers.producer_id, markers.producer_epoch))
                self.written += 1
                return
            except asyncio.CancelledError:
                raise
            except (NotOwnedError, GroupError) as exc:
                if isinstance(exc, NotOwnedError) or exc.code is ErrorCode.NOT_COORDINATOR:
                    # A cluster: the partition or group is on another node. Markers are not
                    # sent between nodes yet (WriteTxnMarkers): say so once, keep trying (a
                    # move of the partition here, or of the transaction there, unblocks it).
                    if not warned:
                        warned = True
                        log.warning("transaction %s: %s; markers are not sent to other nodes, so the transaction "
                                    "stays undecided until that partition or group is served here",
                                    markers.transactional_id, exc)
                else:
                    log.info("transaction %s: markers not written yet (%s); retrying in %.2fs",
                             markers.transactional_id, exc, delay)
            except StorageError as exc:
                log.info("transaction %s: markers not written yet (%s); retrying in %.2fs",
                         markers.transactional_id, exc, delay)
            except Exception:
                log.exception("transaction %s: writing markers failed; retrying", markers.transactional_id)
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_S)

    async def write_partition_markers(self, markers: TxnMarkers, partitions: list[tuple[str, int]],
                                      coordinator_epoch: int) -> None:
        """Append the marker to each partition and wait until they are durable."""
        logs: dict[int, PartitionLog] = {}
        now = now_ms()
        for topic, partition in partitions:
            try:
                plog = self.data.partition_log(topic, partition)
            except TopicError:
                log.info("transaction %s: %s-%d is gone; no marker for it", markers.transactional_id, topic, partition)
                continue
            try:
                self.producers.append_marker((topic, partition), plog, markers.producer_id, markers.producer_epoch,
                                             markers.commit, coordinator_epoch, now)
            except ProducerStateError as exc:
                log.warning("transaction %s: %s-%d refused its marker: %s", markers.transactional_id, topic,
                            partition, exc.message)
                continue
            logs[id(plog)] = plog
        await asyncio.gather(*(self.durability.durable(plog, plog.log_end_offset) for plog in logs.values()))

    async def write_group_markers(self, markers: TxnMarkers) -> None:
        """Tell each group's coordinator that the producer's transaction ended."""
        by_shard: dict[int, tuple[Shard, list[str]]] = {}
        for group_id in markers.groups:
            shard = self.shard_for(group_id)
            by_shard.setdefault(shard.index, (shard, []))[1].append(group_id)
        for shard, groups in by_shard.values():
            await shard.call(shard.coordinator.txn_offsets_marker, TxnOffsetsMarker(
                markers.producer_id, markers.producer_epoch, markers.commit, tuple(groups)))

    async def close(self) -> None:
        """Stop writing (a restart finishes what is left: the coordinator still prepares)."""
        tasks: list[Any] = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
