"""The client subcommands: topics, groups, transactions, produce, consume.

Each command is ``async def cmd(args, admin, out) -> int`` over an open ``AdminClient``;
``out`` is where results go (stdout). Mistakes raise CliError or client errors, which
``main`` turns into the one-line error.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

from kgroup.client.admin import (
    EARLIEST,
    LATEST,
    TOPIC_RESOURCE,
    AdminClient,
    ConfigEntry,
    GroupDescription,
)
from kgroup.client.errors import BrokerError, GroupNotEmpty, UnsupportedApi
from kgroup.error_codes import ErrorCode
from kgroup.group_types import CLASSIC, group_type

from .config_tools import alter_and_print
from .errors import CliError
from .ops_parser import one_group
from .output import emit_json
from .output import table
from .partitioner import partition_for_key
from .record_format import compile_format

Command = Callable[[Any, AdminClient, TextIO], Awaitable[int]]
_PRODUCE_BATCH = 500


async def existing_topic(admin: AdminClient, name: str, auto_create: bool = False) -> Any:
    try:
        return await admin.describe_topic(name, auto_create=auto_create)
    except BrokerError as exc:
        if exc.code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            raise CliError(f"topic {name!r} does not exist",
                           "check the name with `kgroup topics list` or create it with "
                           "`kgroup topics create`") from None
        raise


# -- topics ------------------------------------------------------------------------------


async def topics_create(args: Any, admin: AdminClient, out: TextIO) -> int:
    created = await admin.create_topics(
        {args.name: args.partitions},
        replication_factor=args.replication_factor,
        configs=dict(args.config),
    )
    out.write(f"Created topic {args.name} with {created.get(args.name, args.partitions)} "
              "partition(s).\n")
    return 0


async def topics_list(args: Any, admin: AdminClient, out: TextIO) -> int:
    md = await admin.metadata()
    if getattr(args, "format", "text") == "json":
        emit_json({"topics": [{"name": t.name, "internal": t.is_internal, "partitions": len(t.partitions)}
                              for _, t in sorted(md.topics.items())]}, out)
        return 0
    for name in sorted(md.topics):
        out.write(name + "\n")
    return 0


async def _topic_configs(admin: AdminClient, name: str) -> list[ConfigEntry] | None:
    """The topic's configs, or None from a broker without DescribeConfigs."""
    try:
        return await admin.describe_configs(TOPIC_RESOURCE, name)
    except UnsupportedApi:
        return None


async def topics_describe(args: Any, admin: AdminClient, out: TextIO) -> int:
    info = await existing_topic(admin, args.name)
    parts = [p.partition for p in info.partitions]
    starts = await admin.list_offsets(args.name, parts, EARLIEST)
    ends = await admin.list_offsets(args.name, parts, LATEST)
    configs = await _topic_configs(admin, args.name)
    if getattr(args, "format", "text") == "json":
        emit_json({"topics": [{
            "name": info.name, "topic_id": str(info.topic_id) if info.topic_id else None,
            "internal": info.is_internal,
            "partitions": [{"partition": p.partition, "leader": p.leader, "replicas": list(p.replicas),
                            "isr": list(p.isr), "start_offset": starts.get(p.partition),
                            "end_offset": ends.get(p.partition)} for p in info.partitions],
            "configs": None if configs is None else
            [{"name": c.name, "value": c.value, "source": c.source} for c in configs]}]}, out)
        return 0
    tid = f"\tTopicId: {info.topic_id}" if info.topic_id else ""
    changed = ",".join(f"{c.name}={c.value}" for c in configs or () if c.source == "DYNAMIC_TOPIC_CONFIG")
    out.write(f"Topic: {info.name}{tid}\tPartitionCount: {len(info.partitions)}\t"
              f"ReplicationFactor: {len(info.partitions[0].replicas) if info.partitions else 0}\t"
              f"Configs: {changed}\n")
    for p in info.partitions:
        err = f"\tError: {p.error.name}" if p.error is not ErrorCode.NONE else ""
        out.write(
            f"\tPartition: {p.partition}\tLeader: {p.leader}\t"
            f"Replicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isr))}\t"
            f"StartOffset: {starts.get(p.partition, '-')}\tEndOffset: {ends.get(p.partition, '-')}{err}\n"
        )
    return 0


