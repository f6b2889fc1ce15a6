"""Writing the markers that end a transaction: the seam between a transaction coordinator and
the partitions and group coordinators its transaction touched.

How this works: when a shard's Result asks for `TxnMarkers` (EndTxn, a fence, a timeout, or
a load that found a transaction still preparing), the shard hands them to `send` once the
PrepareCommit/PrepareAbort record behind them is durable. One task per transaction then

1. writes a control batch (COMMIT or ABORT, at the producer's epoch and the coordinator's
   epoch) into every partition of the transaction: a partition this node leads through its
   producer state (`append_markers`, which WriteTxnMarkers' handler uses too), one another
   node of the cluster leads with Kafka's WriteTxnMarkers request to that node
   (cluster/peers.py), carrying this node's ownership epoch of the transaction's partition
   as the coordinator epoch, so a leader refuses a coordinator that was fenced;
2. tells the coordinator of every group whose offsets the transaction commits
   (`TxnOffsetsMarker` to the group's shard here; WriteTxnMarkers naming the group's
   `__consumer_offsets` partition -- our group-metadata partition -- to another node);
3. waits until all of it is durable, then tells the transaction's shard (`MarkersWritten`),
   which records CompleteCommit/CompleteAbort.

What is not written yet (a partition or group moving between nodes, a peer down, a shard
still loading, a storage error) is tried again after a backoff, leaders looked up afresh
each round, until it is written: a committed transaction always gets its markers. A
partition of a deleted topic is skipped, and so is one that refuses the marker as fenced (a
newer producer epoch or coordinator wrote there already), as Kafka does. A coordinator that
lost the transaction's partition stops: the node that loads it finds the transaction
preparing and writes the markers itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from kgroup.broker.cluster.peers import PeerUnavailable, Peers
from kgroup.broker.durability import Durability
from kgroup.broker.data.producer_states import ProducerStates
from kgroup.broker.groups.shard import Shard, now_ms
from kgroup.broker.txn.txn_api import OFFSETS_TOPIC
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.transactions.messages import MarkersWritten, TxnMarkers, TxnOffsetsMarker
from kgroup.core.transactions.producer_state import ProducerStateError
from kgroup.storage import DataDir, PartitionLog, StorageError
from kgroup.storage.errors import NotOwnedError, TopicError
from kgroup.wire import request_class
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.kio_build import build, item

log = logging.getLogger("kgroup.broker.transactions")
E = ErrorCode

RETRY_FIRST_S = 0.05
RETRY_MAX_S = 2.0
WRITE_TXN_MARKERS = ApiKey.WRITE_TXN_MARKERS
# The version sent to peers (Kafka 4.4 serves 1-2; v2 adds only the marker's transaction
# version, which our leaders do not need).
PEER_VERSION = 1
# A group's pending offsets are, to Kafka, in its partition of __consumer_offsets (OFFSETS_TOPIC):
# the partition a WriteTxnMarkers names for them (ours: the group-metadata partition).
# A marker refused as fenced is not written again (a newer producer or coordinator wrote).
FENCED = frozenset({E.INVALID_PRODUCER_EPOCH, E.TRANSACTION_COORDINATOR_FENCED, E.PRODUCER_FENCED})


async def append_markers(data: DataDir, producers: ProducerStates, durability: Durability, producer_id: int,
                         producer_epoch: int, commit: bool, coordinator_epoch: int,
                         partitions: list[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
    """Append the marker to each partition this node leads and wait until they are durable;
    each partition's answer (NOT_LEADER_OR_FOLLOWER where this node does not lead it, the
    producer state's refusal where it is fenced)."""
    codes: dict[tuple[str, int], ErrorCode] = {}
    logs: dict[int, PartitionLog] = {}
    now = now_ms()
    for topic, partition in partitions:
        try:
            plog = data.partition_log(topic, partition)
        except NotOwnedError:
            codes[(topic, partition)] = E.NOT_LEADER_OR_FOLLOWER
            continue
        except TopicError:
            codes[(topic, partition)] = E.UNKNOWN_TOPIC_OR_PARTITION
            continue
        try:
            producers.append_marker((topic, partition), plog, producer_id, producer_epoch, commit,
                                    coordinator_epoch, now)
        except ProducerStateError as exc:
            codes[(topic, partition)] = exc.code
            continue
        logs[id(plog)] = plog
        codes[(topic, partition)] = E.NONE
    await asyncio.gather(*(durability.durable(plog, plog.log_end_offset) for plog in logs.values()))
    return codes


