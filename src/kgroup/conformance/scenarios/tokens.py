"""Delegation tokens (KIP-48, KIP-373): the four token APIs on an unauthenticated connection
(the plain pair), and on the secured pair (both brokers sign tokens with the same secret
key): create, describe, renew, expire, and SCRAM with tokenauth=true as the token's owner.

Kafka applies token changes through its controller, so a token reaches its broker's cache
(describe, authentication) a moment after the answer: the scenarios poll, unrecorded, until
the change shows, then ask again recorded."""

from __future__ import annotations

import base64

from kgroup.conformance import observe
from kgroup.conformance.messages import request
from kgroup.conformance.raw import RawClient
from kgroup.conformance.sasl import scram_login
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.scenarios.security import acl
from kgroup.conformance.target import Target

USER, CREATE_TOKENS, DESCRIBE_TOKENS = 7, 13, 14   # Kafka's ResourceType and AclOperation codes



def create(owner: str | None = None, renewers: tuple[str, ...] = (), renewer_type: str = "User") -> object:
    return request("CreateDelegationToken", 3, owner_principal_type="User" if owner else None,
                   owner_principal_name=owner, max_lifetime=-1,
                   renewers=[{"principal_type": renewer_type, "principal_name": r} for r in renewers])


def describe(*owners: str, everyone: bool = False) -> object:
    return request("DescribeDelegationToken", 3, owners=None if everyone else [
        {"principal_type": "User", "principal_name": o} for o in owners])


@scenario("security", "delegation tokens: not on an unauthenticated connection",
          rule="CreateDelegationToken, RenewDelegationToken, ExpireDelegationToken and DescribeDelegationToken on "
               "a PLAINTEXT connection answer DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (KIP-48), the create naming "
               "User:ANONYMOUS as owner and requester, with -1 timestamps")
async def tokens_not_allowed_unauthenticated(t: Target) -> None:
    raw = await t.raw()
    await t.ask(raw, "create", create(renewers=("alice",)))
    await t.ask(raw, "create for another owner", create(owner="alice"))
    await t.ask(raw, "renew", request("RenewDelegationToken", 2, hmac=b"not-a-token", renew_period=-1))
    await t.ask(raw, "expire", request("ExpireDelegationToken", 2, hmac=b"not-a-token", expiry_time_period=-1))
    await t.ask(raw, "describe every token", describe(everyone=True))


async def _token_login(t: Target, token_id: str, hmac: bytes, suffix: str) -> tuple[RawClient, int]:
    raw = await RawClient.open(t.address, t.client_id(suffix))
    t._raws.append(raw)
    return raw, await scram_login(raw, token_id, base64.b64encode(hmac).decode(), tokenauth=True)


async def _until(t: Target, what: str, check) -> None:
    async def ok() -> bool:
        return bool(await check())
    await observe.until(ok, what)


@scenario("security", "delegation tokens: create, describe, authenticate, renew, expire", pair="secured",
          rule="alice creates a token renewable by admin (KIP-48); another owner needs CREATE_TOKENS on that "
               "User (KIP-373: DELEGATION_TOKEN_AUTHORIZATION_FAILED), a renewer must be a User "
               "(INVALID_PRINCIPAL_TYPE); DescribeDelegationToken shows owners and renewers their tokens (an empty "
               "owner list: none); SCRAM with tokenauth=true authenticates as the owner, whose ACLs apply, and such "
               "a connection may not ask for tokens; renew and expire go by HMAC (unknown: NOT_FOUND); an expired "
               "token no longer authenticates; a super user creates a token for alice; CREATE_TOKENS and "
               "DESCRIBE_TOKENS on User:admin let alice create admin's tokens and see them")
async def tokens_lifecycle_secured(t: Target) -> None:
    alice = await t.raw("alice", user="alice")
    admin = await t.raw("admin", user="admin")
    r = await t.ask(alice, "alice creates a token renewable by admin", create(renewers=("admin",)))
    token_id, hmac = r.token_id, bytes(r.hmac)
    await t.ask(alice, "alice asks a token for admin", create(owner="admin"))
    await t.ask(alice, "a renewer that is no User", create(renewers=("admins",), renewer_type="Group"))
    await _until(t, "the token is described", lambda: _listed(alice, describe(everyone=True), 1))
    await t.ask(alice, "alice describes every token she may see", describe(everyone=True))
    await t.ask(alice, "an empty owner list", describe())
    await t.ask(admin, "admin (a renewer) describes alice's tokens", describe("alice"))
    # Authenticate with the token: its owner's principal, alice's ACLs.
    await _until(t, "the token authenticates", lambda: _logs_in(t, token_id, hmac))
    tok, code = await _token_login(t, token_id, hmac, "token")
    t.add("SCRAM with tokenauth=true", code)
    await t.ask(tok, "DescribeAcls as the token's owner", request(
        "DescribeAcls", 3, resource_type_filter=1, resource_name_filter=None, pattern_type_filter=1,
        principal_filter=None, host_filter=None, operation=1, permission_type=1))
    await t.ask(tok, "a token connection creates a token", create())
    await t.ask(tok, "a token connection describes tokens", describe(everyone=True))
    await t.ask(alice, "alice renews", request("RenewDelegationToken", 2, hmac=hmac, renew_period=3_600_000))
    await t.ask(alice, "a renew with an unknown HMAC", request("RenewDelegationToken", 2, hmac=b"x" * 64,
                                                               renew_period=-1))
    await t.ask(admin, "admin (a renewer) expires it now", request("ExpireDelegationToken", 2, hmac=hmac,
                                                                   expiry_time_period=-1))

    async def gone() -> bool:
        return not await _logs_in(t, token_id, hmac)
    await _until(t, "the expired token is refused", gone)
    _, code = await _token_login(t, token_id, hmac, "expired")
    t.add("SCRAM with the expired token", code)
    await t.ask(alice, "renewing the expired token", request("RenewDelegationToken", 2, hmac=hmac, renew_period=-1))
    await t.ask(admin, "admin creates a token for alice", create(owner="alice"))
    await _until(t, "alice's new token is described", lambda: _listed(alice, describe("alice"), 1))
    await t.ask(alice, "alice describes her tokens", describe("alice"))
    # KIP-373: ACLs on the owner's User resource.
    await t.ask(admin, "allow alice CreateTokens and DescribeTokens on User:admin", request(
        "CreateAcls", 3, creations=[acl(USER, "User:admin", "User:alice", op) for op in (CREATE_TOKENS, DESCRIBE_TOKENS)]))
    await t.ask(admin, "admin creates a token of his own", create())
    # Owner filters match requesters too (KIP-373): alice's token that admin asked for is listed.
    await _until(t, "alice sees admin's token", lambda: _listed(alice, describe("admin"), 2))
    await t.ask(alice, "alice describes the tokens admin owns, renews or asked for", describe("admin"))
    await t.ask(alice, "alice creates a token for admin", create(owner="admin"))


async def _listed(raw: RawClient, req, count: int) -> bool:
    answer = await raw.call(req)
    return len(answer.tokens) == count


async def _logs_in(t: Target, token_id: str, hmac: bytes) -> bool:
    raw = await RawClient.open(t.address, t.client_id("probe"))
    try:
        return await scram_login(raw, token_id, base64.b64encode(hmac).decode(), tokenauth=True) == 0
    finally:
        await raw.close()
