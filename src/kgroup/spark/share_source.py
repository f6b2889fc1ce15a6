"""format("kgroup-share"): streaming ingestion through a share group (KIP-932).

    df = (spark.readStream.format("kgroup-share")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "jobs").option("group.id", "job-runners").load())

Several queries (in one application or many) with the same group.id consume the same
partitions together, as the share consumers of a queue: each record goes to one of them at a
time. The columns are the kgroup source's plus ``deliveryCount`` (int): how many times the
group has handed the record out, 1 the first time.

How this works: Spark keeps the stream reader on the driver for the whole query, and it is
the query's member of the share group (kgroup's ``ShareConsumer``, explicit
acknowledgement). Planning a micro-batch (``latestOffset``) acquires records with one
ShareFetch — about ``maxRecordsPerTrigger`` (default 10,000; like a share consumer's
max.poll.records a soft limit, as the broker hands out whole record batches) — and keeps them under the
batch's number; the stream offset Spark checkpoints is just that number. The batch's tasks
(``partitions``: the acquired records cut into ``numPartitions`` pieces, default 2) get the records themselves, so the executors never fetch: however many
there are, a record is in one task of one batch. Acknowledgement waits for Spark: Spark asks
for the next batch only after the previous one is done — its sink committed and its commit
log written — so ``latestOffset`` first acknowledges (ACCEPT) every record of the batches up
to the start it is given, then acquires the next ones (``commit`` does the same when Spark
calls it). Acquisition happens on the driver because only the member that acquired a record
can acknowledge it, over its share session, and only the driver learns that a micro-batch
committed; an executor's member would have no one to tell it.

Failure: a task that fails fails its micro-batch (Spark's default of one attempt on a local
master; with retries, the retried task gets the same records again). The query stops, and
its reader's ``stop`` releases (RELEASE) every record acquired and not accepted, so the group
hands them out again at once, with their delivery count raised — to another query, or to
this one restarted. A driver that dies without ``stop`` holds them until the acquisition
lock times out (the group's share.record.lock.duration.ms, 30 s by default); after that the
group hands them out again just the same. A restarted query re-runs the batch Spark had
planned but not committed, and finds it empty: its records were released and belong to
whoever acquires them next.

What "exactly once in the output" rests on, precisely: (1) the sink commits each micro-batch
atomically and once (the file sinks and foreachBatch keyed by batch id do; Kafka sinks do
not); (2) a record is accepted only after its batch's commit, so a failed batch's records are
never lost; (3) a released record is handed to one member at a time, so the redelivery lands
in one batch of one query; (4) a re-planned batch after a restart reads nothing. It is at
least once in two windows that no share consumer can close: the driver dies after the sink
committed a batch and before the next ``latestOffset`` acknowledged it (the records come
back after the lock times out and are written again, with a higher ``deliveryCount``), and a
batch that takes longer than the lock duration (the group hands its records out again while
it runs; their acknowledgement then fails and is logged). ``deliveryCount`` > 1 marks every
record that may have been written before, so a consumer of the output can drop those
duplicates by (topic, partition, offset).

Records are RELEASEd, never REJECTed: a record that keeps failing is delivered until the
group's share.delivery.count.limit (5 by default), and then archived by the broker.
The group's share.auto.offset.reset (``kgroup groups alter-config``) says where a new group
starts: latest by default, as in Kafka.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from kgroup.client.blocking import LoopThread
from kgroup.client.share_consumer import AcknowledgeType, ShareConsumer, ShareRecord

from .driver_side import DriverSide
from .options import OptionError, source_options

log = logging.getLogger(__name__)

SHARE_DDL = ("key binary, value binary, topic string, partition int, offset bigint, "
             "timestamp timestamp, timestampType int, "
             "headers array<struct<key:string,value:binary>>, deliveryCount int")
DEFAULT_MAX_RECORDS = 10_000
_POLL_S = 1.0                       # how long planning waits for records before "nothing new"

Row = tuple[str, int, int, int, Any, Any, tuple, int]   # topic, partition, offset, ts, key, value, headers, count


@dataclass(frozen=True, slots=True)
class ShareOptions:
    bootstrap: str
    topics: tuple[str, ...]
    group_id: str
    max_records: int
    num_partitions: int | None
    consumer: Mapping[str, Any]


def share_options(raw: Mapping[str, str]) -> ShareOptions:
    """The options of format("kgroup-share"); OptionError names the first bad one."""
    opts = {str(k).lower(): v for k, v in raw.items()}
    own = {k: opts.pop(k) for k in ("maxrecordspertrigger", "numpartitions") if k in opts}
    if opts.get("subscribepattern") or opts.get("assign"):
        raise OptionError("format kgroup-share reads what its share group assigns: use option subscribe")
    if opts.get("startingoffsets") or opts.get("endingoffsets") or opts.get("group.mode"):
        raise OptionError("format kgroup-share starts where its share group is (the group's "
                          "share.auto.offset.reset); options startingOffsets, endingOffsets and "
                          "group.mode do not apply")
    base = source_options(opts)
    if not base.group_id:
        raise OptionError("format kgroup-share needs option group.id: the share group to consume in")
    max_records = _count(own, "maxrecordspertrigger", "maxRecordsPerTrigger") or DEFAULT_MAX_RECORDS
    return ShareOptions(base.bootstrap, base.subscribe, base.group_id, max_records,
                        _count(own, "numpartitions", "numPartitions"), dict(base.consumer))


def _count(opts: Mapping[str, str], key: str, name: str) -> int | None:
    if key not in opts:
        return None
    try:
        value = int(str(opts[key]).strip())
    except ValueError:
        raise OptionError(f"option {name}: {opts[key]!r} is not a whole number") from None
    if value <= 0:
        raise OptionError(f"option {name}: must be at least 1 (got {value})")
    return value


class KgroupShareDataSource(DataSource):
    """format("kgroup-share"): readStream only."""

    @classmethod
    def name(cls) -> str:
        return "kgroup-share"

    def schema(self) -> str:
        share_options(self.options)
        return SHARE_DDL

    def streamReader(self, schema: Any) -> ShareStreamReader:
        return ShareStreamReader(share_options(self.options))


class ShareInputPartition(InputPartition):
    """One task's records (rows, as ``Row`` tuples)."""


