"""A small HTTP/1.1 server on asyncio's own streams, for the broker's HTTP listeners: the
read-only web console and /metrics (console/), and the control API (control_api.py).

How this works: each connection reads a request head (at most `HEAD_LIMIT` bytes, within
`IDLE_S` seconds) and, for methods that take one, a body of Content-Length bytes (at most
`BODY_LIMIT`), hands a `Request` to the application and writes the `Response` it returns;
connections are kept alive as HTTP/1.1 allows. A `Stream` response (server-sent events)
takes the connection over until the client goes away. Only the methods the application
names are served (405 otherwise; the console names GET and HEAD only); anything malformed
gets a 400 (413 for a body too large, 431 for a head) and the connection closes. At most
`max_connections` are open at once; past that a new one is closed at once, so a crowd of
browsers or scripts cannot take memory from the broker. An application that raises gets a
500 and the server goes on.

No web framework: each listener needs a handful of routes, and asyncio's server does that
in a page of code without a dependency in the broker.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qsl, unquote, urlsplit

log = logging.getLogger("kgroup.broker.http")

HEAD_LIMIT = 16 * 1024
BODY_LIMIT = 1 << 20
IDLE_S = 30.0
READ_ONLY = ("GET", "HEAD")
JSON = "application/json"


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str                      # percent-decoded
    query: dict[str, str]
    headers: dict[str, str]        # lower-case names
    body: bytes = b""
    # The path's segments, each percent-decoded on its own (a group id may hold a "/").
    segments: tuple[str, ...] = ()
    peer: str = ""                 # the client's IP address (ACLs name hosts)


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Stream:
    """Take the connection over (server-sent events): `run(writer)` writes until done."""

    run: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]
    content_type: str = "text/event-stream; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = field(default=(("Cache-Control", "no-cache"),))


App = Callable[[Request], Awaitable["Response | Stream"]]


class BadRequest(Exception):
    pass


def text(status: int, message: str | None = None) -> Response:
    return Response(status, ((message or HTTPStatus(status).phrase) + "\n").encode())


def json_response(status: int, value: Any) -> Response:
    return Response(status, (json.dumps(value, separators=(",", ":")) + "\n").encode(), JSON)


class HttpServer:
    def __init__(self, app: App, methods: tuple[str, ...] = READ_ONLY, max_connections: int = 64) -> None:
        self.app = app
        self.methods = methods
        self.max_connections = max_connections
        self.server: asyncio.AbstractServer | None = None
        self.connections: set[asyncio.Task] = set()

    async def start(self, host: str, port: int) -> tuple[str, int]:
        self.server = await asyncio.start_server(self._serve, host, port, limit=HEAD_LIMIT, reuse_address=True)
        bound = self.server.sockets[0].getsockname()
        return bound[0], bound[1]

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
        for task in list(self.connections):
            task.cancel()
        await asyncio.gather(*self.connections, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self.connections) >= self.max_connections:
            writer.close()
            return
        task = asyncio.current_task()
        self.connections.add(task)
        address = writer.get_extra_info("peername")
        peer = address[0] if isinstance(address, tuple) else ""
        try:
            while True:
                try:
                    async with asyncio.timeout(IDLE_S):
                        head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, TimeoutError, ConnectionError):
                    return
                except asyncio.LimitOverrunError:
                    await _write(writer, text(431), keep_alive=False)
                    return
                try:
                    request = _parse(head, peer)
                    length = _content_length(request)
                except BadRequest as exc:
                    await _write(writer, text(400, f"bad request: {exc}"), keep_alive=False)
                    return
                keep_alive = request.headers.get("connection", "").lower() != "close"
                if request.method not in self.methods:
                    allowed = ", ".join(self.methods)
                    why = "read-only: only GET and HEAD" if self.methods == READ_ONLY else f"only {allowed}"
                    response: Response | Stream = Response(405, f"{why}\n".encode(), headers=(("Allow", allowed),))
                elif length and request.method in READ_ONLY:
                    await _write(writer, text(400, "a GET has no body"), keep_alive=False)
                    return
                elif length > BODY_LIMIT:
                    await _write(writer, text(413, f"a body is at most {BODY_LIMIT} bytes"), keep_alive=False)
                    return
                else:
                    if length:
                        try:
                            async with asyncio.timeout(IDLE_S):
                                body = await reader.readexactly(length)
                        except (asyncio.IncompleteReadError, TimeoutError, ConnectionError):
                            return
                        request = dataclasses.replace(request, body=body)
                    try:
                        response = await self.app(request)
                    except Exception:
                        log.exception("http request %s %s failed", request.method, request.path)
                        response = text(500)
                if isinstance(response, Stream):
                    writer.write(_head(200, response.content_type, None, response.headers, keep_alive=True))
                    await writer.drain()
                    await response.run(reader, writer)
                    return
                await _write(writer, response, keep_alive, head_only=request.method == "HEAD")
                if not keep_alive:
                    return
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self.connections.discard(task)
            writer.close()


def _content_length(request: Request) -> int:
    if "transfer-encoding" in request.headers:
        raise BadRequest("chunked bodies are not accepted; send Content-Length")
    raw = request.headers.get("content-length", "0") or "0"
    if not raw.isdigit():
        raise BadRequest(f"Content-Length {raw[:20]!r} is not a number")
    return int(raw)


def _parse(head: bytes, peer: str = "") -> Request:
    try:
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ")
    except ValueError:
        raise BadRequest("request line is not METHOD TARGET HTTP/1.x") from None
    if not version.startswith("HTTP/1."):
        raise BadRequest(f"unsupported protocol {version[:20]!r}")
    headers = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep:
            raise BadRequest("header line without a colon")
        headers[name.strip().lower()] = value.strip()
    if version == "HTTP/1.0" and headers.get("connection", "").lower() != "keep-alive":
        headers["connection"] = "close"
    parts = urlsplit(target)
    segments = tuple(unquote(s) for s in parts.path.split("/") if s)
    return Request(method, unquote(parts.path), dict(parse_qsl(parts.query)), headers, b"", segments, peer)


def _head(status: int, content_type: str, length: int | None, extra: tuple[tuple[str, str], ...],
          keep_alive: bool) -> bytes:
    lines = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}", f"Content-Type: {content_type}",
             "X-Content-Type-Options: nosniff"]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    lines.append("Connection: keep-alive" if keep_alive else "Connection: close")
    lines += [f"{k}: {v}" for k, v in extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _write(writer: asyncio.StreamWriter, r: Response, keep_alive: bool, head_only: bool = False) -> None:
    writer.write(_head(r.status, r.content_type, len(r.body), r.headers, keep_alive)
                 + (b"" if head_only else r.body))
    await writer.drain()
