"""The client subcommands: topics, groups, transactions, produce, consume.

Each command is ``async def cmd(args, admin, out) -> int`` over an open ``AdminClient``;
``out`` is where results go (stdout). Mistakes raise CliError or client errors, which
``main`` turns into the one-line error.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any, TextIO

from kgroup.client.admin import EARLIEST, LATEST, AdminClient, GroupDescription
from kgroup.client.errors import BrokerError, GroupNotEmpty, UnsupportedApi
from kgroup.error_codes import ErrorCode

from .errors import CliError
from .member_payloads import assignment_text, size
from .partitioner import partition_for_key

Command = Callable[[Any, AdminClient, TextIO], Awaitable[int]]
_PRODUCE_BATCH = 500


def _table(rows: list[list[str]], out: TextIO) -> None:
    if not rows:
        return
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        out.write("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() + "\n")


async def _topic(admin: AdminClient, name: str, auto_create: bool = False) -> Any:
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
    for name in sorted(md.topics):
        out.write(name + "\n")
    return 0


async def topics_describe(args: Any, admin: AdminClient, out: TextIO) -> int:
    info = await _topic(admin, args.name)
    tid = f"\tTopicId: {info.topic_id}" if info.topic_id else ""
    out.write(f"Topic: {info.name}{tid}\tPartitionCount: {len(info.partitions)}\n")
    for p in info.partitions:
        err = f"\tError: {p.error.name}" if p.error is not ErrorCode.NONE else ""
        out.write(
            f"\tPartition: {p.partition}\tLeader: {p.leader}\t"
            f"Replicas: {','.join(map(str, p.replicas))}\tIsr: {','.join(map(str, p.isr))}"
            f"{err}\n"
        )
    return 0


async def topics_delete(args: Any, admin: AdminClient, out: TextIO) -> int:
    await _topic(admin, args.name)
    await admin.delete_topics([args.name])
    out.write(f"Deleted topic {args.name}.\n")
    return 0


async def topics_add_partitions(args: Any, admin: AdminClient, out: TextIO) -> int:
    info = await _topic(admin, args.name)
    if args.partitions <= len(info.partitions):
        raise CliError(
            f"topic {args.name!r} already has {len(info.partitions)} partition(s)",
            "give --partitions a larger total; partitions cannot be removed",
        )
    await admin.create_partitions(args.name, args.partitions)
    out.write(f"Topic {args.name} now has {args.partitions} partition(s).\n")
    return 0


# -- groups ------------------------------------------------------------------------------


def _group_errors(exc: BrokerError, group: str) -> None:
    if exc.code in (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.INVALID_GROUP_ID):
        raise CliError(f"group {group!r} does not exist",
                       "check the name with `kgroup groups list`") from None
    if exc.code is ErrorCode.NON_EMPTY_GROUP:
        raise CliError(f"group {group!r} still has active members",
                       "stop its consumers (or `kgroup groups remove-members`) first") from None


async def groups_list(args: Any, admin: AdminClient, out: TextIO) -> int:
    groups = await admin.list_groups(states=args.state, types=args.type)
    rows = [["GROUP", "STATE", "TYPE", "PROTOCOL-TYPE"]]
    for g in groups:
        rows.append([g.group_id, g.state or "-", g.group_type or "-", g.protocol_type or "-"])
    _table(rows, out)
    return 0


async def _describe(admin: AdminClient, group: str) -> GroupDescription | None:
    """The description, or None when the broker has no DescribeGroups."""
    try:
        desc = await admin.describe_group(group)
    except UnsupportedApi as exc:
        sys.stderr.write(f"kgroup: warning: {exc}; showing committed offsets only\n")
        return None
    except BrokerError as exc:
        _group_errors(exc, group)
        raise
    return desc


async def _log_end(admin: AdminClient, topics: set[str]) -> dict[tuple[str, int], int]:
    ends: dict[tuple[str, int], int] = {}
    for topic in sorted(topics):
        try:
            for p, off in (await admin.list_offsets(topic, spec=LATEST)).items():
                ends[(topic, p)] = off
        except BrokerError:
            continue  # deleted topic: show no lag
    return ends


async def groups_describe(args: Any, admin: AdminClient, out: TextIO) -> int:
    desc = await _describe(admin, args.group)
    committed = await admin.list_group_offsets(args.group)
    # The node that coordinates the group (in a cluster, the owner of its partition).
    coordinator = await admin.find_coordinator(args.group)
    where = f"  COORDINATOR {coordinator.node_id} ({coordinator.host}:{coordinator.port})"
    if desc is not None and desc.state == "Dead" and not committed:
        raise CliError(f"group {args.group!r} does not exist",
                       "check the name with `kgroup groups list`")
    owners: dict[tuple[str, int], str] = {}
    if desc is not None:
        protocol = f"{desc.protocol_type}/{desc.protocol}" if desc.protocol else (
            desc.protocol_type or "-")
        out.write(f"GROUP {desc.group_id}  STATE {desc.state}  PROTOCOL {protocol}  "
                  f"MEMBERS {len(desc.members)}{where}\n\n")
        # DescribeGroups carries each member's bytes; ConsumerGroupDescribe has none.
        classic = desc.group_type != "consumer"
        rows = [["MEMBER-ID", "INSTANCE-ID", "CLIENT-ID", "HOST", "METADATA-BYTES",
                 "ASSIGNMENT-BYTES", "ASSIGNMENT"]]
        for m in desc.members:
            for t, ps in (m.assignment or {}).items():
                for p in ps:
                    owners[(t, p)] = m.client_id or m.member_id
            rows.append([m.member_id, m.group_instance_id or "-", m.client_id, m.client_host,
                         size(m.metadata, classic), size(m.assignment_bytes, classic),
                         assignment_text(desc, m)])
        if desc.members:
            _table(rows, out)
            out.write("\n")
    else:
        out.write(f"GROUP {args.group}{where}\n\n")
    keys = set(committed) | set(owners)
    ends = await _log_end(admin, {t for t, _ in keys})
    rows = [["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER"]]
    for key in sorted(keys):
        cur = committed.get(key)
        end = ends.get(key)
        lag = str(max(0, end - cur)) if cur is not None and end is not None else "-"
        rows.append([key[0], str(key[1]), "-" if cur is None else str(cur),
                     "-" if end is None else str(end), lag, owners.get(key, "-")])
    if len(rows) > 1:
        _table(rows, out)
    else:
        out.write("(no committed offsets)\n")
    return 0


async def groups_delete(args: Any, admin: AdminClient, out: TextIO) -> int:
    try:
        await admin.delete_groups([args.group])
    except BrokerError as exc:
        _group_errors(exc, args.group)
        raise
    out.write(f"Deleted group {args.group}.\n")
    return 0


async def groups_remove_members(args: Any, admin: AdminClient, out: TextIO) -> int:
    try:
        await admin.remove_members(args.group, args.instance_id)
    except BrokerError as exc:
        _group_errors(exc, args.group)
        if exc.code is ErrorCode.UNKNOWN_MEMBER_ID:
            raise CliError(f"{exc}: no member of group {args.group!r} has that instance id",
                           "check the ids with `kgroup groups describe`") from None
        raise
    out.write(f"Removed {len(args.instance_id)} member(s) from group {args.group}.\n")
    return 0


async def groups_reset_offsets(args: Any, admin: AdminClient, out: TextIO) -> int:
    info = await _topic(admin, args.topic)
    desc = await _describe(admin, args.group)
    if desc is not None and desc.state not in ("Empty", "Dead"):
        raise CliError(
            f"offsets of group {args.group!r} can only be reset when it is inactive, "
            f"but it is {desc.state} with {len(desc.members)} member(s)",
            "stop its consumers (or `kgroup groups remove-members`) and retry",
        )
    parts = [p.partition for p in info.partitions]
    earliest = await admin.list_offsets(args.topic, parts, EARLIEST)
    latest = await admin.list_offsets(args.topic, parts, LATEST)
    committed = await admin.list_group_offsets(args.group, {args.topic: parts})
    plan: dict[tuple[str, int], int] = {}
    for p in parts:
        if args.to_earliest:
            target = earliest[p]
        elif args.to_latest:
            target = latest[p]
        else:
            target = min(max(args.to_offset, earliest[p]), latest[p])
        plan[(args.topic, p)] = target
    rows = [["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"]]
    for (t, p), target in sorted(plan.items()):
        cur = committed.get((t, p))
        rows.append([args.group, t, str(p), "-" if cur is None else str(cur), str(target)])
    _table(rows, out)
    if not args.execute:
        out.write("\nDry run: nothing committed. Add --execute to commit these offsets.\n")
        return 0
    try:
        await admin.alter_group_offsets(args.group, plan, require_empty=desc is None)
    except GroupNotEmpty:
        raise
    except BrokerError as exc:
        _group_errors(exc, args.group)
        raise
    out.write(f"\nCommitted new offsets for group {args.group}.\n")
    return 0


# -- produce / consume -------------------------------------------------------------------


async def produce(args: Any, admin: AdminClient, out: TextIO, stdin: TextIO | None = None) -> int:
    source = stdin if stdin is not None else sys.stdin
    info = await _topic(admin, args.topic, auto_create=True)
    count = len(info.partitions)
    if args.partition is not None and args.partition >= count:
        raise CliError(f"topic {args.topic!r} has no partition {args.partition} "
                       f"(it has {count})", f"use --partition 0..{count - 1}")
    pending: dict[int, list[tuple[bytes | None, bytes | None]]] = {}
    next_rr = 0
    sent = 0

    async def flush(partition: int) -> None:
        nonlocal sent
        rows = pending.pop(partition, [])
        if rows:
            await admin.produce(args.topic, partition, rows, acks=args.acks)
            sent += len(rows)

    for lineno, line in enumerate(source, 1):
        line = line.rstrip("\r\n")
        key: bytes | None = None
        value = line
        if args.key_separator is not None:
            k, sep, v = line.partition(args.key_separator)
            if not sep:
                raise CliError(f"line {lineno} has no key separator {args.key_separator!r}",
                               "write KEY<separator>VALUE on every line, or drop "
                               "--key-separator")
            key, value = k.encode(), v
        if args.partition is not None:
            partition = args.partition
        elif key is not None:
            partition = partition_for_key(key, count)
        else:
            partition = next_rr % count
            if len(pending.get(partition, ())) + 1 >= _PRODUCE_BATCH:
                next_rr += 1
        pending.setdefault(partition, []).append((key, value.encode()))
        if len(pending[partition]) >= _PRODUCE_BATCH:
            await flush(partition)
    for partition in sorted(pending):
        await flush(partition)
    sys.stderr.write(f"kgroup: sent {sent} message(s) to {args.topic}\n")
    return 0


async def consume(args: Any, admin: AdminClient, out: TextIO) -> int:
    info = await _topic(admin, args.topic)
    parts = [p.partition for p in info.partitions]
    if args.partition is not None:
        if args.partition not in parts:
            raise CliError(f"topic {args.topic!r} has no partition {args.partition} "
                           f"(it has {len(parts)})", f"use --partition 0..{len(parts) - 1}")
        parts = [args.partition]
    start = await admin.list_offsets(args.topic, parts,
                                      EARLIEST if args.from_beginning else LATEST)
    if args.group:
        desc = await _describe(admin, args.group)
        if desc is not None and desc.state not in ("Empty", "Dead"):
            raise CliError(
                f"group {args.group!r} is {desc.state} with {len(desc.members)} member(s)",
                "consume --group commits as a simple consumer; stop the group's consumers "
                "first or use another group",
            )
        committed = await admin.list_group_offsets(args.group, {args.topic: parts})
        for (t, p), off in committed.items():
            if t == args.topic and p in start:
                start[p] = off
    positions = dict(start)
    printed = 0
    last_data = time.monotonic()
    dirty: dict[tuple[str, int], int] = {}
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
                    value = "" if r.value is None else r.value.decode("utf-8", "replace")
                    if args.print_key:
                        key = "null" if r.key is None else r.key.decode("utf-8", "replace")
                        out.write(f"{key}{args.key_separator}{value}\n")
                    else:
                        out.write(value + "\n")
                    printed += 1
                    any_data = True
                    positions[p] = r.offset + 1
                    dirty[(args.topic, p)] = r.offset + 1
            out.flush()
            if any_data:
                last_data = time.monotonic()
                if args.group and dirty:
                    await admin.alter_group_offsets(args.group, dirty, require_empty=False)
                    dirty = {}
    finally:
        if args.group and dirty:
            await asyncio.shield(
                admin.alter_group_offsets(args.group, dirty, require_empty=False))
    sys.stderr.write(f"kgroup: processed {printed} message(s)\n")
    return 0


async def groups_watch(args: Any, admin: AdminClient, out: TextIO) -> int:
    from .watch import groups_watch as watch  # noqa: PLC0415 (watch imports this module)

    return await watch(args, admin, out)


# -- transactions -----------------------------------------------------------------------
# As Kafka's `kafka-transactions.sh list` and `describe`: --min-duration-ms finds a hanging
# transaction.


async def transactions_list(args: Any, admin: AdminClient, out: TextIO) -> int:
    found = await admin.transactions.list(args.state, args.producer_id, args.min_duration_ms)
    rows = [["TRANSACTIONAL-ID", "PRODUCER-ID", "STATE"]]
    rows += [[t.transactional_id, str(t.producer_id), t.state] for t in found]
    _table(rows, out)
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
    _table(rows, out)
    return 0


COMMANDS: dict[tuple[str, str | None], Command] = {
    ("topics", "create"): topics_create,
    ("topics", "list"): topics_list,
    ("topics", "describe"): topics_describe,
    ("topics", "delete"): topics_delete,
    ("topics", "add-partitions"): topics_add_partitions,
    ("groups", "list"): groups_list,
    ("groups", "describe"): groups_describe,
    ("groups", "delete"): groups_delete,
    ("groups", "remove-members"): groups_remove_members,
    ("groups", "reset-offsets"): groups_reset_offsets,
    ("groups", "watch"): groups_watch,
    ("produce", None): produce,
    ("consume", None): consume,
    ("transactions", "list"): transactions_list,
    ("transactions", "describe"): transactions_describe,
}
