"""One request, from its frame to its answer: decode, faults, SASL, authorization, handler.

How this works: the connection loop (server.py) hands every frame to `handle` or
`handle_secured`, chosen once per connection. `handle` (no SASL, no authorizer, nothing to
translate: a PLAINTEXT or SSL listener of a broker without `[auth] authorizer`) decodes the
frame against the served ranges, offers the request to the armed faults (one attribute test
while none is armed), calls the handler its API's entry names (broker/apis.py: the compiled
`Routes`, plain dicts keyed by API key) and encodes the answer. `handle_secured` first lets
the connection's SASL session decide whether the request may pass (security/
authentication.py), then applies the API's guard (refuse, or serve a narrowed request and
finish the answer), and names the connection's listener where the answer names a broker
(the entry's `on_listener`: in a cluster, every node by its address on that listener).

Anything a client sends that we cannot serve gets an error response or, for bytes we cannot
even frame or decode, `CloseConnection` — never a crash of the broker. Requests are counted
by API and error code when the console is on, and logged at DEBUG on
"kgroup.broker.requests"; both are decided once at start.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import datetime
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from kgroup.broker.apis import Routes
from kgroup.broker.control.faults import FaultAction, Faults
from kgroup.broker.data.fetch_api import FETCH_QUOTA, FetchAnswer
from kgroup.broker.groups.shard import now_ms
from kgroup.broker.observe.request_stats import RequestStats
from kgroup.broker.security.authentication import Peer, illegal_state, sasl_answer, unframed_answer
from kgroup.broker.security.authorization import Access, Refused
from kgroup.broker.security.security import Security
from kgroup.storage import StorageError
from kgroup.storage.node_listeners import NodeListeners
from kgroup.wire import (
    MalformedRequest,
    RequestHeader,
    UnsupportedVersion,
    decode_request,
    encode_api_versions_fallback,
    encode_response,
)
from kgroup.wire.api_keys import ApiKey
from kgroup.wire.error_responses import error_response
from kgroup.wire.sasl import Gate

log = logging.getLogger("kgroup.broker")
request_log = logging.getLogger("kgroup.broker.requests")

_API_VERSIONS = int(ApiKey.API_VERSIONS)
_PRODUCE = int(ApiKey.PRODUCE)
_FETCH = int(ApiKey.FETCH)
# Versions from which a throttled answer goes out at once and the connection is muted after it
# (KIP-219); before them Kafka holds the answer for the throttle time instead.
_KIP219_FROM = {_PRODUCE: 6, _FETCH: 8}
# Not measured against request_percentage (Kafka exempts what a client needs to connect).
_QUOTA_EXEMPT = frozenset({_API_VERSIONS, int(ApiKey.SASL_HANDSHAKE), int(ApiKey.SASL_AUTHENTICATE)})


class _NoQuotas:
    on = False


class CloseConnection(Exception):
    """Drop this connection (bad bytes from the client); the broker goes on. A
    `last_response` is sent before the connection closes (a failed authentication)."""

    def __init__(self, reason: str, last_response: bytes | None = None) -> None:
        super().__init__(reason)
        self.last_response = last_response


_SERVE = object()


class _Throttle:
    """A fault's "throttle this client": serve the request, then throttle its answer."""

    __slots__ = ("ms",)

    def __init__(self, ms: int) -> None:
        self.ms = ms


class _FetchQuota:
    """The quota check a Fetch's handler makes before its answer is built (data/fetch_api.py
    `FETCH_QUOTA`): the throttle time it decided (`wait`), None while not asked."""

    __slots__ = ("quotas", "user", "client_id", "forced", "cpu", "wait")

    def __init__(self, quotas: Any, user: str, client_id: str | None, forced: int) -> None:
        self.quotas, self.user, self.client_id, self.forced = quotas, user, client_id, forced
        self.cpu = time.thread_time_ns()
        self.wait: int | None = None

    def __call__(self, size: int) -> int:
        wait = self.forced
        if self.quotas.on:
            wait = max(wait, self.quotas.fetch_throttle_ms(self.user, self.client_id, size,
                                                           time.thread_time_ns() - self.cpu))
        self.wait = wait
        return wait


