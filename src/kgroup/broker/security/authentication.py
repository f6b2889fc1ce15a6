"""Who is on a connection, and the two SASL requests at the edge.

A ``Peer`` is made when a connection is accepted: its listener, the client's address, its
principal (``User:ANONYMOUS`` on PLAINTEXT, the certificate's subject on SSL, the user once
SASL succeeds) and, on a SASL listener, the connection's ``SaslSession`` (kgroup.wire.sasl,
the state machine). ``sasl_answer`` turns SaslHandshake and SaslAuthenticate into the
session's moves and back into responses (``unframed_answer`` the bare frames that follow a
SaslHandshake v0); the server sends the answer and closes the
connection when the session says so. Until a SASL connection is authenticated its frames are
limited to ``PRE_AUTH_MAX_BYTES`` (Kafka's sasl.server.max.receive.size), so a client that
has not proved who it is cannot make the broker buffer 100 MiB.
"""

from __future__ import annotations

import logging
from typing import Any

from kgroup.broker.config import ListenerConfig
from kgroup.error_codes import ErrorCode
from kgroup.wire import FrameSplitter, RequestHeader, response_class
from kgroup.wire.kio_build import build, has
from kgroup.wire.sasl import SaslSession
from kgroup.wire.api_keys import ApiKey

log = logging.getLogger("kgroup.broker.security")

PRE_AUTH_MAX_BYTES = 524_288


class Peer:
    """One connection's listener, client address, principal and SASL state."""

    __slots__ = ("listener", "host", "client_host", "principal", "sasl", "splitter", "max_bytes", "advertised")

    def __init__(self, listener: ListenerConfig, host: str, principal: str, sasl: SaslSession | None,
                 splitter: FrameSplitter, max_bytes: int, advertised: tuple[str, int] | None) -> None:
        self.listener = listener
        self.host = host
        self.client_host = f"/{host}" if host else ""
        self.principal = principal
        self.sasl = sasl
        self.splitter = splitter
        self.max_bytes = max_bytes
        # The listener's address when it differs from what handlers name (else None).
        self.advertised = advertised
        if sasl is not None:
            splitter.limit = min(max_bytes, PRE_AUTH_MAX_BYTES)


def illegal_state(header: RequestHeader, message: str) -> Any | None:
    """An ILLEGAL_SASL_STATE answer for this request, if its response has an error code."""
    cls = response_class(header.api_key, header.api_version)
    if not has(cls, "error_code"):
        return None
    return build(cls, error_code=ErrorCode.ILLEGAL_SASL_STATE, error_message=message)


def sasl_answer(peer: Peer, header: RequestHeader, request: Any, now_ms: int) -> tuple[Any, bool]:
    """(the response to a SaslHandshake or SaslAuthenticate, whether to close after it)."""
    session = peer.sasl
    assert session is not None
    cls = response_class(header.api_key, header.api_version)
    if header.api_key == ApiKey.SASL_HANDSHAKE:
        hs = session.handshake(request.mechanism, header.api_version)
        if hs.close:
            log.warning("SASL handshake from %s on %s refused: %s", peer.host, peer.listener.name, session.failure)
        return build(cls, error_code=hs.error, mechanisms=hs.mechanisms), hs.close
    answer = _authenticate(peer, request.auth_bytes, now_ms)
    # Kafka answers a step that went well with "" as the message, not null.
    return build(cls, error_code=answer.error, error_message=answer.message if answer.error else (answer.message or ""),
                 auth_bytes=answer.token,
                 session_lifetime=answer.session_lifetime_ms), answer.close


def unframed_answer(peer: Peer, message: bytes, now_ms: int) -> bytes | None:
    """After a SaslHandshake v0: a bare SASL message in, the server's bare message out (a
    length-prefixed frame, empty for PLAIN), or None when the exchange failed and the
    connection is to close without a word, as Kafka closes it."""
    answer = _authenticate(peer, message, now_ms)
    if answer.close or answer.error:
        return None
    return len(answer.token).to_bytes(4, "big") + answer.token


def _authenticate(peer: Peer, token: bytes, now_ms: int) -> Any:
    """The session's next step; once authenticated the connection takes the principal."""
    session = peer.sasl
    assert session is not None
    answer = session.authenticate(token, now_ms)
    if answer.close:
        log.warning("authentication of %s on %s failed: %s", peer.host, peer.listener.name, answer.message)
    if not answer.error and session.authenticated:
        if peer.principal != session.principal:
            log.debug("%s authenticated with %s from %s on %s", session.principal, session.mechanism,
                     peer.host, peer.listener.name)
        peer.principal = session.principal
        peer.splitter.limit = peer.max_bytes
    return answer
