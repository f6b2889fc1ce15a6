"""The admin client's record calls: ListOffsets, Produce, Fetch and DeleteRecords.

``RecordsAdmin`` is a part of ``AdminClient`` (it works over ``self.cluster``): each request
goes to the partition's leader, and a leader that moves is followed until the request
timeout (``ClusterClient.retrying``). Produce sends one batch; Fetch decodes what it gets
into ``FetchedRecord``s, for tools (the CLI's ``consume``), not for throughput.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kgroup.error_codes import ErrorCode
from kgroup.wire.api_keys import ApiKey

from .cluster import Recovery, Route, recovery, request_fields
from .errors import error_code_of, raise_for

if TYPE_CHECKING:
    from .cluster import ClusterClient

EARLIEST = -2
LATEST = -1


@dataclass(frozen=True, slots=True)
class FetchedRecord:
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(slots=True)
class FetchedPartition:
    partition: int
    records: list[FetchedRecord] = field(default_factory=list)
    high_watermark: int = -1
    error: ErrorCode = ErrorCode.NONE


class RecordsAdmin:
    """Offsets, records and their deletion (see the module comment)."""

    cluster: ClusterClient

    # -- data path ----------------------------------------------------------------------

    async def list_offsets(
        self, topic: str, partitions: Sequence[int] | None = None, spec: int = LATEST
    ) -> dict[int, int]:
        """partition -> offset for ``spec`` (EARLIEST, LATEST, or a timestamp in ms).

        A timestamp past the last record gives -1 (no such offset), as in Kafka.
        """
        if partitions is None:
            partitions = [p.partition for p in (await self.describe_topic(topic)).partitions]
        wanted = list(partitions)
        cluster = self.cluster

        async def attempt() -> dict[int, int]:
            out: dict[int, int] = {}
            for leader, parts in (await cluster.leaders(topic, wanted)).items():
                resp = await cluster.request(
                    await cluster.node(leader),
                    ApiKey.LIST_OFFSETS,
                    request_fields(
                        replica_id=-1,
                        isolation_level=0,
                        topics=[{"name": topic, "partitions": [
                            {"partition_index": p, "current_leader_epoch": -1, "timestamp": spec}
                            for p in parts]}],
                    ),
                )
                for t in resp.topics:
                    for p in t.partitions:
                        index = int(p.partition_index)
                        cluster.check(error_code_of(p), f"list offsets of {t.name}-{index}",
                                      partitions=[(t.name, index)])
                        out[index] = int(p.offset)
            return out

        return await cluster.retrying(attempt)

    async def produce(
        self,
        topic: str,
        partition: int,
        records: Sequence[tuple[bytes | None, bytes | None]]
        | Sequence[tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes]], int]],
        *,
        acks: int = -1,
        timeout_ms: int = 30000,
    ) -> int:
        """Append ``records`` ((key, value) or (key, value, headers, ts_ms)) as one batch.

        Returns the base offset (-1 with acks=0, which gets no answer).
        """
        from kgroup.wire import record_batch  # see _records

        now = int(time.time() * 1000)
        rows = [r if len(r) == 4 else (r[0], r[1], (), now) for r in records]
        batch = record_batch.build_batch(rows)  # type: ignore[arg-type]
        body = request_fields(
            transactional_id=None,
            acks=acks,
            timeout=timeout_ms,
            topic_data=[{"name": topic, "partition_data": [{"index": partition,
                                                             "records": batch}]}],
        )
        cluster = self.cluster

        async def attempt() -> int:
            conn = await cluster.node(await cluster.leader(topic, partition))
            resp = await cluster.request(conn, ApiKey.PRODUCE, body)
            if resp is None:
                return -1
            for t in resp.responses:
                for p in t.partition_responses:
                    cluster.check(error_code_of(p), f"produce to {topic}-{p.index}",
                                  partitions=[(topic, partition)],
                                  message=getattr(p, "error_message", None))
                    return int(p.base_offset)
            return -1

        return await cluster.retrying(attempt)

    async def fetch(
        self, topic: str, partition: int, offset: int, *, max_wait_ms: int = 500,
        max_bytes: int = 1 << 20,
    ) -> FetchedPartition:
        """Records of one partition from ``offset`` (waits up to ``max_wait_ms`` for data)."""
        result = await self.fetch_many(topic, {partition: offset}, max_wait_ms=max_wait_ms,
                                       max_bytes=max_bytes)
        got = result[partition]
        raise_for(got.error, f"fetch {topic}-{partition} at offset {offset}")
        return got

    async def fetch_many(
        self, topic: str, offsets: Mapping[int, int], *, max_wait_ms: int = 500,
        max_bytes: int = 1 << 20,
    ) -> dict[int, FetchedPartition]:
        """Fetch several partitions of one topic; errors are reported per partition, except
        a moved leader, which is followed."""
        cluster = self.cluster

        async def attempt() -> dict[int, FetchedPartition]:
            out: dict[int, FetchedPartition] = {}
            for leader, parts in (await cluster.leaders(topic, sorted(offsets))).items():
                wanted = {p: offsets[p] for p in parts}
                out.update(await self._fetch_from(leader, topic, wanted, max_wait_ms, max_bytes))
            return out

        return await cluster.retrying(attempt)

    async def _fetch_from(self, leader: int, topic: str, wanted: Mapping[int, int],
                          max_wait_ms: int, max_bytes: int) -> dict[int, FetchedPartition]:
        cluster = self.cluster
        topic_id = cluster.topic_id(topic)
        resp = await cluster.request(
            await cluster.node(leader),
            ApiKey.FETCH,
            request_fields(
                replica_id=-1,
                max_wait=max_wait_ms,
                min_bytes=1,
                max_bytes=max_bytes,
                isolation_level=0,
                session_id=0,
                session_epoch=-1,
                topics=[{
                    "topic": topic,
                    "topic_id": topic_id,
                    "partitions": [
                        {"partition": p, "fetch_offset": off, "partition_max_bytes": max_bytes,
                         "current_leader_epoch": -1, "log_start_offset": -1,
                         "last_fetched_epoch": -1}
                        for p, off in sorted(wanted.items())
                    ],
                }],
                forgotten_topics_data=[],
                rack_id="",
            ),
            max_version=None if topic_id is not None else 12,
            timeout=cluster.timeout + max_wait_ms / 1000,
        )
        raise_for(error_code_of(resp), f"fetch from {topic}")
        out: dict[int, FetchedPartition] = {}
        for t in resp.responses:
            for p in t.partitions:
                index = int(p.partition_index)
                fp = FetchedPartition(index, high_watermark=int(p.high_watermark))
                out[index] = fp
                code = ErrorCode(error_code_of(p))
                if code is not ErrorCode.NONE:
                    fp.error = code
                    if recovery(code, Route.LEADER) is not Recovery.FAIL:
                        # The leader moved: fetch everything again from the new leaders.
                        cluster.check(code, f"fetch {topic}-{index}", partitions=[(topic, index)])
                    continue
                fp.records = _records(topic, index, bytes(p.records or b""), wanted[index])
        return out

    async def delete_records(self, topic: str, before: Mapping[int, int]) -> dict[int, int]:
        """DeleteRecords: partition -> new log start offset (-1 in ``before``: the log end)."""
        cluster = self.cluster

        async def attempt() -> dict[int, int]:
            out: dict[int, int] = {}
            for leader, parts in (await cluster.leaders(topic, sorted(before))).items():
                resp = await cluster.request(await cluster.node(leader), ApiKey.DELETE_RECORDS, request_fields(
                    timeout=30000, topics=[{"name": topic, "partitions": [
                        {"partition_index": p, "offset": before[p]} for p in parts]}]))
                for p in resp.topics[0].partitions:
                    index = int(p.partition_index)
                    cluster.check(error_code_of(p), f"delete records of {topic}-{index}", partitions=[(topic, index)])
                    out[index] = int(p.low_watermark)
            return out

        return await cluster.retrying(attempt)


def _records(topic: str, partition: int, blob: bytes, start: int) -> list[FetchedRecord]:
    # Imported here: the record codec (and crc32c, which loads importlib.metadata) is most of
    # what the admin client would load, and an admin that only lists offsets (Spark's stream
    # reader process, on every query's start) never builds or reads a batch.
    from kgroup.wire import record_batch

    out: list[FetchedRecord] = []
    for batch in record_batch.split_batches(record_batch.whole_batches(blob)):
        if batch.header.is_control:
            continue
        for r in record_batch.decode_records(batch):
            if r.offset >= start:
                out.append(FetchedRecord(topic, partition, r.offset, r.timestamp, r.key,
                                         r.value, r.headers))
    return out