@contextlib.contextmanager
def _fetch_quota(quotas: Any, header: RequestHeader, user: str, forced_ms: int) -> Iterator[_FetchQuota | None]:
    """While a Fetch is served under a quota (or a throttle fault), its check, set for the
    handler to ask before it builds the answer (FETCH_QUOTA); None for other requests."""
    if header.api_key != _FETCH:
        yield None
        return
    check = _FetchQuota(quotas, user, header.client_id, forced_ms)
    token = FETCH_QUOTA.set(check)
    try:
        yield check
    finally:
        FETCH_QUOTA.reset(token)


class RequestPath:
    """Serves decoded requests through the compiled routes (see the module comment)."""

    def __init__(self, routes: Routes, gate: Callable[[], None], faults: Faults, security: Security,
                 topics: Callable[[], Any], node_id: int, stats: RequestStats, count: bool,
                 peer_listeners: NodeListeners | None = None, quotas: Any = None) -> None:
        self.routes = routes
        # What `handle` reads on every request, one attribute each.
        self.handlers, self.with_client_host, self.with_connection = (
            routes.handlers, routes.with_client_host, routes.with_connection)
        self.gate = gate              # the cluster's self-fencing check (cluster/ownership.py)
        self.faults, self.security, self.topics = faults, security, topics
        self.node_id, self.stats = node_id, stats
        # In a cluster, every node's listeners as they published them (None on a single broker).
        self.peer_listeners = peer_listeners
        # Per request: count it (console on) and/or log it (DEBUG); decided once at start,
        # so a broker doing neither pays two attribute tests per request.
        self.count = count
        self.debug = request_log.isEnabledFor(logging.DEBUG)
        # Client quotas (admin/client_quotas.py): measured only while one is set (`on`). A
        # throttled answer's connection is muted until its throttle time is over (connection
        # id -> monotonic deadline): its next request waits, the answers before it go out.
        self.quotas = quotas if quotas is not None else _NoQuotas()
        self.muted: dict[int, float] = {}

    def decode(self, frame: bytes) -> tuple[RequestHeader, Any] | bytes:
        """(header, request), or the ApiVersions fallback answer to send as it is."""
        self.gate()
        try:
            return decode_request(frame, self.routes.ranges)
        except UnsupportedVersion as exc:
            if exc.api_key == _API_VERSIONS:
                # Too new for us: answer in v0 format with our ranges so the client falls back.
                return encode_api_versions_fallback(exc.correlation_id, ranges=self.routes.ranges.values())
            raise CloseConnection(str(exc)) from None
        except MalformedRequest as exc:
            raise CloseConnection(f"malformed request: {exc}") from None

    async def handle(self, frame: bytes, client_host: str, connection: int) -> bytes | FetchAnswer | None:
        if self.muted:
            await self.unmuted(connection)
        decoded = self.decode(frame)
        if isinstance(decoded, bytes):
            return decoded
        header, request = decoded
        if self.faults.armed:
            faulted = await self.faulted(header, request)
            if type(faulted) is _Throttle:
                return await self.handle_quoted(frame, header, request, client_host, connection, faulted.ms)
            if faulted is not _SERVE:
                return faulted
        if self.quotas.on:
            return await self.handle_quoted(frame, header, request, client_host, connection)
        api = header.api_key
        handler = self.handlers[api]
        try:
            if api in self.with_client_host:
                response = await handler(header, request, client_host)
            elif api in self.with_connection:
                response = await handler(header, request, connection)
            elif api in self.routes.with_peer:
                response = await handler(header, request, None)   # the plain path: nobody authenticated
            else:
                response = await handler(header, request)
        except StorageError as exc:
            log.error("storage error serving api %d: %s", api, exc)
            raise CloseConnection("storage error") from None
        if self.count:
            # Inline (see request_stats.py): a list bump per request, a dict only on errors.
            self.stats.by_api[api] += 1
            if getattr(response, "error_code", 0):
                self.stats.count_error(api, response.error_code)
        if self.debug:
            self.log_request(header, response, client_host)
        if response is None:
            return None
        if type(response) is FetchAnswer:
            return response              # encoded already; its records may still be in files
        return encode_response(header, response)

    async def handle_quoted(self, frame: bytes, header: RequestHeader, request: Any, client_host: str,
                            connection: int, forced_ms: int = 0) -> bytes | FetchAnswer | None:
        """`handle` while a client quota is set: the request measured, the answer throttled
        (at least `forced_ms`: a fault's throttle)."""
        cpu = time.thread_time_ns()
        with _fetch_quota(self.quotas, header, ANONYMOUS_USER, forced_ms) as fetch_quota:
            response = await self.call(header, request, client_host, connection)
        cpu = time.thread_time_ns() - cpu
        if self.count or self.debug:
            self.note_request(header, response, client_host)
        response = self.throttle(header, frame, response, ANONYMOUS_USER, connection, cpu, forced_ms, fetch_quota)
        if header.api_version < _KIP219_FROM.get(header.api_key, 0) and connection in self.muted:
            await self.unmuted(connection)      # before KIP-219: the answer itself waits
        if response is None or type(response) is FetchAnswer:
            return response
        return encode_response(header, response)

    def throttle(self, header: RequestHeader, frame: bytes, response: Any, user: str, connection: int,
                 cpu_ns: int, forced_ms: int = 0, fetch_quota: _FetchQuota | None = None) -> Any:
        """Record the request against its client's quotas; over one, the answer carries the
        throttle time (KIP-219) and the connection is muted for it. A Fetch whose handler
        asked `fetch_quota` was recorded (and emptied, if throttled) there."""
        api = header.api_key
        wait = forced_ms
        if fetch_quota is not None and fetch_quota.wait is not None:
            wait = fetch_quota.wait
        elif api not in _QUOTA_EXEMPT and self.quotas.on:
            wait = max(wait, self.measured(header, frame, response, user, cpu_ns))
        if wait <= 0:
            return response
        now = time.monotonic()
        if len(self.muted) > 1024:        # connections that closed while muted
            self.muted = {c: until for c, until in self.muted.items() if until > now}
        self.muted[connection] = max(now + wait / 1000, self.muted.get(connection, 0.0))
        return with_throttle(header, response, wait)

    def measured(self, header: RequestHeader, frame: bytes, response: Any, user: str, cpu_ns: int) -> int:
        """Record the request's use against its client's quotas; the wait they ask for."""
        api, fetched = header.api_key, 0
        if api == _FETCH and response is not None:
            fetched = (int.from_bytes(response.parts[0][:4], "big") if type(response) is FetchAnswer
                       else len(encode_response(header, response)))
        return self.quotas.throttle_ms(user, header.client_id, len(frame) if api == _PRODUCE else 0, fetched, cpu_ns)

    async def unmuted(self, connection: int) -> None:
        """Wait out the connection's mute after a throttled answer (KIP-219: Kafka stops
        reading from a throttled client's channel for the throttle time)."""
        until = self.muted.pop(connection, None)
        if until is not None:
            delay = until - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)

    async def call(self, header: RequestHeader, request: Any, client_host: str, connection: int,
                   kio: bool = False, peer: Peer | None = None) -> Any:
        """The handler's answer; with `kio`, always a kio object (never a FetchAnswer)."""
        api = header.api_key
        handler = (kio and self.routes.kio_handlers.get(api)) or self.handlers[api]
        try:
            if api in self.with_client_host:
                return await handler(header, request, client_host)
            if api in self.with_connection:
                return await handler(header, request, connection)
            if api in self.routes.with_peer:
                return await handler(header, request, peer)
            return await handler(header, request)
        except StorageError as exc:
            log.error("storage error serving api %d: %s", api, exc)
            raise CloseConnection("storage error") from None

    def log_request(self, header: Any, response: Any, client_host: str) -> None:
        r = self.routes.ranges.get(header.api_key)
        api = r.name if r is not None else str(header.api_key)
        error = int(getattr(response, "error_code", 0) or 0)
        request_log.debug("%s v%d correlation %d from client id %s host %s: error %d", api, header.api_version,
                          header.correlation_id, header.client_id, client_host or "-", error,
                          extra={"kgroup": {"api": api, "version": header.api_version,
                                            "correlation_id": header.correlation_id, "client_id": header.client_id,
                                            "client_host": client_host, "error": error}})

    def note_request(self, header: RequestHeader, response: Any, client_host: str) -> None:
        """Count and/or log a request of the secured path (`handle` does it inline)."""
        if self.count:
            self.stats.by_api[header.api_key] += 1
            if getattr(response, "error_code", 0):
                self.stats.count_error(header.api_key, response.error_code)
        if self.debug:
            self.log_request(header, response, client_host)

    # ---- faults (control/faults.py) ---------------------------------------------------------

    async def faulted(self, header: Any, request: Any) -> Any:
        """What an armed fault makes of this request (`_SERVE`: serve it as usual)."""
        action = self.faults.hit(header, request)
        if action is None:
            return _SERVE
        return await self.fault(action, header, request)

    async def fault(self, action: FaultAction, header: Any, request: Any) -> Any:
        """Do what an armed fault says to this request: wait, then answer it with an error,
        close the connection, or (only a delay) hand it back to be served (`_SERVE`)."""
        log.info("fault %s: api %d v%d from client %r: %s", action.fault_id, header.api_key, header.api_version,
                 header.client_id, action.error.name if action.error is not None
                 else "close connection" if action.close_connection
                 else f"throttle {action.throttle_ms} ms" if action.throttle_ms else f"delay {action.delay_ms} ms")
        if action.delay_ms:
            await asyncio.sleep(action.delay_ms / 1000)
        if action.close_connection:
            raise CloseConnection(f"fault {action.fault_id} closes the connection")
        if action.throttle_ms:
            return _Throttle(action.throttle_ms)
        if action.error is None:
            return _SERVE
        if header.api_key == _PRODUCE and request.acks == 0:
            return None  # acks=0: the client reads no answer, not even an error
        return encode_response(header, error_response(
            header.api_key, header.api_version, request, action.error, f"fault {action.fault_id} (kgroup control API)"))

    # ---- the secured path ---------------------------------------------------------------------

    def addresses_on(self, peer: Peer) -> dict[int, tuple[str, int]]:
        """Each node's address on the listener `peer` came in on: this node's own, and in a
        cluster every other node that has a listener of that name."""
        if self.peer_listeners is None:
            return {self.node_id: peer.advertised}
        addresses = self.peer_listeners.on(peer.listener.name)
        addresses[self.node_id] = peer.advertised
        return addresses

    async def handle_secured(self, frame: bytes, peer: Peer, connection: int) -> bytes | FetchAnswer | None:
        """`handle` with SASL, authorization and the listener's address (module comment)."""
        if self.muted:
            await self.unmuted(connection)
        if peer.sasl is not None and peer.sasl.awaits_unframed_token:
            # After SaslHandshake v0 the frame is a bare SASL message, not a request.
            answer = unframed_answer(peer, frame, now_ms())
            if answer is None:
                raise CloseConnection(f"authentication failed: {peer.sasl.failure}")
            return answer
        decoded = self.decode(frame)
        if isinstance(decoded, bytes):
            return decoded                # the ApiVersions fallback, encoded already
        faulted = await self.faulted(*decoded) if self.faults.armed else _SERVE
        forced = faulted.ms if type(faulted) is _Throttle else 0
        if faulted is not _SERVE and not forced:
            return faulted
        header, request = decoded
        quoted = self.quotas.on or forced
        cpu = time.thread_time_ns() if quoted else 0
        user = (peer.principal.partition(":")[2] or peer.principal) if quoted else ""
        with _fetch_quota(self.quotas, header, user, forced) if quoted else contextlib.nullcontext() as fetch_quota:
            response = await self.secured_response(header, request, peer, connection)
        if quoted:
            response = self.throttle(header, frame, response, user, connection, time.thread_time_ns() - cpu, forced,
                                     fetch_quota)
            if header.api_version < _KIP219_FROM.get(header.api_key, 0) and connection in self.muted:
                await self.unmuted(connection)
        if self.count or self.debug:
            self.note_request(header, response, peer.client_host)
        if response is None:
            return None
        if type(response) is FetchAnswer:
            return response  # encoded already, naming no broker; its records may still be in files
        # This listener's address where the handler named the first listener's.
        if peer.advertised is not None:
            on_listener = self.routes.on_listener.get(header.api_key)
            if on_listener is not None:
                response = on_listener(response, self.addresses_on(peer), header.api_version)
        return encode_response(header, response)

    async def secured_response(self, header: RequestHeader, request: Any, peer: Peer, connection: int) -> Any:
        api = header.api_key
        # 1. SASL: what may pass before (and after) authentication.
        if peer.sasl is not None:
            gate = peer.sasl.gate(api, now_ms())
            if gate is not Gate.SERVE:
                return self.sasl_gate(gate, header, request, peer)
        # 2. Authorization, then the handler.
        return await self.authorized(header, request, peer.principal, peer.host, peer.client_host, connection,
                                     peer=peer)

    async def authorized(self, header: RequestHeader, request: Any, principal: str, host: str, client_host: str,
                         connection: int, kio: bool = False, peer: Peer | None = None) -> Any:
        """The API's guard as `principal` (when the authorizer is on): it refuses, or narrows
        the request and finishes the answer; then the handler. Also for requests the broker
        makes on a user's behalf (the web console's actions, with `kio`)."""
        finish = None
        authorizer = self.security.authorizer
        if authorizer is not None and header.api_key not in self.routes.open:
            verdict = self.routes.guards[header.api_key](Access(authorizer, principal, host, self.topics),
                                                         header, request)
            if isinstance(verdict, Refused):
                return verdict.response
            request, finish = verdict.request, verdict.finish
        # A Fetch whose answer a guard finishes (refused topics added) is built as kio objects
        # and read into memory; one with every topic allowed stays encoded for sendfile.
        response = await self.call(header, request, client_host, connection, kio=kio or finish is not None, peer=peer)
        if finish is None:
            return response
        fetch_quota = FETCH_QUOTA.get()
        if fetch_quota is not None and getattr(fetch_quota, "wait", None):
            return response       # a throttled Fetch answers nothing, refused topics neither (as Kafka)
        return finish(response)

    @staticmethod
    def sasl_gate(gate: Gate, header: RequestHeader, request: Any, peer: Peer) -> Any:
        """The answer to a request the connection's SASL session does not let through."""
        if gate is Gate.SASL:
            response, close = sasl_answer(peer, header, request, now_ms())
            if close:
                raise CloseConnection(f"authentication failed: {peer.sasl.failure}", encode_response(header, response))
            return response
        if gate is Gate.ILLEGAL:
            return illegal_state(header, "already authenticated")
        answer = illegal_state(header, peer.sasl.failure or "") if gate is Gate.REFUSE else None
        raise CloseConnection(peer.sasl.failure or "SASL state", None if answer is None else encode_response(header, answer))


