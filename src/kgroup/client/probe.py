"""What is listening at an address that did not answer as a Kafka client expected.

How this works: ``probe(host, port)`` asks three questions at once, each on its own short
connection and within ``budget`` seconds: does it answer an HTTP request (``GET
/api/listeners``: kgroup's web console answers it with the broker's Kafka listeners), does
it complete a TLS handshake (then, over TLS, the Kafka questions below), and does it answer
Kafka's ApiVersions in plaintext. Where Kafka answers, a SaslHandshake with a mechanism no
broker has tells a SASL listener (UNSUPPORTED_SASL_MECHANISM with the mechanisms it
enables) from one that needs no authentication (ILLEGAL_SASL_STATE). The verdict is a
``Listener``; ``None`` when nothing could be told (no answer, refused, closed at once).

Only a command that has already failed, or is waiting longer than a Kafka broker takes to
answer ApiVersions, asks: a Kafka broker sent the HTTP request or a ClientHello closes that
connection as an oversized request, and nothing else comes of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import struct
from dataclasses import dataclass

from kgroup.wire import decode_response, encode_request, request_class
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.kio_build import build

__all__ = ["Listener", "probe"]

_SIZE = struct.Struct(">i")
_PROBE_MECHANISM = "KGROUP-PROBE"
_UNSUPPORTED_SASL_MECHANISM = 33
_ILLEGAL_SASL_STATE = 34
_MAX_ANSWER = 1 << 16


@dataclass(frozen=True, slots=True)
class Listener:
    """What answered: ``kind`` is "http", "kafka" or "tls" (a TLS handshake that completed)."""

    kind: str
    # Kafka (in plaintext, or inside TLS): the SASL mechanisms it wants; () if it wants none;
    # None if unknown (e.g. the connection closed after the TLS handshake: a client
    # certificate is required).
    sasl: tuple[str, ...] | None = None
    # TLS: whether Kafka answered inside it.
    kafka_inside: bool = False
    # HTTP from kgroup's web console: the broker's Kafka listeners ("HOST:PORT (PROTOCOL)").
    console_listeners: tuple[str, ...] | None = None


async def probe(host: str, port: int, budget: float = 1.0) -> Listener | None:
    """The verdict on ``host:port`` within ``budget`` seconds (see the module doc)."""
    tasks = [asyncio.ensure_future(asyncio.wait_for(ask(host, port), budget))
             for ask in (_http, _tls, _kafka_plain)]
    try:
        # Each question answered tells what it is (a server answering HTTP does not answer
        # Kafka, and so on): the first verdict is the verdict.
        for answered in asyncio.as_completed(tasks):
            try:
                verdict = await answered
            except Exception:  # noqa: BLE001 - no answer to that question
                continue
            if verdict is not None:
                return verdict
        return None
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


@contextlib.asynccontextmanager
async def _open(host: str, port: int):
    reader, writer = await asyncio.open_connection(host, port)
    try:
        yield reader, writer
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


async def _http(host: str, port: int) -> Listener | None:
    async with _open(host, port) as (reader, writer):
        writer.write(f"GET /api/listeners HTTP/1.0\r\nHost: {host}:{port}\r\n\r\n".encode("latin-1"))
        await writer.drain()
        answer = await reader.read(5)
        if answer != b"HTTP/":
            return None
        rest = answer + await reader.read(_MAX_ANSWER)
    head, _, body = rest.partition(b"\r\n\r\n")
    listeners = None
    if head.split(b" ", 2)[1:2] == [b"200"]:
        with contextlib.suppress(ValueError, TypeError, KeyError, AttributeError):
            doc = json.loads(body)
            listeners = tuple(f"{x['address']} ({x['protocol']})" for x in doc["kafka_listeners"])
    return Listener("http", console_listeners=listeners)


async def _tls(host: str, port: int) -> Listener | None:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE        # only asking whether it speaks TLS at all
    try:
        opened = await asyncio.open_connection(host, port, ssl=context, server_hostname=host)
    except ssl.SSLError:
        return None
    reader, writer = opened
    try:
        sasl = await _kafka_questions(reader, writer)
    except (OSError, asyncio.IncompleteReadError):
        # The handshake completed: a listener that closes at the first request wants a
        # client certificate (TLS 1.3 checks it after the handshake).
        return Listener("tls")
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
    return Listener("tls", sasl=sasl, kafka_inside=sasl is not None)


async def _kafka_plain(host: str, port: int) -> Listener | None:
    async with _open(host, port) as (reader, writer):
        sasl = await _kafka_questions(reader, writer)
    return None if sasl is None else Listener("kafka", sasl=sasl)


async def _kafka_questions(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> tuple[str, ...] | None:
    """ApiVersions v0, then SaslHandshake v1 with a mechanism no broker has: the SASL
    mechanisms wanted (() for none), or None if the answers are not Kafka's."""
    frame = await _roundtrip(reader, writer, ApiKey.API_VERSIONS, 0, 1, {})
    if frame is None:
        return None
    frame = await _roundtrip(reader, writer, ApiKey.SASL_HANDSHAKE, 1, 2, {"mechanism": _PROBE_MECHANISM})
    if frame is None:
        return None
    try:
        resp = decode_response(ApiKey.SASL_HANDSHAKE, 1, frame)[1]
    except Exception:
        return None
    code = int(resp.error_code)
    if code == _UNSUPPORTED_SASL_MECHANISM:
        return tuple(str(m) for m in resp.mechanisms)
    return () if code == _ILLEGAL_SASL_STATE else None


async def _roundtrip(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, api_key: int, version: int,
                     correlation_id: int, fields: dict) -> bytes | None:
    writer.write(encode_request(api_key, version, correlation_id, "kgroup-probe",
                                build(request_class(api_key, version), **fields)))
    await writer.drain()
    (size,) = _SIZE.unpack(await reader.readexactly(4))
    if not 4 <= size <= _MAX_ANSWER:
        return None
    frame = await reader.readexactly(size)
    return frame if _SIZE.unpack_from(frame, 0)[0] == correlation_id else None
