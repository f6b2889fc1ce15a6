"""The admin client's delegation token calls (KIP-48, KIP-373).

``TokenAdmin`` is a part of ``AdminClient`` (it works over ``self.cluster``):
CreateDelegationToken, RenewDelegationToken, ExpireDelegationToken and
DescribeDelegationToken, as Kafka's Admin offers them. Tokens are the cluster's, so requests
go to any broker; the connection must be authenticated (SASL, or an SSL client certificate),
not with a token. A refused request raises BrokerError with Kafka's code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kgroup.wire.api_keys import ApiKey

from .cluster import request_fields
from .errors import BrokerError

if TYPE_CHECKING:
    from .cluster import ClusterClient


@dataclass(frozen=True, slots=True)
class DelegationToken:
    """One token as a broker describes it (principals are `Type:name`, times epoch ms)."""

    token_id: str
    hmac: bytes
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_ms: int
    expiry_ms: int
    max_ms: int


def _principal(text: str) -> dict[str, str]:
    kind, sep, name = text.partition(":")
    if not sep or not kind or not name:
        raise ValueError(f"{text!r} is not a principal (Type:name, e.g. User:alice)")
    return {"principal_type": kind, "principal_name": name}


def _ms(value: Any) -> int:
    if hasattr(value, "timestamp"):
        return round(value.timestamp() * 1000)
    return int(value)


class TokenAdmin:
    """Delegation token calls of ``AdminClient`` (see the module comment)."""

    cluster: ClusterClient

    async def _token_request(self, api_key: int, what: str, **fields: Any) -> Any:
        conn = await self.cluster.connect()
        resp = await self.cluster.request(conn, api_key, request_fields(**fields))
        if int(resp.error_code):
            raise BrokerError(int(resp.error_code), what)
        return resp

    async def create_delegation_token(self, renewers: tuple[str, ...] = (), owner: str | None = None,
                                      max_lifetime_ms: int = -1) -> DelegationToken:
        """A new token (owned by ``owner``, by default the caller)."""
        own = _principal(owner) if owner else {"principal_type": None, "principal_name": None}
        r = await self._token_request(
            ApiKey.CREATE_DELEGATION_TOKEN, "create a delegation token",
            owner_principal_type=own["principal_type"], owner_principal_name=own["principal_name"],
            renewers=[_principal(p) for p in renewers], max_lifetime=max_lifetime_ms)
        requester = f"{r.token_requester_principal_type}:{r.token_requester_principal_name}" \
            if getattr(r, "token_requester_principal_name", "") else f"{r.principal_type}:{r.principal_name}"
        return DelegationToken(r.token_id, bytes(r.hmac), f"{r.principal_type}:{r.principal_name}", requester,
                               tuple(renewers), _ms(r.issue_timestamp), _ms(r.expiry_timestamp),
                               _ms(r.max_timestamp))

    async def renew_delegation_token(self, hmac: bytes, renew_period_ms: int = -1) -> int:
        """The token's new expiry (epoch ms)."""
        r = await self._token_request(ApiKey.RENEW_DELEGATION_TOKEN, "renew the delegation token", hmac=hmac,
                                      renew_period=renew_period_ms)
        return _ms(r.expiry_timestamp)

    async def expire_delegation_token(self, hmac: bytes, expiry_period_ms: int = -1) -> int:
        """The token's new expiry (epoch ms); a negative period expires it now."""
        r = await self._token_request(ApiKey.EXPIRE_DELEGATION_TOKEN, "expire the delegation token", hmac=hmac,
                                      expiry_time_period=expiry_period_ms)
        return _ms(r.expiry_timestamp)

    async def describe_delegation_tokens(self, owners: tuple[str, ...] | None = None) -> list[DelegationToken]:
        """The tokens of ``owners`` (every token the caller may see when None) the caller may see."""
        r = await self._token_request(ApiKey.DESCRIBE_DELEGATION_TOKEN, "describe delegation tokens",
                                      owners=None if owners is None else [_principal(o) for o in owners])
        return [DelegationToken(t.token_id, bytes(t.hmac), f"{t.principal_type}:{t.principal_name}",
                                f"{t.token_requester_principal_type}:{t.token_requester_principal_name}"
                                if getattr(t, "token_requester_principal_name", "") else
                                f"{t.principal_type}:{t.principal_name}",
                                tuple(f"{x.principal_type}:{x.principal_name}" for x in t.renewers),
                                int(t.issue_timestamp), int(t.expiry_timestamp), int(t.max_timestamp))
                for t in r.tokens]
