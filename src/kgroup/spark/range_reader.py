"""Reading one offset range in a Spark task, as Arrow record batches.

How this works: the task runs kgroup's own ``Consumer`` (no group: the partition is
assigned and sought to the range's start) on a ``LoopThread``, so the consumer keeps
fetching ahead while Spark takes the batches already handed over. Records at or past the
range's end are cut off. A range whose start is no longer in the log (deleted by
retention) is data loss: an error with ``failOnDataLoss`` (the default), else reading
starts at the earliest offset still there (checked once, when the task starts). Offsets that hold no record (control records,
compaction) are skipped; a range ends once the high watermark is past its end and
fetches come back empty. The consumer hands out columns, not records
(``kgroup.client.record_columns``): fetched batches become Arrow batches without a Python
object per record.

Consumers are kept between tasks: Spark reuses its Python workers, so a worker that has
read one range keeps its started consumer (and its connections) for the next task with the
same settings, instead of connecting, asking metadata and versions again — what every
micro-batch of a stream would otherwise pay once per task. A consumer is kept only after a
range ended cleanly, with no partition assigned (nothing is fetched while it waits).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

from kgroup.client import Consumer, TopicPartition
from kgroup.client.blocking import LoopThread
from kgroup.client.errors import KafkaClientError
from kgroup.client.record_columns import RecordColumns, read_as_columns

from .offsets import DataLossError, OffsetRange
from .options import SourceOptions
from .schema import columns_to_arrow

# Records handed over per Arrow batch, and how long a poll waits.
_BATCH = 20_000
_POLL_MS = 500
# Empty polls in a row, with the high watermark past the range, that end a range early.
_EMPTY_POLLS = 3
# Started consumers kept idle in this worker process, per settings, at most this many each.
_KEEP = 2
_idle: dict[tuple, list[tuple[LoopThread, Consumer]]] = {}
_idle_lock = threading.Lock()


def consumer_settings(opts: SourceOptions, client_id: str) -> dict[str, Any]:
    """Settings of a reading consumer: the user's kafka.* settings over ours."""
    return {"bootstrap.servers": opts.bootstrap, "client.id": client_id,
            "enable.auto.commit": False, "max.poll.records": _BATCH,
            "max.partition.fetch.bytes": 4 << 20, "fetch.max.wait.ms": 100,
            **opts.consumer, "auto.offset.reset": "earliest"}


def read_range(opts: SourceOptions, rng: OffsetRange) -> Iterator[Any]:
    """Arrow record batches of the records in ``rng``."""
    if rng.size <= 0:
        return
    settings = consumer_settings(opts, "kgroup-spark-read")
    key = tuple(sorted((k, str(v)) for k, v in settings.items()))
    with _idle_lock:
        kept = _idle.get(key)
        loop, consumer = kept.pop() if kept else (None, None)
    if loop is None or consumer is None:
        loop = LoopThread("kgroup-spark-read")
        consumer = Consumer(settings)
        read_as_columns(consumer)   # fetched batches straight to Arrow columns
    tp = TopicPartition(rng.topic, rng.partition)
    done = False

    async def start() -> int:
        await consumer.start()
        earliest = (await consumer.beginning_offsets(tp))[tp]
        if earliest > rng.start and opts.fail_on_data_loss:
            raise DataLossError(f"{rng.topic}-{rng.partition}: offsets {rng.start} to "
                                f"{earliest - 1} are no longer in the log")
        consumer.assign([tp])
        consumer.seek(tp, max(earliest, rng.start))
        return max(earliest, rng.start)

    async def poll() -> RecordColumns:
        got = await consumer.getmany(tp, timeout_ms=_POLL_MS, max_records=_BATCH)
        return got.get(tp) or RecordColumns.empty()

    try:
        position = loop.run(start())
        empty = 0
        idle_since = time.monotonic()
        timeout = float(consumer.settings["request.timeout.ms"]) / 1000
        while position < rng.end:
            records = loop.run(poll())
            if not records:
                empty += 1
                if consumer.highwater(tp) >= rng.end and empty >= _EMPTY_POLLS:
                    done = True
                    return  # the rest of the range holds no records
                if time.monotonic() - idle_since > timeout:
                    raise KafkaClientError(
                        f"{rng.topic}-{rng.partition}: no records from offset {position} "
                        f"within {timeout:g}s; the range ends at {rng.end}",
                        "check that the broker is up and the topic was not recreated")
                continue
            empty = 0
            idle_since = time.monotonic()
            if records.offsets[-1] >= rng.end:
                records = records.before(rng.end)
            if len(records):
                position = int(records.offsets[-1]) + 1
                yield columns_to_arrow(records, rng.topic, rng.partition)
        done = True
    finally:
        if not (done and _keep(key, loop, consumer)):
            try:
                loop.run(consumer.close(), timeout=10)
            except Exception:  # closing after a failure: the failure is what matters
                pass
            loop.close()


def _keep(key: tuple, loop: LoopThread, consumer: Consumer) -> bool:
    """Keep a consumer whose range ended cleanly for the next task; False: close it."""
    try:
        consumer.assign([])          # stop fetching ahead
    except KafkaClientError:
        return False
    with _idle_lock:
        kept = _idle.setdefault(key, [])
        if len(kept) >= _KEEP:
            return False
        kept.append((loop, consumer))
    return True