async def topics_alter_config(args: Any, admin: AdminClient, out: TextIO) -> int:
    await existing_topic(admin, args.name)
    return await alter_and_print(admin, TOPIC_RESOURCE, args.name, "topic", args, out)


def _internal_topic_errors(exc: BrokerError) -> None:
    """The broker refused a change to one of its internal topics: say so, with its reason."""
    if exc.code is ErrorCode.INVALID_TOPIC_EXCEPTION and "internal topic" in str(exc):
        raise CliError(str(exc), "internal topics are written by the broker only; use another topic") from None


async def topics_delete(args: Any, admin: AdminClient, out: TextIO) -> int:
    await existing_topic(admin, args.name)
    try:
        await admin.delete_topics([args.name])
    except BrokerError as exc:
        _internal_topic_errors(exc)
        raise
    out.write(f"Deleted topic {args.name}.\n")
    return 0


async def topics_add_partitions(args: Any, admin: AdminClient, out: TextIO) -> int:
    info = await existing_topic(admin, args.name)
    if args.partitions <= len(info.partitions):
        raise CliError(
            f"topic {args.name!r} already has {len(info.partitions)} partition(s)",
            "give --partitions a larger total; partitions cannot be removed",
        )
    await admin.create_partitions(args.name, args.partitions)
    out.write(f"Topic {args.name} now has {args.partitions} partition(s).\n")
    return 0


# -- groups ------------------------------------------------------------------------------


def raise_group_error(exc: BrokerError, group: str) -> None:
    if exc.code in (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.INVALID_GROUP_ID):
        raise CliError(f"group {group!r} does not exist",
                       "check the name with `kgroup groups list`") from None
    if exc.code is ErrorCode.NON_EMPTY_GROUP:
        raise CliError(f"group {group!r} still has active members",
                       f"stop its consumers first (see them with `kgroup groups describe {group} --members`)") from None


@contextmanager
def group_errors(group: str) -> Iterator[None]:
    """A broker error about `group` in the user's words where raise_group_error has them
    (no such group, still active), else as the broker said it."""
    try:
        yield
    except BrokerError as exc:
        raise_group_error(exc, group)
        raise


async def describe_group_or_none(admin: AdminClient, group: str) -> GroupDescription | None:
    """The description, or None when the broker has no DescribeGroups."""
    try:
        with group_errors(group):
            return await admin.describe_group(group)
    except UnsupportedApi as exc:
        sys.stderr.write(f"kgroup: warning: {exc}; showing committed offsets only\n")
        return None


async def log_end_offsets(admin: AdminClient, topics: set[str], spec: Any = LATEST) -> dict[tuple[str, int], int]:
    """Each partition's log end offset (spec EARLIEST: its log start offset)."""
    ends: dict[tuple[str, int], int] = {}
    for topic in sorted(topics):
        try:
            for p, off in (await admin.list_offsets(topic, spec=spec)).items():
                ends[(topic, p)] = off
        except BrokerError:
            continue  # deleted topic: show no lag
    return ends


async def groups_remove_members(args: Any, admin: AdminClient, out: TextIO) -> int:
    group = one_group(args)
    try:
        await admin.remove_members(group, args.instance_id)
    except BrokerError as exc:
        raise_group_error(exc, group)
        if exc.code is ErrorCode.UNKNOWN_MEMBER_ID:
            raise CliError(f"{exc}: no member of group {group!r} has that instance id",
                           f"check the ids with `kgroup groups describe {group} --members`") from None
        raise
    out.write(f"Removed {len(args.instance_id)} member(s) from group {group}.\n")
    return 0


