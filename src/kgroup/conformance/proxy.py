"""A recording proxy: what any client observes of a broker, request by request.

How this works: the proxy binds its port at once (so a broker can be told to advertise it
before it starts) and, once given its `upstream`, forwards every connection there byte for
byte on an asyncio loop of its own thread. Each request frame's first bytes say its API
key, version and correlation id, and the client id follows in every header version, so the
proxy knows which exchange a response answers without decoding the request body. Frames of
a client id somebody `watch`es are decoded with kio (`kgroup.wire`) and kept as
`Exchange`s: the request, the response, and the error codes found anywhere in the response.
That makes a transcript of any client — librdkafka, kafka-python, aiokafka, our own — and
the same for both brokers, since both are reached through a proxy of this kind.

`versions` (api key -> (min, max)), when set, narrows the ranges the broker advertises in
its ApiVersions answers, so that clients pick the same versions on both brokers of a
comparison (the differential suite sets the ranges both brokers and kio share); the
versions only one broker serves are compared by the wire checks instead. `features` does
the same for the feature flags of ApiVersions v3+ (a client may act on a finalized
transaction.version).
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from kgroup.wire import decode_response
from kgroup.wire.codec import RequestHeader, encode_response
from kgroup.wire.kio_build import replace_fields
from kgroup.wire.versions import is_flexible

from kgroup.conformance.errors import error_codes

_HEADER = struct.Struct(">ihhih")   # size, api key, version, correlation id, client id length
_SIZE = struct.Struct(">i")
_API_VERSIONS = 18


@dataclass
class Exchange:
    """One request a watched client sent and what the broker answered."""

    client_id: str
    connection: int
    api_key: int
    version: int
    correlation_id: int
    request: bytes
    sent_at: float
    response: Any = None            # the kio response; None until answered (or undecodable)
    errors: tuple[tuple[str, int], ...] | None = None   # (path, code) anywhere in the response
    answered_at: float | None = None
    closed: bool = False            # the broker closed the connection instead of answering
    abandoned: bool = False         # the client closed the connection before the answer


@dataclass
class Watch:
    """The exchanges of the client ids that start with `prefix`, in the order sent."""

    prefix: str
    exchanges: list[Exchange] = field(default_factory=list)


class RecordingProxy:
    """A TCP proxy in front of one broker that records the exchanges of watched clients."""

    def __init__(self, host: str = "127.0.0.1", name: str = "proxy") -> None:
        self.host = host
        self.name = name
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind((host, 0))
        self._sock.listen(128)
        self.port = self._sock.getsockname()[1]
        self.upstream: tuple[str, int] | None = None
        self.versions: dict[int, tuple[int, int]] | None = None
        self.features: set[str] | None = None
        self._watches: list[Watch] = []
        self._lock = threading.Lock()
        self._connections = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task] = set()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    # ---- life cycle -----------------------------------------------------------------------

    def start(self, upstream: tuple[str, int] | str | None = None) -> "RecordingProxy":
        if upstream is not None:
            self.set_upstream(upstream)
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)

            async def serve() -> None:
                self._server = await asyncio.start_server(self._accept, sock=self._sock)
                ready.set()

            loop.run_until_complete(serve())
            loop.run_forever()
            loop.close()

        self._thread = threading.Thread(target=run, name=f"kgroup-{self.name}", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def set_upstream(self, upstream: tuple[str, int] | str) -> None:
        if isinstance(upstream, str):
            host, port = upstream.rsplit(":", 1)
            upstream = (host, int(port))
        self.upstream = upstream

    def close(self) -> None:
        loop = self._loop
        if loop is None:
            return

        async def stop() -> None:
            if self._server is not None:
                self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.sleep(0)

        try:
            asyncio.run_coroutine_threadsafe(stop(), loop).result(5)
        except Exception:  # noqa: BLE001 (closing regardless)
            pass
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(5)
        self._loop = None

    # ---- what is recorded -----------------------------------------------------------------

    def watch(self, prefix: str) -> Watch:
        """Record from now on the exchanges of every client id starting with `prefix`."""
        w = Watch(prefix)
        with self._lock:
            self._watches.append(w)
        return w

    def unwatch(self, w: Watch) -> None:
        with self._lock:
            if w in self._watches:
                self._watches.remove(w)

    def _watch_of(self, client_id: str) -> Watch | None:
        with self._lock:
            for w in self._watches:
                if client_id.startswith(w.prefix):
                    return w
        return None

    # ---- forwarding -----------------------------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        self._connections += 1
        number = self._connections
        try:
            if self.upstream is None:
                return
            try:
                up_reader, up_writer = await asyncio.open_connection(*self.upstream)
            except OSError:
                return
            pending: dict[int, Exchange | tuple[int, int, str]] = {}
            up = asyncio.create_task(self._requests(number, reader, up_writer, pending))
            down = asyncio.create_task(self._responses(up_reader, writer, pending))
            client_left = False
            try:
                done, _ = await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
                client_left = up in done       # the client's side ended first
            except asyncio.CancelledError:
                client_left = True              # the proxy is closing
            finally:
                for t in (up, down):
                    t.cancel()
                for item in pending.values():
                    if isinstance(item, Exchange) and item.response is None:
                        if client_left:
                            item.abandoned = True
                        else:
                            item.closed = True
                up_writer.close()
        finally:
            writer.close()
            if task is not None:
                self._tasks.discard(task)

    async def _requests(self, number: int, reader: asyncio.StreamReader, up: asyncio.StreamWriter,
                        pending: dict[int, Any]) -> None:
        while True:
            try:
                size_bytes = await reader.readexactly(4)
                size = _SIZE.unpack(size_bytes)[0]
                frame = await reader.readexactly(size)
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            if size >= 10:
                api_key, version, corr, length = struct.unpack_from(">hhih", frame, 0)
                client_id = frame[10:10 + length].decode(errors="replace") if length >= 0 else ""
                w = self._watch_of(client_id)
                if w is not None:
                    exchange = Exchange(client_id, number, api_key, version, corr, frame, time.monotonic())
                    w.exchanges.append(exchange)
                    pending[corr] = exchange
                else:
                    pending[corr] = (api_key, version, client_id)
            up.write(size_bytes + frame)
            try:
                await up.drain()
            except ConnectionError:
                return

    async def _responses(self, up: asyncio.StreamReader, writer: asyncio.StreamWriter,
                         pending: dict[int, Any]) -> None:
        while True:
            try:
                size_bytes = await up.readexactly(4)
                frame = await up.readexactly(_SIZE.unpack(size_bytes)[0])
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            corr = _SIZE.unpack_from(frame, 0)[0] if len(frame) >= 4 else None
            item = pending.pop(corr, None)
            if isinstance(item, Exchange):
                self._decode(item, frame)
                api_key, version, client_id = item.api_key, item.version, item.client_id
            elif item is not None:
                api_key, version, client_id = item
            else:
                api_key = version = -1
                client_id = ""
            if api_key == _API_VERSIONS and self.versions is not None:
                frame = self._narrowed(version, corr, client_id, frame)
                size_bytes = _SIZE.pack(len(frame))
            writer.write(size_bytes + frame)
            try:
                await writer.drain()
            except ConnectionError:
                return

    def _decode(self, exchange: Exchange, frame: bytes) -> None:
        exchange.answered_at = time.monotonic()
        try:
            _, response = decode_response(exchange.api_key, exchange.version, frame)
        except Exception:  # noqa: BLE001 (a version kio lacks: kept undecoded)
            return
        exchange.response = response
        exchange.errors = error_codes(response)

    def _narrowed(self, version: int, corr: int, client_id: str, frame: bytes) -> bytes:
        """An ApiVersions answer with every range cut to `versions` (an error answer, or one
        kio cannot read, passes unchanged)."""
        try:
            _, response = decode_response(_API_VERSIONS, version, frame)
        except Exception:  # noqa: BLE001
            return frame
        if int(response.error_code) != 0 or int(response.__version__) != version:
            return frame
        keys = []
        for k in response.api_keys:
            common = self.versions.get(int(k.api_key)) if self.versions else None
            if common is None:
                continue
            lo, hi = max(int(k.min_version), common[0]), min(int(k.max_version), common[1])
            if lo <= hi:
                keys.append(replace_fields(k, min_version=lo, max_version=hi))
        response = replace_fields(response, api_keys=tuple(keys))
        if self.features is not None and hasattr(response, "finalized_features"):
            finalized = tuple(f for f in response.finalized_features if f.name in self.features)
            response = replace_fields(
                response, supported_features=tuple(f for f in response.supported_features if f.name in self.features),
                finalized_features=finalized,
                finalized_features_epoch=response.finalized_features_epoch if finalized else -1)
        header = RequestHeader(_API_VERSIONS, version, corr, client_id, is_flexible(_API_VERSIONS, version))
        return encode_response(header, response)[4:]
