"""One Kafka connection: bytes in, frames out, answers back in the order they were asked.

How this works. A plain listener's connections are `ServedConnection`s, asyncio Protocols: the
transport hands each chunk it reads to `data_received`, which cuts it into frames
(FrameSplitter, bounded by the maximum request size) and runs each frame's handler at once.
Most requests (heartbeats, commits under fsync=never, fetches with data) complete without
suspending, so a chunk of pipelined requests is answered with one write and nothing more:
no StreamReader buffer, no future and no task wake-up per read (they were about a tenth of a
heartbeat's cost).

Each connection has one task of its own (`worker`), idle until it is needed, and a handler's
first step runs as that task (asyncio's `_enter_task`, what Python 3.12's eager tasks do):
whatever asks for the current task (`asyncio.timeout` in a request to another node) gets
the task that will await the rest. A handler that suspends (a parked JoinGroup, a long-poll
Fetch, an fsync wait, a connection muted by a quota), an answer sent with sendfile and a
full write buffer make the connection busy: reading pauses, the worker awaits what
suspended and then every frame that came behind it (Kafka answers a connection's requests
one at a time, in order), and reading resumes once it has caught up. A TLS listener's
connections do their handshake as streams and then feed the same `ServedConnection` from a
StreamReader (`serve_stream`), whose task plays the worker's part.

Answers computed before this node learnt it lost partitions (it was paused in between) are
not sent: the connection closes and the client rediscovers. Bytes that cannot be framed or
decoded close the connection, never the broker; the answers to the requests before the bad
one go out first.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections import deque
from typing import Any

from asyncio.tasks import _enter_task, _leave_task  # noqa: PLC2701 (see the module docstring)

from kgroup.broker.config import ListenerConfig
from kgroup.broker.data.fetch_api import send_answer
from kgroup.broker.requests import CloseConnection, Resume
from kgroup.wire import FramingError, FrameSplitter, not_kafka

log = logging.getLogger("kgroup.broker")

# Answers waiting in the transport past this: the connection stops and drains first.
WRITE_BACKLOG = 1 << 20


class ServedConnection(asyncio.Protocol):
    """A client connection of a `Server` (server.py), served as the module docstring says."""

    def __init__(self, server: Any, listener: ListenerConfig | None, tls: bool = False) -> None:
        self.server = server
        self.listener = listener
        self.tls = tls
        self.transport: Any = None
        self.splitter = FrameSplitter(server.config.max_request_bytes)
        self.out: list[bytes] = []             # answers not yet handed to the transport, in order
        self.opening: bytes | None = b""       # the first bytes, until a frame has been read
        self.backlog: deque[bytes] = deque()   # frames waiting while the connection is busy
        self.busy: asyncio.Future | None = None  # set while a suspended request is awaited
        self.pending: tuple[Any, int] | None = None  # what the worker is to await next
        self.worker: asyncio.Task | None = None  # the connection's own task
        # The context a handler's first step runs in here, and the rest of it, if it
        # suspends, in the worker: a context variable a handler sets before it suspends (the
        # fetch quota's check) is then there after it, and resetting it works.
        self.vars = contextvars.copy_context()
        self.driver: asyncio.Task | None = None  # the StreamReader loop of a TLS connection
        self._wake: asyncio.Future | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.closed = False                    # lost, or closed by us: nothing more is written
        self.eof = False                       # the client is done sending
        self._write_paused = False
        self._writable: list[asyncio.Future] = []
        self._registered = False
        self._finished = False

    # ---- asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        server = self.server
        if server._draining:           # accepted while the broker stops: closed unanswered
            self.closed = True
            transport.close()
            return
        server.connections.add(self)
        self._registered = True
        self.peer = transport.get_extra_info("peername")
        # Decided once per connection: the secured path only where it has work to do.
        self.handle, self.context = server._path_for(self.listener, transport, self.peer, self.splitter)
        self.own = server.node.ownership
        server._connection_ids += 1
        self.id = server._connection_ids
        # Fetch answers go out with sendfile on plain TCP; through TLS (the kernel cannot
        # encrypt a file it sends) their records are read in and written as bytes.
        self.zero_copy = not self.tls and transport.get_extra_info("socket") is not None
        self.loop = asyncio.get_running_loop()
        if self.driver is None:
            self.worker = self.loop.create_task(self._work())

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        if self.opening is not None and len(self.opening) < 64:
            self.opening += data[:64]
        try:
            frames = self.splitter.feed(data)
        except Exception as exc:  # noqa: BLE001 (FramingError: logged, the connection closes)
            self._fail(exc)
            return
        if not frames:
            return
        self.opening = None
        if self.busy is not None:
            self.backlog.extend(frames)
        elif self.driver is not None:
            self._answer_now(frames)           # already in the driver's task
        else:
            worker, loop = self.worker, self.loop
            _enter_task(loop, worker)
            try:
                self._answer_now(frames)
            finally:
                _leave_task(loop, worker)

    def eof_received(self) -> bool:
        # The answers to what was already asked still go out, then the connection closes.
        self.eof = True
        return self.busy is not None

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._wake_writers()
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)      # the idle worker ends
        if self.busy is None:
            self._finish()
        # else the worker ends what it began (its answers go nowhere) and finishes then

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        self._wake_writers()

    # ---- serving ---------------------------------------------------------------------------

    def _answer_now(self, frames: list[bytes]) -> None:
        """Answer a chunk's frames here, until one suspends: it and the rest go to a task."""
        losses = self.own.losses
        handle, context, cid, out = self.handle, self.context, self.id, self.out
        try:
            for i, frame in enumerate(frames):
                coro = handle(frame, context, cid)
                try:
                    yielded = self.vars.run(coro.send, None)
                except StopIteration as done:
                    response = done.value
                else:
                    self._go_busy(frames, i + 1, self._resume(coro, yielded, self.vars), losses)
                    return
                if response is not None and not self._queued(response):
                    self._go_busy(frames, i + 1, self._given(response), losses)
                    return
            if out:
                self._send(losses)
                if self.transport.get_write_buffer_size() > WRITE_BACKLOG:
                    self._go_busy(frames, len(frames), self._given(None), losses)
        except Exception as exc:  # noqa: BLE001 (each kind is logged as it deserves, nothing escapes)
            self._fail(exc)

    def _go_busy(self, frames: list[bytes], rest: int, first: Any, losses: int) -> None:
        self.backlog.extend(frames[rest:])
        self.busy = self.loop.create_future()
        self.pending = (first, losses)
        if self.driver is None:
            self.transport.pause_reading()
            if self._wake is not None and not self._wake.done():
                self._wake.set_result(None)

    async def _work(self) -> None:
        """(the worker task) Await what made the connection busy, each time it does."""
        while not self.closed:
            if self.pending is None:
                self._wake = self.loop.create_future()
                await self._wake
                continue
            first, losses = self.pending
            self.pending = None
            await self._catch_up(first, losses)

    @staticmethod
    async def _resume(coro: Any, yielded: Any, context: contextvars.Context) -> Any:
        return await Resume(coro, yielded, context)

    @staticmethod
    async def _given(response: Any) -> Any:
        return response

    async def _catch_up(self, first: Any, losses: int) -> None:
        """(worker or driver) The request that suspended, then the frames behind it, in order."""
        try:
            if self.out:
                self._send(losses)   # the answers before the one that suspended go first
            await self._give(await first, losses)
            while self.backlog:
                losses = self.own.losses
                coro = self.handle(self.backlog.popleft(), self.context, self.id)
                try:
                    yielded = coro.send(None)
                except StopIteration as done:
                    response = done.value
                else:
                    if self.out:
                        self._send(losses)
                    response = await Resume(coro, yielded)
                await self._give(response, losses)
            if self.out:
                self._send(losses)
            await self._drain()
        except asyncio.CancelledError:
            self._close()
            raise
        except Exception as exc:  # noqa: BLE001 (each kind is logged as it deserves, nothing escapes)
            self._fail(exc)
        finally:
            first.close()     # cancelled before it ran: never awaited, and says nothing
            busy, self.busy = self.busy, None
            if busy is not None and not busy.done():
                busy.set_result(None)
        if self.closed:
            self._finish()
        elif self.eof:
            self._close()
            self._finish()
        elif self.driver is None:
            self.transport.resume_reading()

    def _queued(self, response: Any) -> bool:
        """Queue an answer's bytes behind the others; False for one that goes out with
        sendfile (not queued: it must be awaited)."""
        if type(response) is bytes:
            self.out.append(response)
        elif response.zero_copy:
            return False
        else:
            self.out.append(response.parts[0])
        return True

    async def _give(self, response: Any, losses: int) -> None:
        if response is None or self._queued(response):
            return
        self._may_answer(losses)
        if self.closed:
            response.close()
        else:
            await send_answer(self.transport, self.out, response, self.zero_copy)
        self.out.clear()
        await self._drain()

    def _send(self, losses: int) -> None:
        self._may_answer(losses)
        out = self.out
        if not self.closed:
            self.transport.write(b"".join(out) if len(out) > 1 else out[0])
        out.clear()

    def _may_answer(self, losses: int) -> None:
        """Before answers go out: renew first if this node was paused (one clock read when
        not), and refuse to send them if it lost partitions since they were computed."""
        own = self.own
        own.gate()
        if own.losses != losses:
            self.out.clear()
            raise OwnershipLost()

    async def _drain(self) -> None:
        if self.closed or self.transport.get_write_buffer_size() <= WRITE_BACKLOG:
            return
        if self.writer is not None:
            await self.writer.drain()
            return
        while self._write_paused and not self.closed:
            waiter = asyncio.get_running_loop().create_future()
            self._writable.append(waiter)
            await waiter

    def _wake_writers(self) -> None:
        for waiter in self._writable:
            if not waiter.done():
                waiter.set_result(None)
        self._writable.clear()

    # ---- the end -----------------------------------------------------------------------------

    def _fail(self, exc: Exception) -> None:
        closing(exc, self.peer, self.opening, self.out)
        self._close()

    def _close(self) -> None:
        """Close, after the answers to the requests before the bad one."""
        if self.out and not self.closed and not self.transport.is_closing():
            self.transport.write(b"".join(self.out))
        self.out.clear()
        self.closed = True
        self.transport.close()

    def _finish(self) -> None:
        if self._finished or not self._registered:
            return
        self._finished = True
        self.server.connections.discard(self)
        self.server.node.connection_closed(self.id)

    def abandon(self) -> set[asyncio.Task]:
        """The broker stops: close now; returns the tasks to await (cancelled)."""
        tasks = {t for t in (self.worker, self.driver) if t is not None and not t.done()}
        for task in tasks:
            task.cancel()
        if not self.closed:
            self._close()
        self._finish()
        return tasks

    # ---- TLS: fed from a stream -------------------------------------------------------------

    async def serve_stream(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                           chunk: int) -> None:
        """Serve a connection that asyncio's streams hold (a TLS one, after its handshake):
        read chunks and hand them over, waiting whenever a request is being awaited."""
        self.writer = writer
        self.driver = asyncio.current_task()
        self.connection_made(writer.transport)
        try:
            while not self.closed:
                if self.pending is not None:
                    first, losses = self.pending
                    self.pending = None
                    await self._catch_up(first, losses)
                    continue
                data = await reader.read(chunk)
                if not data:
                    self.eof = True
                    break
                self.data_received(data)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            if not self.closed:
                self._close()
            self._finish()


def closing(exc: Exception, peer: Any, opening: bytes | None, out: list[bytes]) -> None:
    """Log why a connection closes; a failed authentication's last answer goes out first."""
    if isinstance(exc, FramingError):
        other = not_kafka(opening) if opening is not None else None
        if other is not None:
            log.warning("closing connection from %s: not a Kafka client (%s)", peer, other)
        else:
            log.warning("closing connection from %s: %s", peer, exc)
    elif isinstance(exc, CloseConnection):
        log.warning("closing connection from %s: %s", peer, exc)
        if exc.last_response is not None:
            out.append(exc.last_response)
    elif isinstance(exc, OwnershipLost):
        log.info("closing connection from %s: this node lost partitions while answering it", peer)
    elif not isinstance(exc, (ConnectionError, asyncio.IncompleteReadError)):
        log.error("closing connection from %s after an internal error", peer, exc_info=exc)


class OwnershipLost(Exception):
    """Drop this connection: answers computed for partitions this node lost must not go out."""