# -- produce / consume -------------------------------------------------------------------


def _raw(text: str) -> bytes:
    """The bytes a line of stdin held: text, or undecodable bytes as read (surrogateescape)."""
    return text.encode("utf-8", "surrogateescape")


async def _lines(source: TextIO) -> AsyncIterator[str]:
    """The lines of ``source``, read by a daemon thread a chunk at a time.

    A read of stdin blocks; done on the event loop, it would also hold off Ctrl-C (the loop
    cancels the command's task, which only runs once the read returns). The thread hands
    chunks over with back-pressure and is left behind at exit.
    """
    loop = asyncio.get_running_loop()
    chunks: asyncio.Queue[list[str] | Exception | None] = asyncio.Queue(maxsize=4)

    def hand_over(item: list[str] | Exception | None) -> None:
        asyncio.run_coroutine_threadsafe(chunks.put(item), loop).result()

    def read() -> None:
        try:
            while chunk := source.readlines(1 << 16):
                hand_over(chunk)
            hand_over(None)
        except RuntimeError:
            pass                      # the loop is gone: the command ended (Ctrl-C)
        except Exception as exc:      # noqa: BLE001 - stdin failed (bad UTF-8, ...): raised below
            try:
                hand_over(exc)
            except RuntimeError:
                pass

    threading.Thread(target=read, name="kgroup-stdin", daemon=True).start()
    while (chunk := await chunks.get()) is not None:
        if isinstance(chunk, Exception):
            raise chunk
        for line in chunk:
            yield line


async def produce(args: Any, admin: AdminClient, out: TextIO, stdin: TextIO | None = None) -> int:
    source = stdin if stdin is not None else sys.stdin
    info = await existing_topic(admin, args.topic, auto_create=True)
    count = len(info.partitions)
    if args.partition is not None and args.partition >= count:
        raise CliError(f"topic {args.topic!r} has no partition {args.partition} "
                       f"(it has {count})", f"use --partition 0..{count - 1}")
    pending: dict[int, list[tuple[bytes | None, bytes | None, tuple, int]]] = {}
    headers = tuple(getattr(args, "header", None) or ())
    next_rr = 0
    sent = 0

    async def flush(partition: int) -> None:
        nonlocal sent
        rows = pending.pop(partition, [])
        if rows:
            try:
                await admin.produce(args.topic, partition, rows, acks=args.acks)
            except BrokerError as exc:
                _internal_topic_errors(exc)
                raise
            sent += len(rows)

    lineno = 0
    async for line in _lines(source):
        lineno += 1
        line = line.rstrip("\r\n")
        key: bytes | None = None
        value = line
        if args.key_separator is not None:
            k, sep, v = line.partition(args.key_separator)
            if not sep:
                raise CliError(f"line {lineno} has no key separator {args.key_separator!r}",
                               "write KEY<separator>VALUE on every line, or drop "
                               "--key-separator")
            key, value = _raw(k), v
        if args.partition is not None:
            partition = args.partition
        elif key is not None:
            partition = partition_for_key(key, count)
        else:
            partition = next_rr % count
            if len(pending.get(partition, ())) + 1 >= _PRODUCE_BATCH:
                next_rr += 1
        pending.setdefault(partition, []).append((key, _raw(value), headers, int(time.time() * 1000)))
        if len(pending[partition]) >= _PRODUCE_BATCH:
            await flush(partition)
    for partition in sorted(pending):
        await flush(partition)
    sys.stderr.write(f"kgroup: sent {sent} message(s) to {args.topic}\n")
    return 0