class TxnMarkerChannel:
    """Writes the markers of ending transactions (see the module docstring)."""

    def __init__(self, data: DataDir, producers: ProducerStates, durability: Durability,
                 shard_for: Callable[[str], Shard], group_slot: Callable[[str], int],
                 cluster: Any = None, peers: Peers | None = None, node_id: int = 0) -> None:
        self.data = data
        self.producers = producers
        self.durability = durability
        # The shard that coordinates a group id or a transactional id (the same hash), and
        # its group-metadata partition.
        self.shard_for = shard_for
        self.group_slot = group_slot
        # Who leads what (cluster/node_view.py; None: a single broker) and the other nodes.
        self.cluster = cluster
        self.peers = peers
        self.node_id = node_id
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
        partitions = list(markers.partitions)
        groups = list(markers.groups)
        while True:
            if shard.closed:
                # This node handed the transaction's partition on or lost it: the node that
                # loads it finds the transaction deciding and writes the markers.
                log.info("transaction %s: its coordinator moved; the new one writes the markers",
                         markers.transactional_id)
                return
            try:
                partitions = await self._write_partitions(markers, partitions, shard.coordinator_epoch)
                groups = await self._write_groups(markers, groups, shard.coordinator_epoch)
                if not partitions and not groups:
                    await shard.call(shard.coordinator.txn_markers_written, MarkersWritten(
                        markers.transactional_id, markers.producer_id, markers.producer_epoch))
                    self.written += 1
                    return
                log.info("transaction %s: markers not written yet to %s%s; retrying in %.2fs",
                         markers.transactional_id, ", ".join(f"{t}-{p}" for t, p in partitions),
                         "".join(f" group {g}" for g in groups), delay)
            except asyncio.CancelledError:
                raise
            except (GroupError, StorageError) as exc:
                log.info("transaction %s: markers not written yet (%s); retrying in %.2fs",
                         markers.transactional_id, exc, delay)
            except Exception:
                log.exception("transaction %s: writing markers failed; retrying", markers.transactional_id)
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_S)

    def _node_of(self, slot: int) -> int | None:
        """The node that serves unit `slot` now (this one without a cluster)."""
        return self.node_id if self.cluster is None else self.cluster.leader(slot)

    async def _write_partitions(self, markers: TxnMarkers, partitions: list[tuple[str, int]],
                                coordinator_epoch: int) -> list[tuple[str, int]]:
        """Write the marker into each partition, here or at its leader; the ones left to retry."""
        topics = self.data.topics()
        by_node: dict[int | None, list[tuple[str, int]]] = {}
        for t, p in partitions:
            meta = topics.get(t)
            if meta is None or not 0 <= p < len(meta.slots):
                log.info("transaction %s: %s-%d is gone; no marker for it", markers.transactional_id, t, p)
                continue
            by_node.setdefault(self._node_of(meta.slots[p]), []).append((t, p))
        left = by_node.pop(None, [])                    # being moved: next round
        codes: dict[tuple[str, int], ErrorCode] = {}
        if self.node_id in by_node:
            codes.update(await append_markers(self.data, self.producers, self.durability, markers.producer_id,
                                              markers.producer_epoch, markers.commit, coordinator_epoch,
                                              by_node.pop(self.node_id)))
        for node, tps in by_node.items():
            codes.update(await self._remote(node, markers, coordinator_epoch, tps))
        for (t, p), code in codes.items():
            if code is E.NONE:
                continue
            if code in FENCED:
                log.warning("transaction %s: %s-%d refused its marker: %s", markers.transactional_id, t, p, code.name)
            elif code is E.UNKNOWN_TOPIC_OR_PARTITION and t not in self.data.topics():
                log.info("transaction %s: %s-%d is gone; no marker for it", markers.transactional_id, t, p)
            else:
                left.append((t, p))
        return left

    async def _write_groups(self, markers: TxnMarkers, groups: list[str], coordinator_epoch: int) -> list[str]:
        """Tell each group's coordinator, here or on its node, that the producer's
        transaction ended; the groups left to retry."""
        by_slot: dict[int, list[str]] = {}
        for group_id in groups:
            by_slot.setdefault(self.group_slot(group_id), []).append(group_id)
        left: list[str] = []
        remote: dict[int, list[int]] = {}
        for slot, ids in by_slot.items():
            node = self._node_of(slot)
            if node is None:
                left += ids
            elif node == self.node_id:
                shard = self.shard_for(ids[0])
                try:
                    await shard.call(shard.coordinator.txn_offsets_marker, TxnOffsetsMarker(
                        markers.producer_id, markers.producer_epoch, markers.commit, tuple(ids)))
                except GroupError:
                    left += ids                     # loading, or moved meanwhile
            else:
                remote.setdefault(node, []).append(slot)
        for node, slots in remote.items():
            codes = await self._remote(node, markers, coordinator_epoch, [(OFFSETS_TOPIC, s) for s in slots])
            left += [g for s in slots if codes.get((OFFSETS_TOPIC, s)) is not E.NONE for g in by_slot[s]]
        return left

    async def _remote(self, node: int, markers: TxnMarkers, coordinator_epoch: int,
                      partitions: list[tuple[str, int]]) -> dict[tuple[str, int], ErrorCode]:
        """WriteTxnMarkers to `node` for `partitions`; each partition's answer (a peer that
        cannot be reached: NOT_LEADER_OR_FOLLOWER, to retry)."""
        if self.peers is None:
            return {tp: E.NOT_LEADER_OR_FOLLOWER for tp in partitions}
        by_topic: dict[str, list[int]] = {}
        for t, p in partitions:
            by_topic.setdefault(t, []).append(p)
        cls = request_class(WRITE_TXN_MARKERS, PEER_VERSION)
        marker_cls, topic_cls = item(cls, "markers"), item(item(cls, "markers"), "topics")
        request = build(cls, markers=(build(
            marker_cls, producer_id=markers.producer_id, producer_epoch=markers.producer_epoch,
            transaction_result=markers.commit, coordinator_epoch=coordinator_epoch,
            topics=tuple(build(topic_cls, name=t, partition_indexes=tuple(ps)) for t, ps in by_topic.items())),))
        try:
            resp = await self.peers.request(node, WRITE_TXN_MARKERS, request)
        except PeerUnavailable as exc:
            log.info("transaction %s: %s", markers.transactional_id, exc)
            return {tp: E.NOT_LEADER_OR_FOLLOWER for tp in partitions}
        codes = {(t.name, int(p.partition_index)): ErrorCode(int(p.error_code))
                 for m in resp.markers for t in m.topics for p in t.partitions}
        return {tp: codes.get(tp, E.NOT_LEADER_OR_FOLLOWER) for tp in partitions}

    async def close(self) -> None:
        """Stop writing (a restart finishes what is left: the coordinator still prepares)."""
        tasks: list[Any] = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
