"""Asking a transaction coordinator on another node (KIP-890 in a cluster).

How this works: a partition leader must know, before it appends a transactional batch,
that the producer's transaction holds the partition (KIP-890 part 1), and for a
transaction.version 2 producer (Produce v12+) it must add the partition to the transaction
first (part 2, implicit_add.py). When the transactional id's coordinator is this node, both
are a look at (or a call into) the local shard. When it is another node, the leader asks it
as Kafka's brokers do (Kafka's AddPartitionsToTxnManager): AddPartitionsToTxn v4 with
`verify_only`, then, for what the transaction lacks, v5 adding the partitions if the
producer may speak transaction.version 2 (Produce v12+), sent to the node that owns the
transactional id's group-metadata partition (cluster/peers.py).

As in Kafka, only a partition's first batch of a transaction is asked about: while the
partition's producer state holds an open transaction of the producer at that epoch, the
transaction still holds the partition (it cannot end without a marker here, which closes it),
so `verify` passes it without asking, checked synchronously right before the append.

Produce checks its batches synchronously, so the answers are gathered before it, in the
produce request's own task (`before_produce`), and kept in a context variable that only
that request sees; `verify` then reads them. A partition the remote coordinator was not
asked about, or a coordinator that cannot be reached, is NOT_COORDINATOR, which the produce
path answers as a retriable error. TxnOffsetCommit on a group coordinator whose transaction
coordinator is elsewhere asks the same way (`verify_group`): the group stands as its
`__consumer_offsets` partition, as in Kafka, and a TV2 commit adds the group first
(AddOffsetsToTxn to the coordinator).
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from typing import Any

from kgroup.broker.cluster.peers import PeerUnavailable, Peers
from kgroup.broker.data.producer_states import ProducerStates
from kgroup.broker.groups.group_api import NOT_COORDINATOR, GroupApi
from kgroup.broker.txn.implicit_add import FIRST_TV2_PRODUCE, add_for_produce, transactional_writes
from kgroup.broker.txn.txn_api import verify
from kgroup.broker.txn.txn_markers import OFFSETS_TOPIC
from kgroup.core.errors import ErrorCode
from kgroup.storage import DataDir, StorageError
from kgroup.wire import request_class
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.kio_build import build, item

log = logging.getLogger("kgroup.broker.transactions")
E = ErrorCode

VERIFY_VERSION = 4       # AddPartitionsToTxn: the broker-to-broker form (verify_only)
ADD_VERSION = 5          # ... adding for a transaction.version 2 producer
ADD_OFFSETS_VERSION = 4

# (transactional id, producer id, epoch, (topic, partition)) -> the remote coordinator's
# answer, for the produce request running in this task.
_VERDICTS: ContextVar[dict | None] = ContextVar("kgroup_remote_txn_verdicts", default=None)


class RemoteTxn:
    """The transaction coordinator as a partition leader or group coordinator asks it."""

    def __init__(self, groups: GroupApi, cluster: Any, peers: Peers, data: DataDir) -> None:
        self.groups = groups
        self.cluster = cluster
        self.peers = peers
        self.data = data
        # The partitions' producer states (the data path's; set once it is built).
        self.producers: ProducerStates | None = None

    def _open_here(self, tp: tuple[str, int], producer_id: int, producer_epoch: int) -> bool:
        """Whether the partition holds an open transaction of the producer at this epoch."""
        if self.producers is None:
            return False
        try:
            state = self.producers.of(tp, self.data.partition_log(*tp))
        except StorageError:
            return False
        entry = state.producers.get(producer_id)
        return producer_id in state.ongoing and entry is not None and entry.epoch == producer_epoch

    def _remote(self, transactional_id: str) -> int | None:
        """The other node that coordinates `transactional_id`, or None (this one, or none yet)."""
        if self.groups.shard_of(transactional_id) is not NOT_COORDINATOR:
            return None
        node = self.cluster.leader(self.groups.shard_for(transactional_id))
        return None if node is None or node == self.peers.node_id else node

    def is_remote(self, transactional_id: str) -> bool:
        return self._remote(transactional_id) is not None

    async def ask(self, node: int, transactional_id: str, producer_id: int, producer_epoch: int,
                  partitions: tuple[tuple[str, int], ...], add: bool) -> dict[tuple[str, int], ErrorCode]:
        """AddPartitionsToTxn to `node` (verify only, or add for a TV2 producer); each
        partition's answer."""
        cls = request_class(ApiKey.ADD_PARTITIONS_TO_TXN, ADD_VERSION if add else VERIFY_VERSION)
        txn_cls = item(cls, "transactions")
        topic_cls = item(txn_cls, "topics")
        by_topic: dict[str, list[int]] = {}
        for t, p in partitions:
            by_topic.setdefault(t, []).append(p)
        request = build(cls, transactions=(build(
            txn_cls, transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
            verify_only=not add,
            topics=tuple(build(topic_cls, name=t, partitions=tuple(ps)) for t, ps in by_topic.items())),))
        try:
            resp = await self.peers.request(node, ApiKey.ADD_PARTITIONS_TO_TXN, request)
        except PeerUnavailable as exc:
            log.info("transaction %s: its coordinator could not be asked: %s", transactional_id, exc)
            return {tp: E.NOT_COORDINATOR for tp in partitions}
        if int(resp.error_code):
            return {tp: ErrorCode(int(resp.error_code)) for tp in partitions}
        codes = {(t.name, int(p.partition_index)): ErrorCode(int(p.partition_error_code))
                 for r in resp.results_by_transaction for t in r.topic_results for p in t.results_by_partition}
        return {tp: codes.get(tp, E.NOT_COORDINATOR) for tp in partitions}

    # ---- the produce path ----------------------------------------------------------------

    async def before_produce(self, version: int, transactional_id: str | None, request: Any,
                             names: list[str | None]) -> None:
        """Before a produce's batches are checked: add (TV2) or verify its transactional
        partitions, here or at the remote coordinator."""
        if not transactional_id:
            return
        node = self._remote(transactional_id)
        if node is None:
            await add_for_produce(self.groups, version, transactional_id, request, names)
            return
        verdicts: dict = {}
        for (producer_id, epoch), partitions in transactional_writes(request, names).items():
            partitions = tuple(tp for tp in partitions if not self._open_here(tp, producer_id, epoch))
            if not partitions:
                continue
            codes = await self.ask(node, transactional_id, producer_id, epoch, partitions, add=False)
            missing = tuple(tp for tp, code in codes.items() if code is not E.NONE)
            if missing and version >= FIRST_TV2_PRODUCE:
                # As implicit_add.py does locally: only what the transaction lacks is added
                # (a TV1 producer sending Produce v12 added its partitions itself).
                codes.update(await self.ask(node, transactional_id, producer_id, epoch, missing, add=True))
            verdicts.update({(transactional_id, producer_id, epoch, tp): code for tp, code in codes.items()})
        _VERDICTS.set(verdicts)

    def verify(self, transactional_id: str, producer_id: int, producer_epoch: int, partitions: tuple = (),
               group_id: str | None = None) -> ErrorCode:
        """The produce path's check (DataContext.verify_txn): local, or what the remote
        coordinator answered before this produce."""
        if self.groups.shard_of(transactional_id) is not NOT_COORDINATOR:
            return verify(self.groups, transactional_id, producer_id, producer_epoch, partitions, group_id)
        verdicts = _VERDICTS.get() or {}
        for tp in partitions:
            if self._open_here(tp, producer_id, producer_epoch):
                continue
            code = verdicts.get((transactional_id, producer_id, producer_epoch, tp), E.NOT_COORDINATOR)
            if code is not E.NONE:
                return code
        return E.NONE if partitions else E.NOT_COORDINATOR

    # ---- TxnOffsetCommit -----------------------------------------------------------------

    async def add_group(self, transactional_id: str, producer_id: int, producer_epoch: int, group_id: str) -> ErrorCode:
        """A TV2 TxnOffsetCommit: the group joins the transaction at its remote coordinator."""
        node = self._remote(transactional_id)
        if node is None:
            return E.NOT_COORDINATOR
        request = build(request_class(ApiKey.ADD_OFFSETS_TO_TXN, ADD_OFFSETS_VERSION),
                        transactional_id=transactional_id, producer_id=producer_id, producer_epoch=producer_epoch,
                        group_id=group_id)
        try:
            return ErrorCode(int((await self.peers.request(node, ApiKey.ADD_OFFSETS_TO_TXN, request)).error_code))
        except PeerUnavailable:
            return E.NOT_COORDINATOR

    async def verify_group(self, transactional_id: str, producer_id: int, producer_epoch: int,
                           group_id: str) -> ErrorCode:
        """Whether the producer's transaction holds the group (its __consumer_offsets
        partition), asked of the remote coordinator."""
        node = self._remote(transactional_id)
        if node is None:
            return E.NOT_COORDINATOR
        tp = (OFFSETS_TOPIC, self.groups.shard_for(group_id))
        return (await self.ask(node, transactional_id, producer_id, producer_epoch, (tp,), add=False))[tp]