async def _start_offsets(admin: AdminClient, topic: str, parts: list[int], spec: Any,
                         from_beginning: bool) -> dict[int, int]:
    """Where each partition starts: --offset (clamped into the log), else --from-beginning."""
    if spec is None or spec.kind in ("earliest", "latest"):
        earliest = from_beginning if spec is None else spec.kind == "earliest"
        return await admin.list_offsets(topic, parts, EARLIEST if earliest else LATEST)
    ends = await admin.list_offsets(topic, parts, LATEST)
    if spec.kind == "timestamp":
        found = await admin.list_offsets(topic, parts, spec.value)
        return {p: ends[p] if off < 0 else off for p, off in found.items()}
    starts = await admin.list_offsets(topic, parts, EARLIEST)
    return {p: min(max(spec.value, starts[p]), ends[p]) for p in parts}


def record_printer(args: Any) -> Callable[[Any], str]:
    """How `consume` prints a record: --format, else --print-key, else the value; one line."""
    if getattr(args, "format", None) is not None:
        return compile_format(args.format)

    def line(r: Any) -> str:
        value = "" if r.value is None else r.value.decode("utf-8", "replace")
        if args.print_key:
            key = "null" if r.key is None else r.key.decode("utf-8", "replace")
            return f"{key}{args.key_separator}{value}\n"
        return value + "\n"
    return line


def joins_group(args: Any) -> bool:
    """--group joins the group, unless --no-join, --partition or --offset (which read chosen
    partitions, as Kafka's console consumer reads with --partition) ask for a simple consumer."""
    return bool(args.group) and not (getattr(args, "no_join", False) or args.partition is not None
                                     or getattr(args, "offset", None) is not None)


async def consume(args: Any, admin: AdminClient, out: TextIO) -> int:
    info = await existing_topic(admin, args.topic)
    if joins_group(args):
        from .group_consume import group_consume  # noqa: PLC0415 (only a member needs the consumer)

        return await group_consume(args, admin, out, record_printer(args))
    if group_type(getattr(args, "group_protocol", None)) not in (None, CLASSIC):
        raise CliError(f"--group-protocol {args.group_protocol} reads as a member of a group",
                       "give --group G without --no-join, --partition or --offset"
                       if args.group else "give --group G")
    parts = [p.partition for p in info.partitions]
    if args.partition is not None:
        if args.partition not in parts:
            raise CliError(f"topic {args.topic!r} has no partition {args.partition} "
                           f"(it has {len(parts)})", f"use --partition 0..{len(parts) - 1}")
        parts = [args.partition]
    spec = getattr(args, "offset", None)
    start = await _start_offsets(admin, args.topic, parts, spec, args.from_beginning)
    line = record_printer(args)
    if args.group:
        desc = await describe_group_or_none(admin, args.group)
        if desc is not None and desc.state not in ("Empty", "Dead"):
            raise CliError(
                f"group {args.group!r} is {desc.state} with {len(desc.members)} member(s)",
                "consume --no-join (or --partition, --offset) commits as a simple consumer; "
                "stop the group's consumers first, use another group, or drop --no-join to "
                "join the group",
            )
        committed = await admin.list_group_offsets(args.group, {args.topic: parts})
        for (t, p), off in committed.items():
            if t == args.topic and p in start and spec is None:   # --offset wins over the group's
                start[p] = off
    positions = dict(start)
    printed = 0
    last_data = time.monotonic()
    dirty: dict[tuple[str, int], int] = {}
    # The group's commit runs as a task of its own, awaited through a shield: Ctrl-C cancels
    # the command while it waits, never the commit, and the command then waits for that same
    # commit to finish before it exits (one commit per batch, never sent twice).
    commit: asyncio.Future[None] | None = None
    try:
        while args.max_messages is None or printed < args.max_messages:
            wait = 500
            if args.timeout_ms is not None:
                left = args.timeout_ms - (time.monotonic() - last_data) * 1000
                if left <= 0:
                    break
                wait = max(1, min(wait, int(left)))
            got = await admin.fetch_many(args.topic, positions, max_wait_ms=wait)
            any_data = False
            for p in sorted(got):
                fp = got[p]
                if fp.error is ErrorCode.OFFSET_OUT_OF_RANGE:
                    reset = EARLIEST if args.from_beginning else LATEST
                    positions[p] = (await admin.list_offsets(args.topic, [p], reset))[p]
                    continue
                if fp.error is not ErrorCode.NONE:
                    raise BrokerError(fp.error, f"fetch {args.topic}-{p}")
                for r in fp.records:
                    if args.max_messages is not None and printed >= args.max_messages:
                        break
                    out.write(line(r))
                    printed += 1
                    any_data = True
                    positions[p] = r.offset + 1
                    dirty[(args.topic, p)] = r.offset + 1
            out.flush()
            if any_data:
                last_data = time.monotonic()
                if args.group and dirty:
                    commit = asyncio.ensure_future(
                        admin.alter_group_offsets(args.group, dirty, require_empty=False))
                    dirty = {}
                    await asyncio.shield(commit)
    finally:
        if commit is not None and not commit.done():
            await asyncio.wait([commit])
            if not commit.cancelled():
                commit.exception()     # a failure after Ctrl-C is not news to report
        if args.group and dirty:   # printed but not yet committed (interrupted mid-batch)
            await asyncio.shield(
                admin.alter_group_offsets(args.group, dirty, require_empty=False))
    sys.stderr.write(f"kgroup: processed {printed} message(s)\n")
    return 0


