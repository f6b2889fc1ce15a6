"""Live updates for open console pages: server-sent events, pushed, never polled for.

How this works: a page opens `GET /api/stream?group=G` once. It gets the group list
(`event: groups`) and, if it named a group, that group in full (`event: group`), then only
what changes:

- when the group observer reports changed groups, a flush is scheduled `COALESCE_S` later
  (so a rebalance of a thousand joins is a handful of messages, not a thousand) and sends
  the list again plus the full view of each page's group if it changed;
- every `SAMPLE_S` the lag of every group is sampled (kept for the charts) and pages get the
  new sample of their group (`event: lag`) and the list if its totals moved;
- a comment line every `KEEPALIVE_S` keeps proxies from closing an idle stream.

Messages are built once per flush and shared by every page that needs them. A page that
does not read (its socket buffer passes `MAX_BUFFER`) is dropped rather than buffered.
Nothing here runs while no group changes and no page is open, except the lag sample.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import TYPE_CHECKING, Any

from kgroup.broker.observe.console.views import group_detail, group_list

if TYPE_CHECKING:
    from kgroup.broker.observe.console.app import Console

log = logging.getLogger("kgroup.broker.console")

COALESCE_S = 0.2
SAMPLE_S = 2.0
KEEPALIVE_S = 15.0
MAX_BUFFER = 4 << 20


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def sse(event: str, data: Any) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


class LiveUpdates:
    def __init__(self, console: Console) -> None:
        self.console = console
        self.clients: dict[asyncio.StreamWriter, str | None] = {}
        self.dirty: set[str] = set()
        self._flush_at: asyncio.TimerHandle | None = None
        self._task: asyncio.Task | None = None
        self._last_list: bytes = b""
        self.sent = 0                                   # messages written, for tests

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._tick(), name="kgroup-console-tick")

    async def close(self) -> None:
        if self._flush_at is not None:
            self._flush_at.cancel()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    # ---- group changes --------------------------------------------------------------------

    def changed(self, groups: set[str]) -> None:
        """The observer saw these groups change (called on the loop, right after the change)."""
        if not self.clients:
            return
        self.dirty |= groups
        if self._flush_at is None:
            self._flush_at = asyncio.get_running_loop().call_later(COALESCE_S, self._flush)

    def _flush(self) -> None:
        self._flush_at = None
        dirty, self.dirty = self.dirty, set()
        try:
            c = self.console
            now = now_ms()
            listing = self._listing(now)
            details: dict[str, bytes] = {}
            for writer, group in list(self.clients.items()):
                out = [listing] if listing else []
                if group is not None and group in dirty:
                    if group not in details:
                        detail = group_detail(c.views, c.observer.history, c.lag, group, now, c.telemetry)
                        details[group] = sse("group", detail if detail is not None else {"group": group,
                                                                                          "gone": True})
                    out.append(details[group])
                self._send(writer, out)
        except Exception:
            log.exception("console update failed")

    def _listing(self, now: int, lags: dict | None = None) -> bytes:
        """The group list message, or b"" when it is what every page already has."""
        c = self.console
        data = group_list(c.views, c.observer.history, c.lag, now, lags)
        body = json.dumps(data["groups"], separators=(",", ":")).encode()
        if body == self._last_list:
            return b""
        self._last_list = body
        return sse("groups", data)

    # ---- lag samples and keep-alives ------------------------------------------------------

    async def _tick(self) -> None:
        since_keepalive = 0.0
        while True:
            await asyncio.sleep(SAMPLE_S)
            try:
                now = now_ms()
                lags = self.console.lag.sample(now)
                if not self.clients:
                    continue
                listing = self._listing(now, lags)
                since_keepalive += SAMPLE_S
                keepalive = since_keepalive >= KEEPALIVE_S
                if keepalive:
                    since_keepalive = 0.0
                samples: dict[str, bytes] = {}
                for writer, group in list(self.clients.items()):
                    out = [listing] if listing else []
                    if group is not None and group in lags:
                        if group not in samples:
                            samples[group] = sse("lag", {"time_ms": now, "partitions": {
                                f"{t}:{p}": lag for (t, p), lag in sorted(lags[group].items())}})
                        out.append(samples[group])
                    if keepalive and not out:
                        out.append(b": keepalive\n\n")
                    self._send(writer, out)
            except Exception:
                log.exception("console lag sample failed")

    # ---- one page -------------------------------------------------------------------------

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, group: str | None) -> None:
        """Stream to one page until it goes away."""
        c = self.console
        now = now_ms()
        first = [sse("groups", group_list(c.views, c.observer.history, c.lag, now))]
        if group is not None:
            detail = group_detail(c.views, c.observer.history, c.lag, group, now, c.telemetry)
            first.append(sse("group", detail if detail is not None else {"group": group, "gone": True}))
        self.clients[writer] = group
        try:
            self._send(writer, [b"retry: 2000\n\n", *first])
            while await reader.read(4096):
                pass                                    # a page sends nothing; EOF is goodbye
        finally:
            self.clients.pop(writer, None)

    def _send(self, writer: asyncio.StreamWriter, chunks: list[bytes]) -> None:
        if not chunks:
            return
        transport = writer.transport
        if transport.is_closing() or transport.get_write_buffer_size() > MAX_BUFFER:
            self.clients.pop(writer, None)
            transport.abort()
            return
        writer.write(b"".join(chunks))
        self.sent += len(chunks)
