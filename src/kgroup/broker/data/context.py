"""What the data-path handlers share: the arrival watch, the handler context, the cluster view.

How this works: every data-path handler (metadata_api, produce_api, fetch_api,
list_offsets_api, topics_api) is a function of a `DataContext` (config, data dir,
durability, arrival watch) and the decoded kio request. Handlers never raise for a bad
topic, partition or a storage failure: those become per-item error codes (Kafka's `ErrorCode`), logged on
"kgroup.broker.data".

In a cluster a partition is served by the node that owns it (broker/cluster/ownership.py): a
request for one owned elsewhere, or one this node lost while answering, gets
NOT_LEADER_OR_FOLLOWER (`NOT_LEADER`, the storage errors that mean it), and Metadata names
the owners (`ClusterView`; a single broker is `SingleNode`).

`ArrivalWatch` is the long-poll doorbell: a fetch that has fewer than MinBytes waits on the
partitions it asked for, and a produce (or a topic deletion) rings the partitions it
touched. Each waiter is one future registered under every partition key it watches, so one
ring wakes it no matter which partition got data.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kgroup.broker.config import BrokerConfig
from kgroup.broker.durability import Durability
from kgroup.broker.data.fetch_sessions import FetchSessionCache
from kgroup.broker.data.producer_states import ProducerStates
from kgroup.storage import DataDir
from kgroup.storage.errors import FencedError, LogHandedOverError, NotOwnedError
from kgroup.wire.kio_build import build, item

log = logging.getLogger("kgroup.broker.data")


PartitionKey = tuple[str, int]

# Storage errors that mean "this node does not (or no longer) serve this partition" (a log
# closed by a hand-over among them; a log closed or failed otherwise is a storage error).
NOT_LEADER = (NotOwnedError, FencedError, LogHandedOverError)


class ClusterView(Protocol):
    """Who serves what, as the data path needs to know it."""

    def leader(self, slot: int) -> int | None:
        """The node that leads the partition of unit `slot`, or None while it moves."""

    def brokers(self) -> dict[int, tuple[str, int]]:
        """The nodes clients may talk to, with their addresses."""

    def fenced(self) -> None:
        """A write was refused by an ownership fence: look at this node's units again."""


class SingleNode:
    """A broker on its own: it leads everything."""

    def __init__(self, config: BrokerConfig) -> None:
        self.node_id = config.node_id
        self.address = config.advertised

    def leader(self, slot: int) -> int | None:
        return self.node_id

    def brokers(self) -> dict[int, tuple[str, int]]:
        return {self.node_id: self.address}

    def fenced(self) -> None:
        pass


def per_partition(cls: type, request_topics: Iterable[Any], answer: Callable[[str, Any], dict]) -> tuple:
    """The ``topics`` of response ``cls``: each requested partition answered with the fields
    ``answer(topic name, requested partition)`` returns (Kafka answers by partition: a topic
    that names none is not in its answer)."""
    topic_cls = item(cls, "topics")
    part_cls = item(topic_cls, "partitions")
    return tuple(build(topic_cls, name=t.name, partitions=tuple(build(part_cls, **answer(t.name, p))
                                                                for p in t.partitions))
                 for t in request_topics if t.partitions)


def per_partition_keyed(cls: type, request_topics: Iterable[Any], answer: Callable[[str, Any], dict],
                        duplicate: Callable[[str, Any], dict] | None = None) -> tuple:
    """As `per_partition`, for APIs whose answer Kafka keys by (topic, partition): a topic
    named twice is answered once with the partitions of both, and a partition named twice
    once — with ``duplicate(topic, partition)``'s fields, or (None) as its last naming asks."""
    named: dict[str, dict[int, list[Any]]] = {}
    for t in request_topics:
        for p in t.partitions:
            named.setdefault(t.name, {}).setdefault(int(p.partition_index), []).append(p)
    topic_cls = item(cls, "topics")
    part_cls = item(topic_cls, "partitions")
    return tuple(build(topic_cls, name=name, partitions=tuple(
        build(part_cls, **(duplicate(name, asks[-1]) if duplicate and len(asks) > 1 else answer(name, asks[-1])))
        for asks in parts.values()))
        for name, parts in named.items())


class ArrivalWatch:
    """Wake long-polling fetches when data arrives on a partition they watch."""

    def __init__(self) -> None:
        self._waiters: dict[PartitionKey, set[asyncio.Future[None]]] = {}
        self.closed = False

    async def wait(self, keys: Iterable[PartitionKey], timeout_s: float) -> bool:
        """Wait until one of `keys` is rung, the watch closes, or `timeout_s` passes.
        Returns True when woken by a ring or close, False on timeout."""
        if self.closed:
            return True
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        watched = list(dict.fromkeys(keys))
        for key in watched:
            self._waiters.setdefault(key, set()).add(fut)
        try:
            done, _ = await asyncio.wait((fut,), timeout=max(timeout_s, 0.0))
            return bool(done)
        finally:
            if not fut.done():
                fut.cancel()
            for key in watched:
                waiting = self._waiters.get(key)
                if waiting is not None:
                    waiting.discard(fut)
                    if not waiting:
                        del self._waiters[key]

    def ring(self, key: PartitionKey) -> None:
        """Data arrived on (or the fate changed of) partition `key`."""
        for fut in self._waiters.pop(key, ()):
            if not fut.done():
                fut.set_result(None)

    def close(self) -> None:
        """Wake every waiter; later waits return at once."""
        self.closed = True
        waiting, self._waiters = self._waiters, {}
        for futs in waiting.values():
            for fut in futs:
                if not fut.done():
                    fut.set_result(None)

    @property
    def waiting(self) -> int:
        """How many distinct waiters are registered (for tests)."""
        return len({id(f) for futs in self._waiters.values() for f in futs})


# Asks the transaction coordinator whether a producer may write partitions now (KIP-890):
# (transactional id, producer id, epoch, partitions) -> an ErrorCode (NONE: yes).
TxnVerifier = Callable[[str, int, int, tuple], Any]


@dataclass
class DataContext:
    """Everything a data-path handler may use."""

    config: BrokerConfig
    data: DataDir
    durability: Durability
    watch: ArrivalWatch = field(default_factory=ArrivalWatch)
    cluster: ClusterView | None = None
    # Producer state of each partition (idempotence, transactions, the last stable offset).
    producers: ProducerStates = field(default_factory=ProducerStates)
    verify_txn: TxnVerifier | None = None
    # Adds a transaction.version 2 producer's partitions to its transaction before a produce
    # (KIP-890 part 2; txn/implicit_add.py): (produce version, transactional id, request).
    add_to_txn: Callable[[int, str | None, Any, list[str | None]], Awaitable[None]] | None = None
    # This broker's fetch sessions (KIP-227; fetch_sessions.py).
    fetch_sessions: FetchSessionCache = field(default_factory=FetchSessionCache)

    def __post_init__(self) -> None:
        if self.cluster is None:
            self.cluster = SingleNode(self.config)

    async def join_txn(self, version: int, transactional_id: str | None, request: Any,
                       names: list[str | None]) -> None:
        """Before a produce: a transaction.version 2 producer's partitions join its
        transaction (KIP-890 part 2, txn/implicit_add.py); nothing for anyone else."""
        if self.add_to_txn is not None and transactional_id:
            await self.add_to_txn(version, transactional_id, request, names)