async def groups_watch(args: Any, admin: AdminClient, out: TextIO) -> int:
    from .watch import groups_watch as watch  # noqa: PLC0415 (watch imports this module)

    # GROUP or --group GROUP; neither: every group.
    args.group = one_group(args) if args.groups or args.group else None
    return await watch(args, admin, out)


# -- transactions -----------------------------------------------------------------------
# As Kafka's `kafka-transactions.sh list` and `describe`: --min-duration-ms finds a hanging
# transaction.


async def transactions_list(args: Any, admin: AdminClient, out: TextIO) -> int:
    found = await admin.transactions.list(args.state, args.producer_id, args.min_duration_ms)
    rows = [["TRANSACTIONAL-ID", "PRODUCER-ID", "STATE"]]
    rows += [[t.transactional_id, str(t.producer_id), t.state] for t in found]
    table(rows, out)
    return 0


async def transactions_describe(args: Any, admin: AdminClient, out: TextIO) -> int:
    try:
        described = await admin.transactions.describe(args.transactional_id)
    except BrokerError as exc:
        if exc.code is ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
            raise CliError(f"no transactional id {exc.context.split()[-1]} on this cluster",
                           "check the id with `kgroup transactions list`") from None
        raise
    now = int(time.time() * 1000)
    rows = [["TRANSACTIONAL-ID", "PRODUCER-ID", "EPOCH", "STATE", "TIMEOUT-MS", "STARTED-MS",
             "DURATION-MS", "PARTITIONS"]]
    for d in described:
        running = d.start_ms >= 0 and d.state in ("Ongoing", "PrepareCommit", "PrepareAbort")
        rows.append([d.transactional_id, str(d.producer_id), str(d.producer_epoch), d.state, str(d.timeout_ms),
                     str(d.start_ms) if running else "-", str(now - d.start_ms) if running else "-",
                     ",".join(f"{t}-{p}" for t, p in d.partitions) or "-"])
    table(rows, out)
    return 0


COMMANDS: dict[tuple[str, str | None], Command] = {
    ("topics", "create"): topics_create,
    ("topics", "list"): topics_list,
    ("topics", "describe"): topics_describe,
    ("topics", "delete"): topics_delete,
    ("topics", "add-partitions"): topics_add_partitions,
    ("topics", "alter-config"): topics_alter_config,
    ("groups", "remove-members"): groups_remove_members,
    ("groups", "watch"): groups_watch,
    ("produce", None): produce,
    ("consume", None): consume,
    ("transactions", "list"): transactions_list,
    ("transactions", "describe"): transactions_describe,
}
