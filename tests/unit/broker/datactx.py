"""A test context for DataPath: a real DataDir on tmp_path, kio requests built by name.

Every call goes through `DataCtx.call`, which also encodes the response with the wire
layer and decodes it back, so every response a scenario sees is proven encodable for the
version it was asked in.
"""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from kgroup.broker.config import BrokerConfig
from kgroup.broker.data.data_path import DataPath
from kgroup.broker.durability import Durability
from kgroup.wire.kio_build import build, item
from kgroup.storage import DataDir, FsyncPolicy
from kgroup.wire import (
    RequestHeader,
    decode_response,
    encode_response,
    is_flexible,
    request_class,
)
from kgroup.wire.record_batch import build_batch

from tests.unit.closing import closed_after_test

PRODUCE, FETCH, LIST_OFFSETS, METADATA = 0, 1, 2, 3
CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 19, 20, 37

_METHODS = {
    PRODUCE: "produce", FETCH: "fetch", LIST_OFFSETS: "list_offsets", METADATA: "metadata",
    CREATE_TOPICS: "create_topics", DELETE_TOPICS: "delete_topics",
    CREATE_PARTITIONS: "create_partitions",
}


def batch(n: int, ts: int = 1_000, tag: bytes = b"v") -> bytes:
    """A v2 batch of n records with timestamps ts, ts+1, ..."""
    return build_batch([(None, tag + b"%d" % i, [], ts + i) for i in range(n)])