ANONYMOUS_USER = "ANONYMOUS"     # the quota user of a connection without a principal


def with_throttle(header: RequestHeader, response: Any, wait_ms: int) -> Any:
    """`response` with `wait_ms` as its throttle time (where it has one, and a longer one is
    not there already)."""
    if response is None:
        return None                     # acks=0: no answer, the mute alone slows the client
    if type(response) is FetchAnswer:
        if header.api_version >= 1:
            # throttle_time_ms opens the body: after the length, the correlation id and (v12+,
            # flexible) the header's tagged fields.
            at = 8 + (1 if header.api_version >= 12 else 0)
            head = response.parts[0]
            response.parts[0] = head[:at] + wait_ms.to_bytes(4, "big") + head[at + 4:]
        return response
    held = getattr(response, "throttle_time", None)
    if held is None or held >= datetime.timedelta(milliseconds=wait_ms):
        return response
    return dataclasses.replace(response, throttle_time=datetime.timedelta(milliseconds=wait_ms))


class Resume:
    """Await the rest of a coroutine whose first step already ran and yielded `first`.

    The connection loop (server.py) runs a handler's first step itself, since most requests
    complete without suspending; one that suspends is awaited from there through this.

    Equivalent to having awaited the coroutine from the start: whatever it yields (a future
    it blocks on) is passed up to the task unchanged, and the task's wake-up value or
    exception (a cancellation) is passed back down.
    """

    __slots__ = ("coro", "first", "context")

    def __init__(self, coro: Any, first: Any, context: contextvars.Context | None = None) -> None:
        self.coro = coro
        self.first = first
        # The context the first step ran in (None: the awaiting task's, as it was): the rest
        # runs there too, as a task runs every step of its coroutine in one context.
        self.context = context

    def __await__(self):
        coro, context = self.coro, self.context
        yielded = self.first
        self.first = None
        while True:
            try:
                value = yield yielded
            except BaseException as exc:  # noqa: BLE001 (handed to the coroutine, as await does)
                try:
                    yielded = coro.throw(exc) if context is None else context.run(coro.throw, exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    yielded = coro.send(value) if context is None else context.run(coro.send, value)
                except StopIteration as done:
                    return done.value
