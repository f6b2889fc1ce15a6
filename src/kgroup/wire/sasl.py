"""SASL authentication of one connection (KIP-43, KIP-152, KIP-368), server side, sans-I/O.

How this works. A connection on a SASL listener starts in AWAIT_HANDSHAKE: only ApiVersions
and SaslHandshake are served. SaslHandshake names a mechanism the listener enables (else
UNSUPPORTED_SASL_MECHANISM and the connection closes) and moves to AWAIT_TOKEN, where
SaslAuthenticate requests carry the mechanism's messages (PLAIN: one; SCRAM: two) until it
succeeds (AUTHENTICATED, principal ``User:<name>``) or fails (FAILED:
SASL_AUTHENTICATION_FAILED, then the connection closes). Any other request before
authentication closes the connection.

SaslHandshake v0 (Kafka 0.10; librdkafka before KAFKA-18270's fix insists on v0 being in the
range): a v0 handshake makes the session ``unframed`` -- until it is authenticated the client
sends each SASL message as a bare length-prefixed frame with no request header, and gets the
server's message back the same way (``awaits_unframed_token`` tells the connection a frame is
such a message, ``authenticate`` answers it). A failure then has nowhere to go but the closed
connection, as in Kafka. Re-authentication (KIP-368) needs v1: its SaslAuthenticate tells the
session lifetime that v0 cannot carry.

Sessions (KIP-368): with ``reauth_ms`` > 0 a session lasts that long; SaslAuthenticate v1+
tells the client, which re-authenticates on the same connection (SaslHandshake again, same
mechanism, same principal: AUTHENTICATED -> REAUTHENTICATING -> AUTHENTICATED) while its
other requests keep being served. A request other than a re-authentication after the session
expired closes the connection, as Kafka's broker does.

Delegation tokens (KIP-48): a SCRAM client-first with ``tokenauth=true`` names a token id as
its user and proves the token's HMAC; the session's principal becomes the token's owner and
``token_authenticated`` is set (such a connection may not ask for tokens itself). A token
past its expiry is refused, and the session lasts at most until the token expires (Kafka's
credential lifetime), so a client re-authenticates or is disconnected then.

``gate(api_key, now_ms)`` says what to do with each request (``Gate``); a verdict that closes
the connection fails the session for good. ``handshake`` and ``authenticate`` answer the two
SASL requests. States are an enum with one transition
table; an illegal move raises and leaves the state unchanged. Credentials come from an
injected ``Credentials`` object and nonces from an injected generator: no I/O, no clock
(callers pass ``now_ms``), no randomness of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from .scram import MECHANISMS, ScramCredential, ScramDone, ScramError, ScramMechanism, ScramServer
from .api_keys import ApiKey

__all__ = [
    "AuthAnswer",
    "AuthState",
    "Credentials",
    "Gate",
    "HandshakeAnswer",
    "PLAIN",
    "SaslSession",
    "SUPPORTED_MECHANISMS",
    "Tokens",
]

# Compared on every request of a SASL connection: plain ints (an enum member costs a lookup).
_API_VERSIONS = int(ApiKey.API_VERSIONS)
_SASL_HANDSHAKE = int(ApiKey.SASL_HANDSHAKE)
_SASL_AUTHENTICATE = int(ApiKey.SASL_AUTHENTICATE)

PLAIN = "PLAIN"
SUPPORTED_MECHANISMS = (PLAIN, *MECHANISMS)

# Kafka's error codes used here (the leaf error_codes module is above the wire layer).
NONE = 0
UNSUPPORTED_SASL_MECHANISM = 33
ILLEGAL_SASL_STATE = 34
SASL_AUTHENTICATION_FAILED = 58


class Credentials(Protocol):
    """Where the session checks who is who (the broker's credential store)."""

    def scram(self, mechanism: ScramMechanism, username: str) -> ScramCredential | None: ...

    def check_plain(self, username: str, password: str) -> bool: ...


class Tokens(Protocol):
    """Where SCRAM with tokenauth=true finds a delegation token (the broker's token store)."""

    def scram(self, mechanism: ScramMechanism, token_id: str) -> tuple[ScramCredential, str, int] | None: ...


class AuthState(Enum):
    AWAIT_HANDSHAKE = "awaiting SaslHandshake"
    AWAIT_TOKEN = "awaiting SaslAuthenticate"
    AUTHENTICATED = "authenticated"
    REAUTHENTICATING = "re-authenticating"
    FAILED = "failed"


class _Event(Enum):
    HANDSHAKE = "handshake"
    TOKEN = "token, more to come"
    DONE = "authenticated"
    FAIL = "failed"


S, E = AuthState, _Event
# The one transition table: (state, event) -> next state.
_MOVES = {
    (S.AWAIT_HANDSHAKE, E.HANDSHAKE): S.AWAIT_TOKEN,
    (S.AWAIT_TOKEN, E.TOKEN): S.AWAIT_TOKEN,
    (S.AWAIT_TOKEN, E.DONE): S.AUTHENTICATED,
    (S.AUTHENTICATED, E.HANDSHAKE): S.REAUTHENTICATING,
    (S.REAUTHENTICATING, E.TOKEN): S.REAUTHENTICATING,
    (S.REAUTHENTICATING, E.DONE): S.AUTHENTICATED,
    **{(state, E.FAIL): S.FAILED for state in AuthState},
}


class Gate(Enum):
    """What the connection does with a request."""

    SERVE = "serve it"
    SASL = "give it to handshake()/authenticate()"
    ILLEGAL = "answer ILLEGAL_SASL_STATE and go on"
    REFUSE = "answer ILLEGAL_SASL_STATE if the response can say so, then close"
    CLOSE = "close the connection"


@dataclass(frozen=True, slots=True)
class HandshakeAnswer:
    error: int
    mechanisms: tuple[str, ...]
    close: bool = False


@dataclass(frozen=True, slots=True)
class AuthAnswer:
    error: int
    message: str | None = None
    token: bytes = b""
    session_lifetime_ms: int = 0
    close: bool = False


class _AuthFailed(Exception):
    pass


class _Plain:
    """RFC 4616: ``[authzid] NUL authcid NUL passwd`` in one message."""

    def __init__(self, credentials: Credentials) -> None:
        self.credentials = credentials

    def step(self, token: bytes) -> ScramDone:
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise _AuthFailed("Authentication failed: invalid SASL/PLAIN response: expected 3 tokens")
        try:
            authzid, user, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            raise _AuthFailed("Authentication failed: invalid SASL/PLAIN response: not UTF-8") from None
        if not user or not password:
            raise _AuthFailed("Authentication failed: username or password not specified")
        if authzid and authzid != user:
            raise _AuthFailed("Authentication failed: client requested an authorization id that "
                              "is different from username")
        if not self.credentials.check_plain(user, password):
            raise _AuthFailed("Authentication failed: Invalid username or password")
        return ScramDone(b"", user)


class _Scram:
    def __init__(self, mechanism: ScramMechanism, credentials: Credentials, nonce: str, secret: bytes,
                 tokens: Tokens | None = None) -> None:
        self.mechanism = mechanism
        token_lookup = None if tokens is None else (lambda token_id: tokens.scram(mechanism, token_id))
        self.server = ScramServer(mechanism.hash_name, lambda user: credentials.scram(mechanism, user),
                                  nonce, secret, token_lookup)

    def step(self, token: bytes) -> bytes | ScramDone:
        try:
            return self.server.step(token)
        except ScramError as exc:
            if "invalid credentials" in str(exc):
                raise _AuthFailed("Authentication failed during authentication due to invalid credentials "
                                  f"with SASL mechanism {self.mechanism.sasl_name}") from None
            raise _AuthFailed(f"Authentication failed: {exc}") from None


class SaslSession:
    """The authentication state of one connection on a SASL listener (module comment)."""

    def __init__(self, mechanisms: tuple[str, ...], credentials: Credentials, *,
                 nonce: Callable[[], str], secret: bytes, reauth_ms: int = 0, tokens: Tokens | None = None) -> None:
        self.mechanisms = tuple(mechanisms)
        self.credentials = credentials
        self.tokens = tokens
        self.token_authenticated = False
        self._nonce = nonce
        self._secret = secret
        self.reauth_ms = reauth_ms
        self.state = AuthState.AWAIT_HANDSHAKE
        self.mechanism: str | None = None
        self.principal: str | None = None
        self.expires_at_ms: int | None = None
        self._exchange: _Plain | _Scram | None = None
        self.failure: str | None = None
        # SaslHandshake v0: the exchange's messages come in bare frames (module comment).
        self.unframed = False

    def _move(self, event: _Event) -> None:
        try:
            self.state = _MOVES[(self.state, event)]
        except KeyError:
            raise ValueError(f"SASL: {event.value} is illegal in state {self.state.value}") from None

    @property
    def awaits_unframed_token(self) -> bool:
        """Whether the connection's next frame is a bare SASL message (after a v0 handshake)."""
        return self.unframed and self.state is AuthState.AWAIT_TOKEN

    @property
    def authenticated(self) -> bool:
        return self.state in (AuthState.AUTHENTICATED, AuthState.REAUTHENTICATING)

    def expired(self, now_ms: int) -> bool:
        return self.expires_at_ms is not None and now_ms >= self.expires_at_ms

    # -- which requests may pass ---------------------------------------------------------

    def gate(self, api_key: int, now_ms: int) -> Gate:
        """What to do with a request of ``api_key`` arriving at ``now_ms``."""
        state = self.state
        if state is AuthState.AUTHENTICATED or state is AuthState.REAUTHENTICATING:
            if api_key == _SASL_HANDSHAKE:
                if state is AuthState.AUTHENTICATED:
                    return Gate.SASL
                return self._refuse("SaslHandshake while re-authenticating", Gate.REFUSE)
            if api_key == _SASL_AUTHENTICATE:
                return Gate.SASL if state is AuthState.REAUTHENTICATING else Gate.ILLEGAL
            if self.expires_at_ms is not None and now_ms >= self.expires_at_ms:
                return self._refuse("session expired without re-authentication", Gate.CLOSE)
            return Gate.SERVE
        if state is AuthState.AWAIT_HANDSHAKE:
            if api_key == _API_VERSIONS:
                return Gate.SERVE
            if api_key == _SASL_HANDSHAKE:
                return Gate.SASL
        elif state is AuthState.AWAIT_TOKEN and api_key == _SASL_AUTHENTICATE:
            return Gate.SASL
        gate = Gate.REFUSE if api_key in (_SASL_HANDSHAKE, _SASL_AUTHENTICATE) else Gate.CLOSE
        if state is AuthState.FAILED:
            return gate
        return self._refuse(f"API {api_key} sent before SASL authentication ({state.value})", gate)

    def _refuse(self, why: str, gate: Gate) -> Gate:
        """The connection is to be closed: the session fails for good."""
        self.failure = why
        self._move(_Event.FAIL)
        return gate

    # -- the two SASL requests -----------------------------------------------------------

    def handshake(self, mechanism: str, version: int = 1) -> HandshakeAnswer:
        """SaslHandshake: start (or restart, to re-authenticate) with ``mechanism``; v0 makes
        the exchange unframed."""
        reauth = self.state is AuthState.AUTHENTICATED
        if reauth and version == 0:
            self.failure = "re-authentication needs SaslHandshake v1 or later"
            self._move(_Event.FAIL)
            return HandshakeAnswer(ILLEGAL_SASL_STATE, self.mechanisms, close=True)
        if mechanism not in self.mechanisms or (reauth and mechanism != self.mechanism):
            self.failure = (f"mechanism {mechanism!r} is not {self.mechanism} (re-authentication keeps it)"
                            if reauth and mechanism in self.mechanisms
                            else f"mechanism {mechanism!r} is not enabled")
            self._move(_Event.FAIL)
            return HandshakeAnswer(UNSUPPORTED_SASL_MECHANISM, self.mechanisms, close=True)
        self._move(_Event.HANDSHAKE)
        self.mechanism = mechanism
        self.unframed = version == 0
        if mechanism == PLAIN:
            self._exchange = _Plain(self.credentials)
        else:
            self._exchange = _Scram(MECHANISMS[mechanism], self.credentials, self._nonce(), self._secret, self.tokens)
        return HandshakeAnswer(NONE, self.mechanisms)

    def authenticate(self, token: bytes, now_ms: int) -> AuthAnswer:
        """SaslAuthenticate: the next message of the exchange."""
        assert self._exchange is not None
        try:
            outcome = self._exchange.step(bytes(token))
        except _AuthFailed as exc:
            self.failure = str(exc)
            self._move(_Event.FAIL)
            return AuthAnswer(SASL_AUTHENTICATION_FAILED, str(exc), close=True)
        if not isinstance(outcome, ScramDone):
            self._move(_Event.TOKEN)
            return AuthAnswer(NONE, None, outcome)
        principal = outcome.token_owner or f"User:{outcome.username}"
        lifetime = self.reauth_ms
        if outcome.token_expiry_ms is not None:
            if now_ms > outcome.token_expiry_ms:
                self.failure = "Authentication failed: Delegation Token is expired"
                self._move(_Event.FAIL)
                return AuthAnswer(SASL_AUTHENTICATION_FAILED, self.failure, close=True)
            left = max(outcome.token_expiry_ms - now_ms, 1)
            lifetime = min(lifetime, left) if lifetime > 0 else left
        if self.principal is not None and principal != self.principal:
            self.failure = f"cannot change principal from {self.principal} to {principal} when re-authenticating"
            self._move(_Event.FAIL)
            return AuthAnswer(SASL_AUTHENTICATION_FAILED, "Authentication failed: " + self.failure, close=True)
        self._move(_Event.DONE)
        self.principal = principal
        self.token_authenticated = outcome.token_owner is not None
        self._exchange = None
        self.expires_at_ms = now_ms + lifetime if lifetime > 0 else None
        return AuthAnswer(NONE, None, outcome.message, session_lifetime_ms=lifetime)
