"""One asyncio connection to a Kafka broker.

How this works: ``Connection.open`` connects, starts a reader task and negotiates
ApiVersions (v3 first; a broker that does not know v3 answers UNSUPPORTED_VERSION, in
which case we ask again with v0, which every broker answers). The broker's ranges are kept
in ``broker_versions``. ``request`` picks the highest version inside both the broker's
range and ours (``wire.versions``), gives the request the next correlation id, writes the
frame and waits for the reader task to hand back the response frame with that id.
Several requests may be in flight at once (pipelining): the reader matches responses to
waiters by correlation id. When the connection dies every waiter gets a
KafkaConnectionError naming host:port.

Security (``client/security.py``): with a ``ClientSecurity`` the socket is wrapped in TLS
and, after ApiVersions, SASL authenticates the connection before ``open`` returns; a
session the broker limits (KIP-368) is renewed by re-authenticating on the same connection
before the next request once 85% of its lifetime has passed.

Requests are given as a kio request object (its version is used as is), a mapping of
field values, or a callable ``cls -> request``; the last two are built for the chosen
version with ``kgroup.wire.kio_build.build`` (fields that version lacks are dropped).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
import ssl
import struct
from collections.abc import Callable, Mapping
from typing import Any

from kio.serial import entity_reader

from kgroup.wire.kio_build import build
from kgroup.wire import (
    FrameSplitter,
    WireError,
    decode_response,
    encode_request,
    request_class,
    response_class,
)
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.kafka_reader import reading_null_as_empty
from kgroup.client.versions import CLIENT_APIS

from .errors import BrokerError, KafkaConnectionError, ProtocolError, RequestTimeout, UnsupportedApi
from .security import ClientSecurity

__all__ = ["Connection", "RequestBody", "DEFAULT_TIMEOUT"]

DEFAULT_TIMEOUT = 10.0
_CORR = struct.Struct(">i")
_ERROR16 = struct.Struct(">h")
_UNSUPPORTED_VERSION = 35
_CLIENT_SOFTWARE = ("kgroup", "0.1.0")
_SASL_APIS = (17, 36)
# Re-authenticate once this share of the session lifetime has passed (Kafka's clients pick
# 85-95%).
_REAUTH_AT = 0.85

RequestBody = Any | Mapping[str, Any] | Callable[[type], Any]


def _retrieved(fut: asyncio.Future[bytes]) -> None:
    if not fut.cancelled():
        fut.exception()


class Connection:
    """An open, version-negotiated connection; create it with ``await Connection.open``."""

    def __init__(
        self,
        host: str,
        port: int,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        client_id: str,
        timeout: float,
    ) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        self.timeout = timeout
        self.broker_versions: dict[int, tuple[int, int]] = {}
        self._reader = reader
        self._writer = writer
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[bytes]] = {}
        self._closed: KafkaConnectionError | None = None
        self.security: ClientSecurity | None = None
        self._reauth_at: float | None = None
        self._reauth_lock = asyncio.Lock()
        self._task = asyncio.create_task(self._read_loop(), name=f"kgroup-conn-{self.address}")

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def closed(self) -> bool:
        return self._closed is not None

    # -- opening -------------------------------------------------------------------------

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        client_id: str = "kgroup-cli",
        timeout: float = DEFAULT_TIMEOUT,
        security: ClientSecurity | None = None,
    ) -> Connection:
        """Connect to host:port, negotiate API versions and, with ``security``, set up TLS
        and authenticate.

        Raises KafkaConnectionError if the broker cannot be reached (or the TLS handshake
        fails), RequestTimeout if it does not answer ApiVersions in ``timeout`` seconds,
        AuthenticationError if it refuses our credentials.
        """
        tls = security.ssl_context() if security is not None else None
        try:
            # asyncio.timeout, not wait_for: Python 3.11's wait_for returns a result that
            # lands in the same loop turn as a cancellation (Ctrl-C) and drops the
            # cancellation, so the command carried on as if never interrupted.
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, ssl=tls, server_hostname=host if tls else None)
        except TimeoutError as exc:
            raise KafkaConnectionError(
                f"timed out connecting to {host}:{port} after {timeout:g}s"
            ) from exc
        except ssl.SSLError as exc:
            raise KafkaConnectionError(
                f"TLS handshake with {host}:{port} failed: {exc.reason or exc}",
                "check ssl.ca.location and that the listener speaks TLS (security.protocol)",
            ) from exc
        except (OSError, ValueError) as exc:
            errno = getattr(exc, "errno", None)
            if isinstance(exc, socket.gaierror):
                reason = f"cannot resolve host ({exc.strerror})"
            else:
                reason = os.strerror(errno).lower() if errno and errno > 0 else str(exc)
            raise KafkaConnectionError(f"cannot connect to {host}:{port}: {reason}") from exc
        conn = cls(host, port, reader, writer, client_id, timeout)
        try:
            try:
                await conn._negotiate()
            except KafkaConnectionError as exc:
                if tls is None:
                    raise
                # TLS 1.3 checks the client's certificate after the handshake: a listener
                # that wants one closes the connection at the first request.
                raise KafkaConnectionError(
                    f"{exc} right after the TLS handshake",
                    "the listener may require a client certificate (ssl.certificate.location, "
                    "ssl.key.location) signed by the CA it trusts") from None
            if security is not None and security.sasl:
                conn.security = security
                conn._session(await security.authenticate(conn))
        except BaseException:
            await conn.close()
            raise
        return conn

    def _session(self, lifetime_ms: int) -> None:
        """A session of ``lifetime_ms`` started now: when to re-authenticate (None: never)."""
        self._reauth_at = None
        if lifetime_ms > 0:
            self._reauth_at = asyncio.get_running_loop().time() + lifetime_ms / 1000 * _REAUTH_AT

    async def _reauthenticate(self) -> None:
        """KIP-368: authenticate again on this connection before the session ends."""
        async with self._reauth_lock:
            at = self._reauth_at
            if at is None or asyncio.get_running_loop().time() < at or self.security is None:
                return  # another request renewed it meanwhile
            self._reauth_at = None
            try:
                self._session(await self.security.authenticate(self))
            except BaseException:
                await self.close()
                raise

    async def _negotiate(self) -> None:
        """ApiVersions v3, or v0 if the broker answers v3 with UNSUPPORTED_VERSION."""
        ours = CLIENT_APIS[ApiKey.API_VERSIONS]
        version = min(3, ours.max_version)
        req = build(
            request_class(ApiKey.API_VERSIONS, version),
            client_software_name=_CLIENT_SOFTWARE[0],
            client_software_version=_CLIENT_SOFTWARE[1],
        )
        frame = await self._roundtrip(ApiKey.API_VERSIONS, version, req, self.timeout)
        if len(frame) >= 6 and _ERROR16.unpack_from(frame, 4)[0] == _UNSUPPORTED_VERSION:
            # The reply's layout is only reliable in v0; ask again in v0.
            version = 0
            req = build(request_class(ApiKey.API_VERSIONS, 0))
            frame = await self._roundtrip(ApiKey.API_VERSIONS, 0, req, self.timeout)
        resp = self._decode(ApiKey.API_VERSIONS, version, frame)
        if int(resp.error_code) != 0:
            raise BrokerError(int(resp.error_code), f"ApiVersions from {self.address}")
        self.broker_versions = {
            int(k.api_key): (int(k.min_version), int(k.max_version)) for k in resp.api_keys
        }

    # -- requests ------------------------------------------------------------------------

    def supports(self, api_key: int) -> bool:
        """Whether some version of ``api_key`` is served by both sides."""
        try:
            self.choose_version(api_key)
        except UnsupportedApi:
            return False
        return True

    def choose_version(
        self, api_key: int, max_version: int | None = None, min_version: int | None = None
    ) -> int:
        """The highest version both the broker and ``wire.versions`` support."""
        ours = CLIENT_APIS.get(api_key)
        name = ours.name if ours else f"API {api_key}"
        if ours is None:
            raise UnsupportedApi(f"kgroup's client does not speak {name}")
        theirs = self.broker_versions.get(api_key)
        if theirs is None:
            raise UnsupportedApi(f"broker {self.address} does not support {name}")
        hi = min(ours.max_version, theirs[1])
        lo = max(ours.min_version, theirs[0])
        if max_version is not None:
            hi = min(hi, max_version)
        if min_version is not None:
            lo = max(lo, min_version)
        if hi < lo:
            raise UnsupportedApi(
                f"broker {self.address} serves {name} v{theirs[0]}-{theirs[1]}, "
                f"kgroup needs a version in v{lo}-{hi}"
            )
        return hi

    async def request(
        self,
        api_key: int,
        body: RequestBody,
        version: int | None = None,
        *,
        timeout: float | None = None,
        max_version: int | None = None,
        min_version: int | None = None,
    ) -> Any:
        """Send one request and return the decoded kio response.

        ``version`` forces a version; otherwise the highest common one (optionally capped
        with ``max_version`` / ``min_version``). A Produce with acks=0 gets no response and
        returns None. Raises KafkaConnectionError, RequestTimeout, UnsupportedApi,
        ProtocolError.
        """
        if self._reauth_at is not None and api_key not in _SASL_APIS \
                and asyncio.get_running_loop().time() >= self._reauth_at:
            await self._reauthenticate()
        if hasattr(body, "__api_key__") and hasattr(body, "__version__"):
            request = body
            version = int(body.__version__)
            if int(body.__api_key__) != api_key:
                raise ValueError(f"request {type(body).__name__} is not api_key {api_key}")
        else:
            if version is None:
                version = self.choose_version(api_key, max_version, min_version)
            cls = request_class(api_key, version)
            request = build(cls, **body) if isinstance(body, Mapping) else body(cls)
        wait = self.timeout if timeout is None else timeout
        expect = not (api_key == ApiKey.PRODUCE and int(getattr(request, "acks", -1)) == 0)
        frame = await self._roundtrip(api_key, version, request, wait, expect)
        if frame is None:
            return None
        return self._decode(api_key, version, frame)

    def _decode(self, api_key: int, version: int, frame: bytes) -> Any:
        try:
            return decode_response(api_key, version, frame)[1]
        except WireError as exc:
            # Lenient about bytes after a complete body: librdkafka's mock cluster, for
            # one, ends flexible Metadata responses with an extra tag-buffer byte.
            if "trailing bytes" in str(exc):
                try:
                    cls = response_class(api_key, version)
                    _, offset = entity_reader(cls.__header_schema__)(frame, 0)
                    return entity_reader(cls)(frame, offset)[0]
                except Exception:
                    pass
            # Lenient about a null where Kafka never writes one: the mock's error answers
            # carry a null SyncGroup assignment or LeaveGroup members list; its error code
            # is what the member acts on (unread, the member took it for a lost coordinator
            # and rejoined, starting one more rebalance each time).
            if "serialized as null" in str(exc):
                try:
                    with reading_null_as_empty():
                        return decode_response(api_key, version, frame)[1]
                except WireError:
                    pass
            raise ProtocolError(f"bad response from {self.address}: {exc}") from exc

    async def _roundtrip(
        self, api_key: int, version: int, request: Any, timeout: float, expect: bool = True
    ) -> bytes | None:
        if self._closed is not None:
            raise KafkaConnectionError(str(self._closed))
        corr = next(self._ids) & 0x7FFFFFFF
        frame = encode_request(api_key, version, corr, self.client_id, request)
        fut: asyncio.Future[bytes] | None = None
        if expect:
            fut = asyncio.get_running_loop().create_future()
            # A caller cancelled while it waited leaves `fut` behind (the shield below); if
            # the connection then fails, nobody reads its exception, which asyncio would log
            # at exit as "Future exception was never retrieved".
            fut.add_done_callback(_retrieved)
            self._pending[corr] = fut
        try:
            self._writer.write(frame)
            await self._writer.drain()
        except (OSError, RuntimeError) as exc:
            self._pending.pop(corr, None)
            self._fail(KafkaConnectionError(f"lost connection to {self.address}: {exc}"))
            raise KafkaConnectionError(f"lost connection to {self.address}: {exc}") from exc
        if fut is None:
            return None
        try:
            # Not wait_for (see connect): a cancellation must never be traded for an answer.
            # The shield keeps `fut` itself pending, so a late answer is still matched.
            async with asyncio.timeout(timeout):
                return await asyncio.shield(fut)
        except TimeoutError as exc:
            self._pending.pop(corr, None)
            name = CLIENT_APIS[api_key].name if api_key in CLIENT_APIS else api_key
            raise RequestTimeout(
                f"{self.address} did not answer {name} v{version} within {timeout:g}s"
            ) from exc

    async def _read_loop(self) -> None:
        splitter = FrameSplitter()
        error: KafkaConnectionError
        try:
            while True:
                data = await self._reader.read(65536)
                if not data:
                    error = KafkaConnectionError(f"broker {self.address} closed the connection")
                    break
                for frame in splitter.feed(data):
                    if len(frame) < 4:
                        raise ProtocolError(f"{self.address} sent a {len(frame)}-byte frame")
                    (corr,) = _CORR.unpack_from(frame, 0)
                    fut = self._pending.pop(corr, None)
                    if fut is not None and not fut.done():
                        fut.set_result(frame)
        except asyncio.CancelledError:
            error = KafkaConnectionError(f"connection to {self.address} was closed")
        except (OSError, WireError, ProtocolError) as exc:
            error = KafkaConnectionError(f"lost connection to {self.address}: {exc}")
        self._fail(error)

    def _fail(self, error: KafkaConnectionError) -> None:
        if self._closed is None:
            self._closed = error
        pending, self._pending = self._pending, {}
        for fut in pending.values():
            if not fut.done():
                fut.set_exception(KafkaConnectionError(str(error)))

    async def close(self) -> None:
        """Close the socket; requests still waiting get KafkaConnectionError."""
        self._fail(KafkaConnectionError(f"connection to {self.address} was closed"))
        self._task.cancel()
        try:
            self._writer.close()
            await self._writer.wait_closed()
        except (OSError, RuntimeError):
            pass
        try:
            await self._task
        except (asyncio.CancelledError, Exception):
            pass

    async def __aenter__(self) -> Connection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
