"""The SASL session of one connection: which requests pass, PLAIN and SCRAM, failures,
re-authentication (KIP-368) and session expiry — on a manual clock."""

from __future__ import annotations

import itertools

import pytest

from kgroup.wire.sasl import (
    ILLEGAL_SASL_STATE,
    SASL_AUTHENTICATION_FAILED,
    UNSUPPORTED_SASL_MECHANISM,
    AuthState,
    Gate,
    SaslSession,
    _Event,
)
from kgroup.wire.scram import ScramClient, ScramMechanism, make_credential, verify_password
from kgroup.wire.api_keys import ApiKey

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512


class Store:
    def __init__(self) -> None:
        self.creds = {(m, "alice"): make_credential(m, "wonderland", b"alice-salt", 4096) for m in (SHA256, SHA512)}
        self.creds[(SHA512, "bob")] = make_credential(SHA512, "builder", b"bob-salt", 4096)

    def scram(self, mechanism, username):
        return self.creds.get((mechanism, username))

    def check_plain(self, username, password):
        return any(verify_password(m, c, password) for (m, u), c in self.creds.items() if u == username)


def session(mechanisms=("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"), reauth_ms=0) -> SaslSession:
    counter = itertools.count()
    return SaslSession(mechanisms, Store(), nonce=lambda: f"srv{next(counter)}", secret=b"k", reauth_ms=reauth_ms)


def scram_login(s: SaslSession, user: str, password: str, mech=SHA512, now_ms=0):
    assert s.gate(ApiKey.SASL_HANDSHAKE, now_ms) is Gate.SASL
    assert s.handshake(mech.sasl_name).error == 0
    client = ScramClient(mech.hash_name, user, password, "cli")
    assert s.gate(ApiKey.SASL_AUTHENTICATE, now_ms) is Gate.SASL
    first = s.authenticate(client.first(), now_ms)
    if first.error:
        return first
    answer = s.authenticate(client.final(first.token), now_ms)
    if not answer.error:
        client.verify(answer.token)
    return answer


def test_only_api_versions_and_sasl_before_authentication() -> None:
    s = session()
    assert s.gate(ApiKey.API_VERSIONS, 0) is Gate.SERVE
    assert s.gate(ApiKey.SASL_HANDSHAKE, 0) is Gate.SASL
    assert s.gate(ApiKey.METADATA, 0) is Gate.CLOSE
    assert "before SASL authentication" in s.failure
    # A closing verdict is final: nothing gets through that connection again.
    assert s.state is AuthState.FAILED
    assert s.gate(ApiKey.SASL_HANDSHAKE, 0) is Gate.REFUSE and s.gate(ApiKey.API_VERSIONS, 0) is Gate.CLOSE
    assert session().gate(ApiKey.SASL_AUTHENTICATE, 0) is Gate.REFUSE
    for api, gate in ((ApiKey.SASL_AUTHENTICATE, Gate.SASL), (ApiKey.API_VERSIONS, Gate.CLOSE), (ApiKey.HEARTBEAT, Gate.CLOSE),
                      (ApiKey.SASL_HANDSHAKE, Gate.REFUSE)):
        s = session()
        s.handshake("PLAIN")
        assert s.state is AuthState.AWAIT_TOKEN
        assert s.gate(api, 0) is gate


def test_scram_sha_512_login_gives_the_user_principal() -> None:
    s = session()
    answer = scram_login(s, "alice", "wonderland")
    assert answer.error == 0 and not answer.close
    assert s.authenticated and s.principal == "User:alice"
    assert s.gate(ApiKey.FETCH, 10**12) is Gate.SERVE
    assert s.gate(ApiKey.SASL_AUTHENTICATE, 0) is Gate.ILLEGAL


@pytest.mark.parametrize("user,password", [("alice", "wrong"), ("nobody", "wonderland"), ("bob", "wonderland")])
def test_wrong_credentials_fail_and_close(user: str, password: str) -> None:
    s = session()
    answer = scram_login(s, user, password)
    assert answer.error == SASL_AUTHENTICATION_FAILED and answer.close
    assert "invalid credentials" in answer.message and password not in answer.message
    assert s.state is AuthState.FAILED and s.principal is None
    assert s.gate(ApiKey.METADATA, 0) is Gate.CLOSE


def test_plain_checks_the_scram_store() -> None:
    s = session()
    s.handshake("PLAIN")
    assert s.authenticate(b"\0alice\0wonderland", 0).error == 0
    assert s.principal == "User:alice"
    for token in (b"\0alice\0nope", b"alice\0alice", b"bob\0alice\0wonderland", b"\0\0x", b"\0alice\0",
                  b"\0al\xffice\0x"):
        s = session()
        s.handshake("PLAIN")
        answer = s.authenticate(token, 0)
        assert answer.error == SASL_AUTHENTICATION_FAILED and answer.close, token
        assert b"wonderland" not in (answer.message or "").encode()


def test_unsupported_mechanism_is_refused_with_the_enabled_list() -> None:
    s = session(mechanisms=("SCRAM-SHA-256",))
    answer = s.handshake("PLAIN")
    assert answer.error == UNSUPPORTED_SASL_MECHANISM and answer.close
    assert answer.mechanisms == ("SCRAM-SHA-256",)
    assert s.state is AuthState.FAILED
    assert session().handshake("GSSAPI").error == UNSUPPORTED_SASL_MECHANISM