class ShareStreamReader(DriverSide["ShareMember"], DataSourceStreamReader):
    """See the module comment. The driver-side member (``driver``) is made on first use,
    never pickled."""

    opts: ShareOptions

    def _make_driver(self) -> ShareMember:
        return ShareMember(self.opts)

    def initialOffset(self) -> dict:
        return {"batch": 0}

    def latestOffset(self, start: dict | None = None, limit: Any = None) -> dict:
        return self.driver.plan(int((start or {}).get("batch", 0)))

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        rows = self.driver.rows_of(int(end["batch"])) if int(end["batch"]) > int(start["batch"]) else []
        if not rows:
            return []
        pieces = self.opts.num_partitions or 2
        pieces = max(1, min(pieces, len(rows)))
        step, extra = divmod(len(rows), pieces)
        out, lo = [], 0
        for i in range(pieces):
            hi = lo + step + (1 if i < extra else 0)
            out.append(ShareInputPartition(rows[lo:hi]))
            lo = hi
        return out

    def read(self, partition: InputPartition) -> Any:
        from .schema import share_rows_to_arrow

        rows = partition.value
        if rows:
            yield share_rows_to_arrow(rows)

    def commit(self, end: dict) -> None:
        self.driver.accept_through(int(end["batch"]))


class ShareMember:
    """The query's share-group member on the driver: acquires per batch, accepts after commit."""

    def __init__(self, opts: ShareOptions) -> None:
        self.opts = opts
        self.loop = LoopThread("kgroup-spark-share")
        settings = {"client.id": "kgroup-spark-share", **opts.consumer,
                    "bootstrap.servers": opts.bootstrap, "group.id": opts.group_id,
                    "share.acknowledgement.mode": "explicit", "max.poll.records": opts.max_records}
        self.consumer = ShareConsumer(settings)
        self._lock = threading.Lock()
        self._held: dict[int, list[ShareRecord]] = {}      # batch number -> its records
        self._last = 0                                       # the last batch number planned

        async def start() -> None:
            await self.consumer.__aenter__()
            self.consumer.subscribe(list(opts.topics))

        self.loop.run(start())

    def plan(self, start: int) -> dict:
        """Accept the batches up to ``start`` (done), then acquire the next batch's records."""
        self.accept_through(start)
        with self._lock:
            if self._held:
                # A batch planned and not done (Spark re-plans after a failure): keep it.
                return {"batch": max(self._held)}
        records = self.loop.run(self.consumer.poll(_POLL_S))
        if not records:
            return {"batch": start}
        with self._lock:
            self._last = max(self._last, start) + 1
            self._held[self._last] = list(records)
            return {"batch": self._last}

    def rows_of(self, batch: int) -> list[Row]:
        with self._lock:
            records = self._held.get(batch, [])
        return [(r.topic, r.partition, r.offset, r.timestamp, r.key, r.value, tuple(r.headers),
                 r.delivery_count) for r in records]

    def accept_through(self, batch: int) -> None:
        with self._lock:
            done = [n for n in self._held if n <= batch]
            records = [r for n in sorted(done) for r in self._held.pop(n)]
        if records:
            self._acknowledge(records, AcknowledgeType.ACCEPT)

    def _acknowledge(self, records: list[ShareRecord], kind: AcknowledgeType) -> None:
        for r in records:
            self.consumer.acknowledge(r, kind)
        failed = {tp: err for tp, err in self.loop.run(self.consumer.commit_sync()).items() if err is not None}
        if failed:
            log.warning("kgroup-share: %s of %d records failed for %s (their acquisition lock may have "
                        "timed out: they are delivered again)", kind.name, len(records), failed)

    def close(self) -> None:
        """Release what is acquired and not accepted, leave the group."""
        try:
            with self._lock:
                records = [r for n in sorted(self._held) for r in self._held.pop(n)]
            if records:
                self._acknowledge(records, AcknowledgeType.RELEASE)
            self.loop.run(self.consumer.close(), timeout=10)
        except Exception as exc:  # noqa: BLE001 - stopping: the lock timeout releases the rest
            log.warning("kgroup-share: closing the share member failed (%s); records it held are "
                        "released when their acquisition lock times out", exc)
        finally:
            self.loop.close()
