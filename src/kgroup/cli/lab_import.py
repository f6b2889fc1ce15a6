"""``kgroup lab import``: a Kafka cluster's group history into the lab's event format.

Reads the group-metadata records of ``__consumer_offsets`` — over the wire from any Kafka
broker (every partition fetched from the start to its end, with kgroup's consumer), or from
a copy of the broker's log segments (``__consumer_offsets-N/*.log`` under a directory) —
decodes them (``kgroup.lab.kafka_records``), folds them into events
(``kgroup.lab.kafka_history``) and writes the events one JSON a line, the format
``kgroup lab replay`` reads. Reading is here; the lab itself stays pure.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from kgroup.lab.kafka_history import History, history
from kgroup.lab.kafka_records import GroupRecord, KafkaRecordError, decode

from .errors import CliError

OFFSETS_TOPIC = "__consumer_offsets"


def run_import(args: Any, out: TextIO, err: TextIO) -> int:
    if bool(args.bootstrap_server) == bool(args.segments):
        raise CliError("give one of --bootstrap-server HOST:PORT and --segments DIR",
                       "--bootstrap-server reads __consumer_offsets from a running broker, --segments "
                       "from a copy of its log directory", code=2)
    try:
        if args.segments:
            records, names = list(segment_records(Path(args.segments))), {}
        else:
            records, names = asyncio.run(fetch_records(args.bootstrap_server, _client_config(args)))
        found = history(records, names)
    except KafkaRecordError as exc:
        raise CliError(f"a record of {OFFSETS_TOPIC} cannot be read: {exc}",
                       "is this a Kafka 4.x cluster's __consumer_offsets?") from None
    _write(found, args.out, out)
    groups = sorted({e["group"] for e in found.events})
    err.write(f"kgroup: {len(found.events)} events of {len(groups)} groups from "
              f"{len(records)} records of {OFFSETS_TOPIC} ({found.skipped} offset commits and "
              f"records of other kinds skipped)\n")
    return 0


def _client_config(args: Any) -> dict[str, Any]:
    path = getattr(args, "command_config", None)
    if not path:
        return {}
    from .properties import read_command_config

    return dict(read_command_config(path))


def _write(found: History, path: str | None, out: TextIO) -> None:
    lines = "".join(json.dumps(e, sort_keys=True, separators=(",", ":")) + "\n" for e in found.events)
    if path in (None, "-"):
        out.write(lines)
        return
    try:
        Path(path).write_text(lines)
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc}", "give a writable file path") from None


async def fetch_records(bootstrap: str, config: dict[str, Any]
                        ) -> tuple[list[tuple[int, GroupRecord | None]], dict[str, str]]:
    """Every record of __consumer_offsets, decoded, partition by partition; and topic id ->
    name of the cluster's topics (consumer-group assignments name topics by id)."""
    from kgroup.client import AdminClient, Consumer, TopicPartition

    async with AdminClient(bootstrap, config=config) as admin:
        md = await admin.metadata(None)
        names = {str(t.topic_id): name for name, t in md.topics.items() if t.topic_id is not None}
        offsets = await admin.metadata([OFFSETS_TOPIC])
    info = offsets.topics.get(OFFSETS_TOPIC)
    if info is None or not info.partitions:
        raise CliError(f"the broker at {bootstrap} has no {OFFSETS_TOPIC} topic",
                       "no group has used it yet, or it is not a Kafka broker")
    tps = [TopicPartition(OFFSETS_TOPIC, p.partition) for p in info.partitions]
    consumer = Consumer({**config, "bootstrap.servers": bootstrap, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "client.id": "kgroup-lab-import"})
    out: list[tuple[int, GroupRecord | None]] = []
    await consumer.start()
    try:
        ends = await consumer.end_offsets(*tps)
        for tp in tps:
            if ends[tp] <= 0:
                continue
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            position = -1
            idle = 0
            while position + 1 < ends[tp] and idle < 20:
                got = (await consumer.getmany(tp, timeout_ms=500)).get(tp, [])
                idle = 0 if got else idle + 1
                for r in got:
                    if r.offset >= ends[tp]:
                        break
                    out.append((r.timestamp, decode(r.key, r.value)))
                    position = r.offset
                if not got and await consumer.position(tp) >= ends[tp]:
                    break                             # the rest were control records
    finally:
        await consumer.close()
    return out, names


_SEGMENT = re.compile(r"^\d{20}\.log$")


def segment_records(directory: Path) -> Iterator[tuple[int, GroupRecord | None]]:
    """The records of every ``__consumer_offsets-N/*.log`` segment under ``directory``."""
    from kgroup.wire.record_batch import decode_records, split_batches, whole_batches

    partitions = sorted(p for p in directory.rglob(f"{OFFSETS_TOPIC}-*") if p.is_dir())
    if not partitions:
        raise CliError(f"no {OFFSETS_TOPIC}-N directories under {directory}",
                       "give a copy of a Kafka broker's log.dirs")
    for part in partitions:
        for segment in sorted(f for f in part.iterdir() if _SEGMENT.match(f.name)):
            data = whole_batches(segment.read_bytes())
            for batch in split_batches(data):
                if batch.header.is_control:
                    continue
                for r in decode_records(batch):
                    yield r.timestamp, decode(r.key, r.value)