def test_session_lifetime_and_re_authentication_kip368() -> None:
    s = session(reauth_ms=1000)
    answer = scram_login(s, "alice", "wonderland", now_ms=0)
    assert answer.session_lifetime_ms == 1000 and s.expires_at_ms == 1000
    assert s.gate(ApiKey.FETCH, 999) is Gate.SERVE
    # Re-authenticate at 900 ms, with requests still flowing in between.
    assert s.gate(ApiKey.SASL_HANDSHAKE, 900) is Gate.SASL
    s.handshake("SCRAM-SHA-512")
    assert s.state is AuthState.REAUTHENTICATING
    assert s.gate(ApiKey.FETCH, 900) is Gate.SERVE
    client = ScramClient(SHA512.hash_name, "alice", "wonderland", "c2")
    first = s.authenticate(client.first(), 900)
    assert s.authenticate(client.final(first.token), 900).error == 0
    assert s.state is AuthState.AUTHENTICATED and s.expires_at_ms == 1900
    assert s.gate(ApiKey.FETCH, 1899) is Gate.SERVE
    # Not re-authenticated in time: the next request closes the connection.
    assert s.gate(ApiKey.FETCH, 1900) is Gate.CLOSE
    assert "expired" in s.failure


def test_a_second_handshake_while_re_authenticating_is_refused() -> None:
    s = session(reauth_ms=1000)
    scram_login(s, "alice", "wonderland")
    s.gate(ApiKey.SASL_HANDSHAKE, 10)
    s.handshake("SCRAM-SHA-512")
    assert s.gate(ApiKey.SASL_HANDSHAKE, 10) is Gate.REFUSE and s.state is AuthState.FAILED


def test_re_authentication_cannot_change_principal_or_mechanism() -> None:
    s = session(reauth_ms=1000)
    scram_login(s, "alice", "wonderland")
    s.gate(ApiKey.SASL_HANDSHAKE, 10)
    answer = scram_login(s, "bob", "builder", now_ms=10)
    assert answer.error == SASL_AUTHENTICATION_FAILED and answer.close and "principal" in answer.message
    s = session()
    scram_login(s, "alice", "wonderland")
    assert s.handshake("SCRAM-SHA-256").error == UNSUPPORTED_SASL_MECHANISM
    assert s.state is AuthState.FAILED


def test_illegal_moves_raise_and_change_nothing() -> None:
    s = session()
    with pytest.raises(ValueError):
        s._move(_Event.DONE)
    assert s.state is AuthState.AWAIT_HANDSHAKE
    assert ILLEGAL_SASL_STATE == 34


def test_handshake_v0_makes_the_exchange_unframed_until_authenticated() -> None:
    s = session()
    assert not s.awaits_unframed_token
    assert s.handshake("PLAIN", 0).error == 0
    assert s.awaits_unframed_token                       # the next frame is a bare SASL message
    answer = s.authenticate(b"\0alice\0wonderland", 0)
    assert (answer.error, answer.token, answer.close) == (0, b"", False)
    assert s.state is AuthState.AUTHENTICATED and not s.awaits_unframed_token
    assert s.gate(ApiKey.METADATA, 0) is Gate.SERVE


def test_handshake_v1_stays_framed_and_v0_cannot_re_authenticate() -> None:
    s = session(reauth_ms=1000)
    assert s.handshake("PLAIN", 1).error == 0 and not s.awaits_unframed_token
    assert s.authenticate(b"\0alice\0wonderland", 0).error == 0
    answer = s.handshake("PLAIN", 0)
    assert answer.error == ILLEGAL_SASL_STATE and answer.close and s.state is AuthState.FAILED


class Tokens:
    def __init__(self, expiry_ms: int) -> None:
        self.expiry_ms = expiry_ms

    def scram(self, mechanism, token_id):
        if token_id != "tok":
            return None
        return make_credential(mechanism, "hmac-b64", b"token-salt", 4096), "User:alice", self.expiry_ms


def test_a_delegation_token_authenticates_as_its_owner_until_it_expires_kip48() -> None:
    counter = itertools.count()
    s = SaslSession(("SCRAM-SHA-256",), Store(), nonce=lambda: f"srv{next(counter)}", secret=b"k",
                    reauth_ms=60_000, tokens=Tokens(expiry_ms=10_000))
    assert s.gate(ApiKey.SASL_HANDSHAKE, 0) is Gate.SASL and s.handshake("SCRAM-SHA-256").error == 0
    client = ScramClient("sha256", "tok", "hmac-b64", "cli", tokenauth=True)
    first = s.authenticate(client.first(), 1_000)
    answer = s.authenticate(client.final(first.token), 1_000)
    # The owner's principal; the session ends with the token (9 s), before connections_max_reauth_ms.
    assert (answer.error, s.principal, s.token_authenticated) == (0, "User:alice", True)
    assert answer.session_lifetime_ms == 9_000 and s.gate(ApiKey.METADATA, 9_999) is Gate.SERVE
    assert s.gate(ApiKey.METADATA, 10_000) is Gate.CLOSE
    # A token past its expiry is refused.
    late = SaslSession(("SCRAM-SHA-256",), Store(), nonce=lambda: "srv", secret=b"k", tokens=Tokens(expiry_ms=10_000))
    late.handshake("SCRAM-SHA-256")
    client = ScramClient("sha256", "tok", "hmac-b64", "cli", tokenauth=True)
    answer = late.authenticate(client.final(late.authenticate(client.first(), 20_000).token), 20_000)
    assert answer.error == SASL_AUTHENTICATION_FAILED and answer.close and "expired" in answer.message
    # A user's password is not a token's: the same name without tokenauth is an unknown user.
    assert scram_login(session(), "tok", "hmac-b64", SHA256).error == SASL_AUTHENTICATION_FAILED