class DataCtx:
    def __init__(self, path: Path, fsync: str = "always", **config: Any) -> None:
        self.config = BrokerConfig(data_dir=str(path), **config)
        self.data = closed_after_test(DataDir(path))   # scenarios drop contexts to stand for kill -9
        self.durability = Durability(FsyncPolicy.parse(fsync))
        self.changes = 0
        self.dp = DataPath(self.config, self.data, self.durability, on_topics_changed=self._changed)
        closed_after_test(self.dp.watch)
        self._corr = itertools.count(1)

    def _changed(self) -> None:
        self.changes += 1

    async def call(self, key: int, version: int, request: Any) -> Any:
        header = RequestHeader(key, version, next(self._corr), "test", is_flexible(key, version))
        response = await getattr(self.dp, _METHODS[key])(header, request)
        if response is not None:
            frame = encode_response(header, response)
            corr, decoded = decode_response(key, version, frame[4:])
            assert corr == header.correlation_id
            assert type(decoded) is type(response)
        return response

    # -- request builders ---------------------------------------------------------------

    async def metadata(self, version: int, names: list[str] | None, auto: bool = True,
                       ids: list[uuid.UUID] = ()) -> Any:
        cls = request_class(METADATA, version)
        topics = None
        if names is not None:
            tcls = item(cls, "topics")
            topics = tuple(build(tcls, name=n, topic_id=uuid.UUID(int=0)) for n in names)
            topics += tuple(build(tcls, name=None, topic_id=i) for i in ids)
        return await self.call(METADATA, version, build(
            cls, topics=topics, allow_auto_topic_creation=auto,
            include_cluster_authorized_operations=False, include_topic_authorized_operations=False))

    async def produce(self, version: int, data: dict[str, dict[int, bytes | None]],
                      acks: int = -1, transactional_id: str | None = None) -> Any:
        """Produce {topic: {partition: records}}; v13+ by topic id (a topic that does not
        exist by an id no topic has)."""
        cls = request_class(PRODUCE, version)
        tcls = item(cls, "topic_data")
        pcls = item(tcls, "partition_data")
        ids = self.dp.topic_ids()
        return await self.call(PRODUCE, version, build(
            cls, acks=acks, timeout=30_000, transactional_id=transactional_id, topic_data=tuple(
            build(tcls, name=t, topic_id=ids.get(t) or uuid.uuid5(uuid.NAMESPACE_URL, t),
                  partition_data=tuple(build(pcls, index=p, records=r) for p, r in parts.items()))
            for t, parts in data.items())))

    async def fetch(self, version: int, topics: dict[str, list[tuple[int, int]]], **options: Any) -> Any:
        """Fetch through the DataPath; `options` as for `fetch_request`."""
        return await self.call(FETCH, version, self.fetch_request(version, topics, **options))

    def fetch_request(self, version: int, topics: dict[str, list[tuple[int, int]]], *,
                      max_wait: int = 0, min_bytes: int = 1, max_bytes: int = 50 << 20,
                      partition_max_bytes: int = 1 << 20, session_id: int = 0,
                      session_epoch: int = -1, by_id: dict[str, uuid.UUID] | None = None,
                      isolation: int = 0, forgotten: dict[str, list[int]] | None = None) -> Any:
        """A Fetch request of `version` for {topic: [(partition, offset)]}, dropping the
        `forgotten` {topic: [partition]} from its session."""
        cls = request_class(FETCH, version)
        tcls = item(cls, "topics")
        pcls = item(tcls, "partitions")
        ids = by_id if by_id is not None else self.dp.topic_ids()
        fcls = item(cls, "forgotten_topics_data") if version >= 7 else None
        return build(
            cls, max_wait=max_wait, min_bytes=min_bytes, max_bytes=max_bytes, isolation_level=isolation,
            session_id=session_id, session_epoch=session_epoch, forgotten_topics_data=tuple(
                build(fcls, topic=t, topic_id=ids.get(t, uuid.UUID(int=0)), partitions=tuple(ps))
                for t, ps in (forgotten or {}).items()),
            topics=tuple(
                build(tcls, topic=t, topic_id=ids.get(t, uuid.UUID(int=0)), partitions=tuple(
                    build(pcls, partition=p, fetch_offset=o, partition_max_bytes=partition_max_bytes)
                    for p, o in parts))
                for t, parts in topics.items()))

    async def list_offsets(self, version: int, topic: str, parts: list[tuple[int, int]],
                           isolation: int = 0) -> Any:
        cls = request_class(LIST_OFFSETS, version)
        tcls = item(cls, "topics")
        pcls = item(tcls, "partitions")
        return await self.call(LIST_OFFSETS, version, build(
            cls, replica_id=-1, isolation_level=isolation, topics=(build(tcls, name=topic, partitions=tuple(
                build(pcls, partition_index=p, timestamp=ts) for p, ts in parts)),)))

    async def list_offsets_each(self, version: int, topic: str, parts: list[tuple[int, int]],
                                isolation: int = 0) -> list[Any]:
        """The partition answers of one ListOffsets request per (partition, timestamp): a
        request naming a partition twice is refused (INVALID_REQUEST), as Kafka refuses it."""
        out = []
        for part in parts:
            r = await self.list_offsets(version, topic, [part], isolation)
            out += [p for t in r.topics for p in t.partitions]
        return out

    async def create_topics(self, version: int, topics: list[dict[str, Any]],
                            validate_only: bool = False) -> Any:
        cls = request_class(CREATE_TOPICS, version)
        tcls = item(cls, "topics")
        ccls = item(tcls, "configs")
        acls = item(tcls, "assignments")
        built = []
        for t in topics:
            built.append(build(
                tcls, name=t["name"], num_partitions=t.get("partitions", -1),
                replication_factor=t.get("replication", -1),
                assignments=tuple(build(acls, partition_index=i, broker_ids=tuple(b))
                                  for i, b in enumerate(t.get("assignments", ()))),
                configs=tuple(build(ccls, name=k, value=v) for k, v in t.get("configs", {}).items())))
        return await self.call(CREATE_TOPICS, version, build(
            cls, topics=tuple(built), timeout=30_000, validate_only=validate_only))

    async def delete_topics(self, version: int, names: list[str] = (),
                            ids: list[uuid.UUID] = ()) -> Any:
        cls = request_class(DELETE_TOPICS, version)
        if version >= 6:
            tcls = item(cls, "topics")
            topics = tuple(build(tcls, name=n, topic_id=uuid.UUID(int=0)) for n in names)
            topics += tuple(build(tcls, name=None, topic_id=i) for i in ids)
            return await self.call(DELETE_TOPICS, version, build(cls, topics=topics, timeout=30_000))
        return await self.call(DELETE_TOPICS, version, build(cls, topic_names=tuple(names), timeout=30_000))

    async def create_partitions(self, version: int, topics: dict[str, int],
                                assignments: dict[str, list[list[int]]] | None = None,
                                validate_only: bool = False) -> Any:
        cls = request_class(CREATE_PARTITIONS, version)
        tcls = item(cls, "topics")
        acls = item(tcls, "assignments")
        assignments = assignments or {}
        return await self.call(CREATE_PARTITIONS, version, build(
            cls, timeout=30_000, validate_only=validate_only, topics=tuple(
                build(tcls, name=n, count=c, assignments=(
                    tuple(build(acls, broker_ids=tuple(b)) for b in assignments[n])
                    if n in assignments else None))
                for n, c in topics.items())))


def run(path: Path, scenario: Callable[[DataCtx], Awaitable[Any]], **kwargs: Any) -> Any:
    """Run `scenario(ctx)` on a fresh context inside asyncio.run, then close everything."""

    async def main() -> Any:
        ctx = DataCtx(path / "data", **kwargs)
        ctx.durability.start()
        try:
            return await scenario(ctx)
        finally:
            ctx.dp.close()
            await ctx.durability.close()
            ctx.data.close()

    return asyncio.run(main())


def codes(response: Any, key: int) -> list[int]:
    """Per-item error codes of a response, flattened in order."""
    if key == PRODUCE:
        return [int(p.error_code) for t in response.responses for p in t.partition_responses]
    if key == FETCH:
        return [int(p.error_code) for t in response.responses for p in t.partitions]
    if key == LIST_OFFSETS:
        return [int(p.error_code) for t in response.topics for p in t.partitions]
    if key == METADATA:
        return [int(t.error_code) for t in response.topics]
    if key == CREATE_TOPICS:
        return [int(t.error_code) for t in response.topics]
    if key == DELETE_TOPICS:
        return [int(t.error_code) for t in response.responses]
    return [int(t.error_code) for t in response.results]
