"""Delegation tokens in the data dir (KIP-48): Kafka's lifetime rules over a manual clock,
renew and expire by HMAC, the file shared between processes, the SCRAM credential of a token."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest

from kgroup.broker.security.token_store import TokenError, TokenStore, token_hmac
from kgroup.error_codes import ErrorCode
from kgroup.wire.scram import ScramMechanism, verify_password

HOUR, DAY = 3_600_000, 86_400_000


def store(tmp_path, key: str | None = "k3y") -> TokenStore:
    return TokenStore(tmp_path, key, max_lifetime_ms=7 * DAY, expiry_time_ms=DAY)


def test_the_hmac_is_kafkas_hmac_sha512_of_the_token_id() -> None:
    assert token_hmac("k3y", "abc") == hmac.new(b"k3y", b"abc", hashlib.sha512).digest()


def test_a_token_expires_after_the_expiry_time_and_never_outlives_its_max_lifetime(tmp_path) -> None:
    tokens = store(tmp_path)
    t = tokens.create("User:alice", "User:alice", ("User:bob",), -1, now_ms=1_000)
    assert (t.issue_ms, t.expiry_ms, t.max_ms) == (1_000, 1_000 + DAY, 1_000 + 7 * DAY)
    assert len(t.token_id) == 22 and not t.token_id.startswith("-")    # Kafka's Uuid as base64
    short = tokens.create("User:alice", "User:admin", (), HOUR, now_ms=1_000)   # a request may only lower it
    assert (short.expiry_ms, short.max_ms) == (1_000 + HOUR, 1_000 + HOUR)
    # Describe counts the requester in (KIP-373); renewing does not.
    assert short.involves("User:admin") and not short.may_renew("User:admin") and t.may_renew("User:bob")
    # Renew: by the owner or a renewer, up to the expiry time, capped by the max timestamp.
    assert tokens.renew(t.hmac, "User:bob", 2 * DAY, now_ms=DAY) == 2 * DAY
    assert tokens.renew(t.hmac, "User:alice", HOUR, now_ms=DAY) == DAY + HOUR
    capped = tokens.create("User:alice", "User:alice", (), 36 * HOUR, now_ms=1_000)
    assert tokens.renew(capped.hmac, "User:alice", -1, now_ms=20 * HOUR) == 1_000 + 36 * HOUR
    for principal, code in (("User:eve", ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH),):
        with pytest.raises(TokenError) as err:
            tokens.renew(t.hmac, principal, -1, now_ms=DAY)
        assert err.value.code is code
    with pytest.raises(TokenError) as err:
        tokens.renew(b"unknown", "User:alice", -1, now_ms=DAY)
    assert err.value.code is ErrorCode.DELEGATION_TOKEN_NOT_FOUND
    with pytest.raises(TokenError) as err:
        tokens.renew(short.hmac, "User:alice", -1, now_ms=2 * HOUR)
    assert err.value.code is ErrorCode.DELEGATION_TOKEN_EXPIRED
    # Expire: a period moves the expiry; a negative one removes the token at once.
    assert tokens.expire(t.hmac, "User:alice", 60_000, now_ms=DAY) == DAY + 60_000
    assert tokens.expire(t.hmac, "User:bob", -1, now_ms=DAY) == DAY
    assert t.token_id not in tokens.tokens
    # The sweep removes what expired.
    assert {g.token_id for g in tokens.sweep(now_ms=3 * DAY)} == {short.token_id, capped.token_id}
    assert not tokens.tokens


def test_tokens_survive_a_restart_without_their_hmacs_on_disk_and_other_processes_see_them(tmp_path) -> None:
    tokens = store(tmp_path)
    other = store(tmp_path)
    t = tokens.create("User:alice", "User:alice", (), -1, now_ms=0)
    text = (tmp_path / "security" / "delegation-tokens.json").read_text()
    assert t.token_id in text and base64.b64encode(t.hmac).decode() not in text and t.hmac.hex() not in text
    assert json.loads(text)["tokens"][t.token_id]["owner"] == "User:alice"
    assert other.refresh() and other.tokens[t.token_id] == t
    reopened = store(tmp_path)
    assert reopened.tokens[t.token_id] == t
    # The SCRAM credential of a token is made from its HMAC in base64 (Kafka's password for it).
    cred, owner, expiry = reopened.scram(ScramMechanism.SCRAM_SHA_512, t.token_id)
    assert owner == "User:alice" and expiry == t.expiry_ms and cred.iterations == 4096
    assert verify_password(ScramMechanism.SCRAM_SHA_512, cred, base64.b64encode(t.hmac).decode())
    assert reopened.scram(ScramMechanism.SCRAM_SHA_512, "nope") is None


def test_without_a_secret_key_tokens_are_off(tmp_path) -> None:
    assert not store(tmp_path, key=None).enabled and store(tmp_path).enabled
