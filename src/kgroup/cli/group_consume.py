"""``kgroup consume --group G``: read a topic as a member of G, as Kafka's console consumers do.

How this works: like ``kafka-console-consumer --group`` the command joins G with kgroup's own
client — a classic member (JoinGroup/SyncGroup) by default, a KIP-848 member with
``--group-protocol consumer`` — so it gets a share of the topic's partitions and rebalances
with the group's other members; ``--group-protocol share`` makes it a share-group member, as
``kafka-console-share-consumer`` does, which acknowledges (ACCEPT) each record it prints.

A consumer-group member commits its positions after every batch it printed, before a
rebalance takes partitions away (the client's auto-commit) and on exit. SIGINT and SIGTERM
stop the loop at the next batch boundary: what was printed is committed (or acknowledged)
and the member leaves the group (LeaveGroup, or a heartbeat with epoch -1) before the
process exits — 130 after Ctrl-C, 143 after SIGTERM, as a shell reports them. A second
Ctrl-C interrupts the clean exit.

``--no-join`` (or ``--partition`` / ``--offset``, which name what to read, as Kafka's
``--partition`` does) keeps the old way: read without joining and commit as a "simple"
consumer (generation -1); that is ``commands.consume``.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import Callable
from typing import Any, TextIO

from kgroup.client.admin import AdminClient
from kgroup.client.consumer import CommitFailedError, Consumer
from kgroup.client.errors import BrokerError, KafkaClientError
from kgroup.client.share_consumer import AcknowledgeType, ShareConsumer, ShareConsumerError
from kgroup.error_codes import ErrorCode
from kgroup.group_types import CLASSIC, CONSUMER, SHARE, group_type

from .errors import CliError
from .properties import read_command_config

# The kinds of group `kgroup consume --group` joins (--group-protocol): a streams group's
# members are Kafka Streams instances, not console consumers.
JOINABLE = (CLASSIC, CONSUMER, SHARE)

_POLL_MS = 500
_EXIT = {signal.SIGINT: (130, "kgroup: interrupted\n"), signal.SIGTERM: (143, "kgroup: terminated\n")}


class _Stop:
    """SIGINT / SIGTERM set it; the loop checks it between batches. After the first signal
    the handlers are gone, so a second Ctrl-C interrupts the clean exit itself."""

    def __init__(self) -> None:
        self.signal: int | None = None
        self._loop = asyncio.get_running_loop()
        self._installed: list[int] = []
        for sig in _EXIT:
            try:
                self._loop.add_signal_handler(sig, self._on, sig)
                self._installed.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):   # not the main thread
                pass

    def _on(self, sig: int) -> None:
        self.signal = sig
        self.remove()

    def remove(self) -> None:
        for sig in self._installed:
            self._loop.remove_signal_handler(sig)
        self._installed = []

    def __bool__(self) -> bool:
        return self.signal is not None


class _Loop:
    """--max-messages and --timeout-ms: how long to wait for the next batch, and when to stop."""

    def __init__(self, args: Any, stop: _Stop) -> None:
        self.args = args
        self.stop = stop
        self.printed = 0
        self.last_data = time.monotonic()

    def wait_ms(self) -> int | None:
        """How long the next poll may wait; None when the command is done."""
        a = self.args
        if self.stop or (a.max_messages is not None and self.printed >= a.max_messages):
            return None
        if a.timeout_ms is None:
            return _POLL_MS
        left = a.timeout_ms - (time.monotonic() - self.last_data) * 1000
        return None if left <= 0 else max(1, min(_POLL_MS, int(left)))

    def room(self, limit: int = 500) -> int:
        a = self.args
        return limit if a.max_messages is None else min(limit, a.max_messages - self.printed)

    def printed_batch(self, count: int) -> None:
        self.printed += count
        if count:
            self.last_data = time.monotonic()


def _settings(args: Any) -> dict[str, Any]:
    """The member's settings: the group, and --command-config's security settings."""
    security = read_command_config(args.command_config) if args.command_config else {}
    return {"bootstrap.servers": args.bootstrap_server, "group.id": args.group,
            "client.id": "kgroup-console-consumer", **security}


async def group_consume(args: Any, admin: AdminClient, out: TextIO, line: Callable[[Any], str]) -> int:
    """Consume ``args.topic`` as a member of ``args.group``; the exit status."""
    stop = _Stop()
    loop = _Loop(args, stop)
    try:
        if group_type(args.group_protocol) is SHARE:
            await _share_member(args, out, line, loop)
        else:
            await _consumer_member(args, out, line, loop)
    except (BrokerError, ShareConsumerError) as exc:
        if isinstance(exc, BrokerError) and exc.code is not ErrorCode.INCONSISTENT_GROUP_PROTOCOL:
            raise
        await _wrong_kind(args, admin, exc)
        if isinstance(exc, ShareConsumerError):     # a refusal, not a bug of ours
            raise CliError(f"share group {args.group!r}: {exc}", "check the broker log") from exc
        raise
    finally:
        stop.remove()
    if stop.signal is not None:
        code, message = _EXIT[signal.Signals(stop.signal)]
        sys.stderr.write(message)
        return code
    sys.stderr.write(f"kgroup: processed {loop.printed} message(s)\n")
    return 0


async def _wrong_kind(args: Any, admin: AdminClient, exc: Exception) -> None:
    """The group refused this member: if it is a group of another kind, say which and how
    to join it (a CliError); else return, and the refusal is reported as it is."""
    try:
        kind = (await admin.describe_group(args.group)).group_type
    except KafkaClientError:
        return
    if kind == args.group_protocol:
        return
    hint = (f"join it with --group-protocol {kind}, or use another group"
            if group_type(kind) in JOINABLE else "use another group")
    raise CliError(f"group {args.group!r} is a {kind} group, not a {args.group_protocol} group", hint) from exc


async def _consumer_member(args: Any, out: TextIO,
                           line: Callable[[Any], str], loop: _Loop) -> None:
    consumer = Consumer({
        **_settings(args), "group.protocol": args.group_protocol,
        # --from-beginning is auto.offset.reset=earliest: it counts only where the group has
        # no committed offset, as in Kafka's console consumer.
        "auto.offset.reset": "earliest" if args.from_beginning else "latest",
        "request.timeout.ms": args.request_timeout_ms})
    await consumer.start()
    try:
        consumer.subscribe([args.topic])
        while (wait := loop.wait_ms()) is not None:
            got = await consumer.getmany(timeout_ms=wait, max_records=loop.room())
            count = 0
            for tp in sorted(got):
                for record in got[tp]:
                    out.write(line(record))
                    count += 1
            out.flush()
            loop.printed_batch(count)
            if count:
                await _commit(consumer)
        await _commit(consumer)
    finally:
        await asyncio.shield(consumer.close())    # revokes (committing), then leaves


async def _commit(consumer: Consumer) -> None:
    """Commit what was printed; a rebalance under way refuses it, and then the commit the
    client makes before giving the partitions up carries the same positions."""
    try:
        await asyncio.shield(consumer.commit())
    except CommitFailedError:
        pass


async def _share_member(args: Any, out: TextIO,
                        line: Callable[[Any], str], loop: _Loop) -> None:
    if args.from_beginning:
        raise CliError("--from-beginning does not apply to a share group: where a new share group "
                       "starts is its share.auto.offset.reset",
                       f"run `kgroup groups alter-config {args.group} --add-config "
                       "share.auto.offset.reset=earliest` first")
    consumer = ShareConsumer({**_settings(args), "share.acknowledgement.mode": "explicit",
                              "max.poll.records": loop.room()})
    await consumer.start()
    try:
        consumer.subscribe([args.topic])
        while (wait := loop.wait_ms()) is not None:
            records = await consumer.poll(timeout=wait / 1000)
            room = loop.room(len(records))
            for record in records[:room]:
                out.write(line(record))
                consumer.acknowledge(record, AcknowledgeType.ACCEPT)
            for record in records[room:]:      # past --max-messages: back to the group for others
                consumer.acknowledge(record, AcknowledgeType.RELEASE)
            out.flush()
            loop.printed_batch(room)
            if records:
                await asyncio.shield(consumer.commit_sync())
    finally:
        await asyncio.shield(consumer.close())   # sends what is decided, closes sessions, leaves
