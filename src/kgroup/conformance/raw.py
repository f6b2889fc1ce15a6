"""A raw Kafka connection for exact request sequences: kio objects in, kio objects out.

Unlike `kgroup.client.connection.Connection` it negotiates nothing and never picks a
version: each request goes out at the version of its kio class, exactly as built, and can
carry bytes a well-behaved client never sends (an unknown tagged field, bytes after the
body) — what the differential scenarios and wire checks need to ask both brokers the same
question. Requests may overlap (a JoinGroup that waits for the rebalance): the reader task
hands each response to the request with its correlation id. When the broker closes the
connection, every waiting request raises `ConnectionClosed`.
"""

from __future__ import annotations

import asyncio
import itertools
import struct
from typing import Any

from kgroup.wire import decode_response, encode_request

_SIZE = struct.Struct(">i")


class ConnectionClosed(Exception):
    """The broker closed the connection instead of answering."""


def unknown_tagged_field(payload: bytes, *, tag: int = 10_000, data: bytes = b"\x01\x02") -> bytes:
    """`payload` (a flexible request's header+body, no size) with an unknown tagged field
    added to the body's top-level tagged fields — possible only when it has none yet, i.e.
    ends in a zero count. Returns `payload` unchanged otherwise."""
    if not payload or payload[-1] != 0:
        return payload
    return payload[:-1] + bytes([1]) + _uvarint(tag) + _uvarint(len(data)) + data


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


class RawClient:
    """One connection; `call(request)` sends it at its own version and returns the answer."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, client_id: str,
                 timeout: float) -> None:
        self.client_id = client_id
        self.timeout = timeout
        self._reader = reader
        self._writer = writer
        self._ids = itertools.count(1)
        self._pending: dict[int, tuple[int, int, asyncio.Future]] = {}
        self._closed = False
        self._task = asyncio.create_task(self._read_loop())

    @classmethod
    async def open(cls, address: str, client_id: str = "raw", timeout: float = 30.0) -> "RawClient":
        host, port = address.rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        return cls(reader, writer, client_id, timeout)

    @property
    def closed(self) -> bool:
        return self._closed

    async def close(self) -> None:
        self._writer.close()
        self._task.cancel()
        try:
            await self._task
        except (asyncio.CancelledError, Exception):  # noqa: BLE001
            pass

    def payload(self, request: Any, correlation_id: int) -> bytes:
        """The request's header and body as `call` would send them (without the size)."""
        api_key, version = int(request.__api_key__), int(request.__version__)
        return encode_request(api_key, version, correlation_id, self.client_id, request)[4:]

    async def call(self, request: Any, *, tamper: Any = None, timeout: float | None = None) -> Any:
        """Send `request` and return the decoded kio response. `tamper(payload) -> payload`
        rewrites the bytes first (same correlation id). A Produce with acks=0 returns None."""
        return await self.start(request, tamper=tamper, timeout=timeout)

    def start(self, request: Any, *, tamper: Any = None, timeout: float | None = None) -> asyncio.Task:
        """Send `request` now; the task gives its response (for requests that wait)."""
        api_key, version = int(request.__api_key__), int(request.__version__)
        corr = next(self._ids)
        payload = self.payload(request, corr)
        if tamper is not None:
            payload = tamper(payload)
        no_answer = api_key == 0 and int(getattr(request, "acks", 1)) == 0
        return asyncio.ensure_future(self._send(api_key, version, corr, payload, no_answer,
                                                timeout or self.timeout))

    async def send_bytes(self, api_key: int, version: int, payload: bytes,
                         timeout: float | None = None) -> bytes:
        """Send a frame of arbitrary bytes (its correlation id at offset 4) and return the
        answer's frame undecoded."""
        corr = struct.unpack_from(">i", payload, 4)[0]
        return await self._send(api_key, version, corr, payload, False, timeout or self.timeout, decode=False)

    async def _send(self, api_key: int, version: int, corr: int, payload: bytes, no_answer: bool,
                    timeout: float, decode: bool = True) -> Any:
        if self._closed:
            raise ConnectionClosed("the connection is closed")
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        if not no_answer:
            self._pending[corr] = (api_key, version, future)
        self._writer.write(_SIZE.pack(len(payload)) + payload)
        await self._writer.drain()
        if no_answer:
            return None
        async with asyncio.timeout(timeout):
            frame = await future
        if not decode:
            return frame
        return decode_response(api_key, version, frame)[1]

    async def _read_loop(self) -> None:
        try:
            while True:
                size = _SIZE.unpack(await self._reader.readexactly(4))[0]
                frame = await self._reader.readexactly(size)
                corr = _SIZE.unpack_from(frame, 0)[0]
                item = self._pending.pop(corr, None)
                if item is not None and not item[2].done():
                    item[2].set_result(frame)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass
        finally:
            self._closed = True
            for _, _, future in self._pending.values():
                if not future.done():
                    future.set_exception(ConnectionClosed("the broker closed the connection"))
            self._pending.clear()
