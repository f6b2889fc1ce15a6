"""The console's topic view: a topic's partitions, and its records from an offset or a time.

    GET  /api/topics                       every topic: name, partitions (as /api/groups, open)
    POST /api/topics/{topic}/records       {"partition": P, "offset": O | "timestamp_ms": T,
                                            "limit": N}
        Up to N (at most MAX_RECORDS) records of partition P from offset O (clamped to the
        log), or from the first record at or after T (epoch ms; ListOffsets, as
        kafka-console-consumer's --offset and kafka-get-offsets' --time find it):
        {"topic", "partition", "start_offset", "next_offset", "log_start", "log_end",
         "records": [{"partition", "offset", "timestamp", "key", "value", "headers"}]}
        with keys, values and header values as text when they are UTF-8, else
        {"base64": ...}; null stays null.

Records are read with a Fetch through the broker's request path as the principal auth.py
names (READ on the topic when the authorizer is on, as for any consumer); a POST, so a
broker with SASL asks for credentials before it shows any record. Transaction markers are
skipped; uncommitted records are shown (read_uncommitted, Kafka's console consumer's default).
"""

from __future__ import annotations

import base64
from datetime import timedelta
from typing import Any

from kgroup.broker.observe.console.actions import EARLIEST, LATEST, Problem, kafka_problem
from kgroup.broker.observe.console.auth import Actor
from kgroup.broker.observe.console.kafka_calls import KafkaCalls
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.errors import WireError
from kgroup.wire.record_batch import decode_records, split_batches

MAX_RECORDS = 500
FETCH_BYTES = 1 << 20


def shown(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode()}


class RecordBrowser:
    def __init__(self, calls: KafkaCalls, topics: Any) -> None:
        self.calls = calls
        self.topics = topics           # () -> name -> metadata with .partitions (DataDir.topics)

    def listing(self) -> dict[str, Any]:
        return {"topics": [{"topic": name, "partitions": meta.partitions}
                           for name, meta in sorted(self.topics().items()) if not name.startswith("__")]}

    async def records(self, actor: Actor, topic: str, args: dict[str, Any]) -> dict[str, Any]:
        partition, limit = args.get("partition", 0), args.get("limit", 50)
        offset, timestamp = args.get("offset"), args.get("timestamp_ms")
        for name, value in (("partition", partition), ("limit", limit), ("offset", offset),
                            ("timestamp_ms", timestamp)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise Problem(400, f"\"{name}\" is a whole number, 0 or more")
        meta = self.topics().get(topic)
        if meta is None:
            raise Problem(404, f"no topic {topic!r}")
        if partition >= meta.partitions:
            raise Problem(404, f"topic {topic!r} has partitions 0 to {meta.partitions - 1}")
        limit = max(1, min(limit, MAX_RECORDS))
        start, end = (await self._offset(actor, topic, partition, EARLIEST),
                      await self._offset(actor, topic, partition, LATEST))
        if timestamp is not None:
            found = await self._offset(actor, topic, partition, timestamp)
            at = end if found < 0 else found
        else:
            at = max(start, min(end, offset if offset is not None else start))
        records = await self._read(actor, topic, partition, at, end, limit)
        return {"topic": topic, "partition": partition, "start_offset": at,
                "next_offset": records[-1]["offset"] + 1 if records else at,
                "log_start": start, "log_end": end, "records": records}

    async def _offset(self, actor: Actor, topic: str, partition: int, timestamp: int) -> int:
        response = await self.calls(actor, ApiKey.LIST_OFFSETS, 7, replica_id=-1, isolation_level=0, topics=[
            {"name": topic, "partitions": [{"partition_index": partition, "current_leader_epoch": -1,
                                            "timestamp": timestamp}]}])
        p = response.topics[0].partitions[0]
        if int(p.error_code):
            raise kafka_problem(int(p.error_code), f"listing offsets of {topic}-{partition}")
        return p.offset

    async def _read(self, actor: Actor, topic: str, partition: int, at: int, end: int,
                    limit: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while at < end and len(out) < limit:
            response = await self.calls(
                actor, ApiKey.FETCH, 12, replica_id=-1, max_wait=timedelta(0), min_bytes=0,
                max_bytes=FETCH_BYTES, isolation_level=0, session_id=0, session_epoch=-1, rack_id="",
                topics=[{"topic": topic, "partitions": [{
                    "partition": partition, "current_leader_epoch": -1, "fetch_offset": at,
                    "last_fetched_epoch": -1, "log_start_offset": -1, "partition_max_bytes": FETCH_BYTES}]}])
            if int(response.error_code):
                raise kafka_problem(int(response.error_code), f"reading {topic}-{partition}")
            p = response.responses[0].partitions[0]
            if int(p.error_code):
                raise kafka_problem(int(p.error_code), f"reading {topic}-{partition}")
            before = at
            try:
                for batch in split_batches(p.records or b""):
                    last = batch.header.base_offset + batch.header.last_offset_delta
                    if not batch.header.is_control:
                        for r in decode_records(batch):
                            if r.offset >= at and len(out) < limit:
                                out.append({"partition": partition, "offset": r.offset, "timestamp": r.timestamp,
                                            "key": shown(r.key), "value": shown(r.value),
                                            "headers": [[k, shown(v)] for k, v in r.headers]})
                    at = max(at, last + 1)
            except WireError as exc:
                raise Problem(500, f"reading {topic}-{partition} at {at}: {exc}") from None
            if at == before:
                break                      # nothing more to read (a gap, or the end)
        return out
