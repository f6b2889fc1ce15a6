"""The delegation token APIs on the wire (KIP-48, KIP-373): CreateDelegationToken,
RenewDelegationToken, ExpireDelegationToken, DescribeDelegationToken.

Each handler takes the connection's `Peer` (None on the plain path: a PLAINTEXT listener, or
SSL without client certificates, of a broker without SASL or an authorizer) and answers in
Kafka's order:

1. DELEGATION_TOKEN_REQUEST_NOT_ALLOWED on a connection that did not authenticate — a
   PLAINTEXT listener, SSL with the ANONYMOUS principal — or authenticated with a token;
2. Create only: another owner than the requester (KIP-373) needs CREATE_TOKENS on the
   owner's User resource (DELEGATION_TOKEN_AUTHORIZATION_FAILED), renewers must be User
   principals (INVALID_PRINCIPAL_TYPE);
3. DELEGATION_TOKEN_AUTH_DISABLED without `[auth] delegation_token_secret_key`;
4. the token store's rules (token_store.py).

Describe lists the tokens of the owners asked (all with a null list, none with an empty
one; a token "of" a principal it owns, asked for or renews, KIP-373) that the caller owns,
asked for or renews, or may DESCRIBE (the token's DelegationToken
resource) or DESCRIBE_TOKENS (the owner's User resource). Without an authorizer every ACL
check passes, as Kafka's do. The ACL checks are here, not in a guard, because Kafka makes
them after the connection check. Failed answers carry -1 timestamps, as Kafka's.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

from kio.serial.readers import tz_aware_from_i64

from kgroup.acl_bindings import AclOperation, ResourceType
from kgroup.broker.security.authentication import Peer
from kgroup.broker.security.security import Security
from kgroup.broker.security.token_store import Token, TokenError
from kgroup.error_codes import ErrorCode
from kgroup.storage import StorageError
from kgroup.wire import RequestHeader, response_class
from kgroup.wire.kio_build import build, get, item

log = logging.getLogger("kgroup.broker.security")
E = ErrorCode
USER_TYPE = "User"
ERROR_TIMESTAMP = -1


def split(principal: str) -> tuple[str, str]:
    """("User", "alice") of "User:alice"."""
    kind, _, name = principal.partition(":")
    return kind, name


def _ms(value: Any) -> int:
    if isinstance(value, datetime.timedelta):
        return value // datetime.timedelta(milliseconds=1)
    return int(value)


def _now_ms() -> int:
    return int(datetime.datetime.now(datetime.timezone.utc).timestamp() * 1000)


def not_allowed(peer: Peer | None) -> bool:
    """Kafka's allowTokenRequests, negated: no authentication, or a token's."""
    if peer is None or peer.listener.protocol == "PLAINTEXT":
        return True
    if peer.sasl is not None:
        return peer.sasl.token_authenticated
    return peer.principal == "User:ANONYMOUS"


class TokenApi:
    def __init__(self, security: Security) -> None:
        self.security = security

    def _allowed(self, peer: Peer, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        authorizer = self.security.authorizer
        return authorizer is None or authorizer.authorize(peer.principal, peer.host, op, rtype, name)

    async def create_delegation_token(self, header: RequestHeader, request: Any, peer: Peer | None) -> Any:
        cls = response_class(header.api_key, header.api_version)
        requester = peer.principal if peer is not None else "User:ANONYMOUS"
        owner_name = get(request, "owner_principal_name")
        owner = f"{get(request, 'owner_principal_type')}:{owner_name}" if owner_name else requester

        def answer(code: ErrorCode, token: Token | None = None) -> Any:
            (otype, oname), (rtype, rname) = split(owner), split(requester)
            times = (token.issue_ms, token.expiry_ms, token.max_ms) if token else (ERROR_TIMESTAMP,) * 3
            return build(cls, error_code=code, principal_type=otype, principal_name=oname,
                         token_requester_principal_type=rtype, token_requester_principal_name=rname,
                         issue_timestamp=tz_aware_from_i64(times[0]), expiry_timestamp=tz_aware_from_i64(times[1]),
                         max_timestamp=tz_aware_from_i64(times[2]), token_id=token.token_id if token else "",
                         hmac=token.hmac if token else b"")

        # 1. who may ask, 2. for whom, 3. whether tokens are on, 4. the token.
        if not_allowed(peer):
            return answer(E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
        if owner != requester and not self._allowed(peer, AclOperation.CREATE_TOKENS, ResourceType.USER, owner):
            return answer(E.DELEGATION_TOKEN_AUTHORIZATION_FAILED)
        if any(r.principal_type != USER_TYPE for r in request.renewers):
            return answer(E.INVALID_PRINCIPAL_TYPE)
        tokens = self.security.tokens
        if not tokens.enabled:
            return answer(E.DELEGATION_TOKEN_AUTH_DISABLED)
        renewers = tuple(f"{r.principal_type}:{r.principal_name}" for r in request.renewers)
        try:
            token = tokens.create(owner, requester, renewers, _ms(request.max_lifetime), _now_ms())
        except StorageError as exc:
            log.error("cannot store a delegation token: %s", exc)
            return answer(E.UNKNOWN_SERVER_ERROR)
        log.info("delegation token %s created for %s by %s", token.token_id, owner, requester)
        return answer(E.NONE, token)

    async def renew_delegation_token(self, header: RequestHeader, request: Any, peer: Peer | None) -> Any:
        return self._change(header, request, peer, "renew", _ms(request.renew_period))

    async def expire_delegation_token(self, header: RequestHeader, request: Any, peer: Peer | None) -> Any:
        return self._change(header, request, peer, "expire", _ms(request.expiry_time_period))

    def _change(self, header: RequestHeader, request: Any, peer: Peer | None, what: str, period_ms: int) -> Any:
        cls = response_class(header.api_key, header.api_version)
        code, expiry = E.NONE, ERROR_TIMESTAMP
        tokens = self.security.tokens
        if not_allowed(peer):
            code = E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
        elif not tokens.enabled:
            code = E.DELEGATION_TOKEN_AUTH_DISABLED
        else:
            assert peer is not None
            change = tokens.renew if what == "renew" else tokens.expire
            try:
                expiry = change(bytes(request.hmac), peer.principal, period_ms, _now_ms())
            except TokenError as exc:
                code = exc.code
            except StorageError as exc:
                log.error("cannot store a delegation token: %s", exc)
                code = E.UNKNOWN_SERVER_ERROR
        return build(cls, error_code=code, expiry_timestamp=tz_aware_from_i64(expiry))

    async def describe_delegation_token(self, header: RequestHeader, request: Any, peer: Peer | None) -> Any:
        cls = response_class(header.api_key, header.api_version)
        if not_allowed(peer):
            return build(cls, error_code=E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED, tokens=())
        tokens = self.security.tokens
        if not tokens.enabled:
            return build(cls, error_code=E.DELEGATION_TOKEN_AUTH_DISABLED, tokens=())
        assert peer is not None
        owners = None if request.owners is None else [f"{o.principal_type}:{o.principal_name}" for o in request.owners]
        token_cls = item(cls, "tokens")
        renewer_cls = item(token_cls, "renewers")
        out = []
        for token in sorted(tokens.tokens.values(), key=lambda t: (t.issue_ms, t.token_id)):
            if owners is not None and not any(token.involves(o) for o in owners):
                continue
            if not (token.involves(peer.principal)
                    or self._allowed(peer, AclOperation.DESCRIBE, ResourceType.DELEGATION_TOKEN, token.token_id)
                    or self._allowed(peer, AclOperation.DESCRIBE_TOKENS, ResourceType.USER, token.owner)):
                continue
            (otype, oname), (rtype, rname) = split(token.owner), split(token.requester)
            out.append(build(token_cls, principal_type=otype, principal_name=oname,
                             token_requester_principal_type=rtype, token_requester_principal_name=rname,
                             issue_timestamp=token.issue_ms, expiry_timestamp=token.expiry_ms,
                             max_timestamp=token.max_ms, token_id=token.token_id, hmac=token.hmac,
                             renewers=tuple(build(renewer_cls, principal_type=split(r)[0], principal_name=split(r)[1])
                                            for r in token.renewers)))
        return build(cls, error_code=E.NONE, tokens=tuple(out))
