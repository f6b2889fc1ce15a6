"""KIP-890 part 2: a transaction.version 2 producer's Produce adds its partitions itself.

A TV2 producer (one that negotiated Produce v12+, which a Java client sends only when the
broker finalizes transaction.version 2) sends no AddPartitionsToTxn: the partition leader
adds each partition of a transactional batch to the producer's transaction before it
appends (Kafka's ReplicaManager asks the coordinator with AddPartitionsToTxn v5, not
verify-only). Here the produce path calls `add_for_produce` first; the coordinator adds the
partitions as an AddPartitionsToTxn v5 would (recording transaction.version 2, starting the
transaction if none is in flight). Whatever it refuses (a fenced epoch, a transaction
completing) is then refused by the produce path's own verification (KIP-890 part 1), which
gives the Produce answer Kafka gives. Older Produce versions are left to that verification
alone: their producer added the partitions itself.
"""

from __future__ import annotations

from typing import Any

from kgroup.batch_layout import ATTRIBUTES_AT, HEADER, HEADER_SIZE, TRANSACTIONAL_BIT
from kgroup.broker.groups.group_api import GroupApi
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.transactions import messages as tm

# The first Produce version a transaction.version 2 client sends (KIP-890 part 2).
FIRST_TV2_PRODUCE = 12


def transactional_writes(request: Any, names: list[str | None]) -> dict[tuple[int, int], tuple[tuple[str, int], ...]]:
    """(producer id, epoch) -> the partitions whose first batch is transactional, by peeking
    at each partition's first batch header (the produce path validates it afterwards).
    `names` are the request topics' names in order (Produce v13 names topics by id: the
    produce path resolved them; an unknown id, None, is answered UNKNOWN_TOPIC_ID there)."""
    found: dict[tuple[int, int], list[tuple[str, int]]] = {}
    for t, name in zip(request.topic_data, names):
        if name is None:
            continue
        for p in t.partition_data:
            blob = p.records
            if blob is None or len(blob) < HEADER_SIZE or not blob[ATTRIBUTES_AT + 1] & TRANSACTIONAL_BIT:
                continue
            fields = HEADER.unpack_from(bytes(blob[:HEADER_SIZE]))
            producer_id, epoch = fields[9], fields[10]
            found.setdefault((producer_id, epoch), []).append((name, int(p.index)))
    return {k: tuple(dict.fromkeys(v)) for k, v in found.items()}


async def add_for_produce(groups: GroupApi, version: int, transactional_id: str | None, request: Any,
                          names: list[str | None]) -> None:
    """Add the partitions of a TV2 producer's transactional batches to its transaction."""
    if version < FIRST_TV2_PRODUCE or not transactional_id:
        return
    for (producer_id, epoch), partitions in transactional_writes(request, names).items():
        shard = groups.shard_of(transactional_id)
        if not shard.loaded:
            return      # the verification answers COORDINATOR_LOAD_IN_PROGRESS (retriable)
        if shard.coordinator.verify_txn(transactional_id, producer_id, epoch, partitions) is ErrorCode.NONE:
            continue    # already in the transaction: nothing to write (the common case)
        try:
            await shard.call(shard.coordinator.add_partitions_to_txn, tm.AddPartitionsToTxnRequest(
                transactional_id, producer_id, epoch, partitions, client_version=2))
        except GroupError:
            pass        # refused: the produce path's verification answers it, as Kafka would
