"""SCRAM both ways: the RFC test vectors, a round trip per mechanism, and every way a
client or server message can be wrong."""

from __future__ import annotations

import base64
import hmac

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.wire.scram import (
    MIN_ITERATIONS,
    ScramClient,
    ScramCredential,
    ScramDone,
    ScramError,
    ScramMechanism,
    ScramServer,
    ServerState,
    credential_from_salted,
    decode_saslname,
    encode_saslname,
    make_credential,
    salted_password,
    verify_password,
)

SECRET = b"test-secret"


def _server(hash_name: str, creds: dict[str, ScramCredential], nonce: str) -> ScramServer:
    return ScramServer(hash_name, creds.get, nonce, SECRET)


# RFC 5802 section 5 (SCRAM-SHA-1) and RFC 7677 section 3 (SCRAM-SHA-256): user "user",
# password "pencil"; the messages on the wire, byte for byte.
VECTORS = [
    ("sha1", "QSXCR+Q6sek8bf92", "fyko+d2lbbFgONRv9qkxdawL", "3rfcNHYJY1ZVvWVs7j",
     "v0X8v3Bz2T0CJGbJQyF0X+HI4Ts=", "rmF9pqV8S7suAoZWja4dJRkFsKQ="),
    ("sha256", "W22ZaJ0SNY7soEsUEjb6gQ==", "rOprNGfwEbeRWgbNEkqO", "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0",
     "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="),
]


@pytest.mark.parametrize("hash_name,salt,cnonce,snonce,proof,signature", VECTORS)
def test_rfc_test_vectors_server_side(hash_name, salt, cnonce, snonce, proof, signature) -> None:
    salted = salted_password(hash_name, "pencil", base64.b64decode(salt), 4096)
    cred = credential_from_salted(hash_name, salted, base64.b64decode(salt), 4096)
    server = _server(hash_name, {"user": cred}, snonce)
    first = server.step(f"n,,n=user,r={cnonce}".encode())
    assert first == f"r={cnonce}{snonce},s={salt},i=4096".encode()
    done = server.step(f"c=biws,r={cnonce}{snonce},p={proof}".encode())
    assert done == ScramDone(f"v={signature}".encode(), "user")
    assert server.state is ServerState.DONE


@pytest.mark.parametrize("hash_name,salt,cnonce,snonce,proof,signature", VECTORS)
def test_rfc_test_vectors_client_side(hash_name, salt, cnonce, snonce, proof, signature) -> None:
    client = ScramClient(hash_name, "user", "pencil", cnonce)
    assert client.first() == f"n,,n=user,r={cnonce}".encode()
    final = client.final(f"r={cnonce}{snonce},s={salt},i=4096".encode())
    assert final == f"c=biws,r={cnonce}{snonce},p={proof}".encode()
    client.verify(f"v={signature}".encode())
    with pytest.raises(ScramError, match="signature"):
        client.verify(b"v=" + base64.b64encode(b"\0" * len(base64.b64decode(signature))))


@pytest.mark.parametrize("mechanism", [ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512])
def test_round_trip_and_wrong_password(mechanism: ScramMechanism) -> None:
    cred = make_credential(mechanism, "s3cret", b"salt-salt-salt", 4096)
    assert b"s3cret" not in repr(cred).encode()
    for password, ok in (("s3cret", True), ("s3cres", False)):
        server = _server(mechanism.hash_name, {"alice": cred}, "SERVERNONCE")
        client = ScramClient(mechanism.hash_name, "alice", password, "clientnonce")
        final = client.final(server.step(client.first()))
        if ok:
            done = server.step(final)
            assert done.username == "alice"
            client.verify(done.message)
        else:
            with pytest.raises(ScramError, match="invalid credentials"):
                server.step(final)
            assert server.state is ServerState.FAILED
    assert verify_password(mechanism, cred, "s3cret")
    assert not verify_password(mechanism, cred, "S3cret")


def test_unknown_user_gets_a_stable_made_up_salt_and_fails_only_at_the_proof() -> None:
    firsts = []
    for _ in range(2):
        server = _server("sha256", {}, "N")
        client = ScramClient("sha256", "mallory", "x", "c")
        first = server.step(client.first())
        firsts.append(first)
        with pytest.raises(ScramError, match="invalid credentials"):
            server.step(client.final(first))
    assert firsts[0] == firsts[1]
    other = _server("sha256", {}, "N").step(b"n,,n=eve,r=c")
    assert other != firsts[0]  # per-user salt, so a name's salt does not give others away


BAD_CLIENT_FIRST = [
    b"",
    b"n,,",
    b"x,,n=user,r=abc",                 # gs2 flag
    b"p=tls-unique,,n=user,r=abc",      # channel binding asked for
    b"n,,r=abc,n=user",                 # order
    b"n,,n=user",                       # no nonce
    b"n,,n=user,r=",                    # empty nonce
    b"n,,n=user,r=a,b",                 # ',' in nonce -> bad extension
    b"n,,n=us=er,r=abc",                # bad saslname escape
    b"n,,n=,r=abc",                     # empty user
    b"n,a=other,n=user,r=abc",          # authzid differs
    b"n,,n=user,r=ab\x7fc",              # non-printable nonce
    b"n,,n=user,r=\xff\xfe",            # not UTF-8
    b"n,,n=user,r=" + b"a" * 9000,      # too long
]


@pytest.mark.parametrize("message", BAD_CLIENT_FIRST)
def test_bad_client_first_messages_fail(message: bytes) -> None:
    server = _server("sha256", {"user": make_credential(ScramMechanism.SCRAM_SHA_256, "p", b"s", 4096)}, "N")
    with pytest.raises(ScramError):
        server.step(message)
    assert server.state is ServerState.FAILED
    with pytest.raises(ScramError):
        server.step(b"n,,n=user,r=abc")  # a failed exchange stays failed


def _final_parts(mech=ScramMechanism.SCRAM_SHA_512):
    cred = make_credential(mech, "pw", b"0123456789abcdef", 4096)
    server = _server(mech.hash_name, {"bob": cred}, "SRV")
    client = ScramClient(mech.hash_name, "bob", "pw", "CLI")
    good = client.final(server.step(client.first()))
    return server, good


@pytest.mark.parametrize("mutate", [
    lambda f: f.replace(b"r=CLISRV", b"r=CLIXXX"),                 # wrong nonce
    lambda f: f.replace(b"r=CLISRV", b"r=CLI"),                    # client nonce only
    lambda f: f.replace(b"c=biws", b"c=eSws"),                     # binding differs (y,,)
    lambda f: f.replace(b"c=biws", b"c=!!!"),                      # binding not base64
    lambda f: f.rsplit(b",p=", 1)[0],                              # no proof
    lambda f: f.rsplit(b",p=", 1)[0] + b",p=AAAA",                 # short proof
    lambda f: f.rsplit(b",p=", 1)[0] + b",p=" + base64.b64encode(b"\1" * 64),  # wrong proof
    lambda f: f[:-3],                                              # truncated
    lambda f: b"garbage",
])
def test_bad_client_final_messages_fail(mutate) -> None:
    server, good = _final_parts()
    with pytest.raises(ScramError):
        server.step(mutate(good))
    assert server.state is ServerState.FAILED


def test_the_good_final_message_succeeds_once() -> None:
    server, good = _final_parts()
    assert isinstance(server.step(good), ScramDone)
    with pytest.raises(ScramError):
        server.step(good)


@pytest.mark.parametrize("server_first,match", [
    (b"r=OTHER,s=c2FsdA==,i=4096", "nonce"),
    (b"r=CLI,s=c2FsdA==,i=4096", "nonce"),
    (b"r=CLISRV,s=c2FsdA==,i=4095", "iterations"),
    (b"r=CLISRV,s=c2FsdA==,i=100000", "iterations"),
    (b"r=CLISRV,s=c2FsdA==,i=x", "malformed"),
    (b"r=CLISRV,i=4096", "malformed"),
    (b"e=unknown-user", "refused"),
])
def test_client_refuses_a_bad_server_first(server_first: bytes, match: str) -> None:
    client = ScramClient("sha256", "bob", "pw", "CLI")
    client.first()
    with pytest.raises(ScramError, match=match):
        client.final(server_first)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.binary(max_size=300))
def test_arbitrary_bytes_never_raise_anything_but_scram_error(first: bytes, final: bytes) -> None:
    server = _server("sha256", {"user": ScramCredential(b"s", b"k" * 32, b"v" * 32, MIN_ITERATIONS)}, "N")
    for message in (first, final):
        try:
            server.step(message)
        except ScramError:
            return


@given(st.text(min_size=1, max_size=30))
def test_saslname_escaping_round_trips(name: str) -> None:
    assert decode_saslname(encode_saslname(name)) == name
    assert "," not in encode_saslname(name)


@pytest.mark.parametrize("hash_name,salt,cnonce,snonce,proof,signature", VECTORS)
def test_librdkafka_before_2_6_1_repeats_its_nonce_and_is_let_through(hash_name, salt, cnonce, snonce, proof,
                                                                     signature) -> None:
    """librdkafka#4895: its client-final nonce is its own nonce again, then the combined one.
    The combined nonce (with the server's part) must still follow; anything else fails."""
    salted = salted_password(hash_name, "pencil", base64.b64decode(salt), 4096)
    cred = credential_from_salted(hash_name, salted, base64.b64decode(salt), 4096)
    for sent, ok in ((cnonce + cnonce + snonce, True), (cnonce + snonce + cnonce, False),
                     ("x" + cnonce + snonce, False), (cnonce + cnonce, False), (snonce, False)):
        server = _server(hash_name, {"user": cred}, snonce)
        server_first = server.step(f"n,,n=user,r={cnonce}".encode())
        # The client signs what it sends, as librdkafka does.
        without_proof = f"c=biws,r={sent}"
        auth = f"n=user,r={cnonce},{server_first.decode()},{without_proof}".encode()
        client_key = hmac.new(salted, b"Client Key", hash_name).digest()
        signature_bytes = hmac.new(cred.stored_key, auth, hash_name).digest()
        client_proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature_bytes))).decode()
        if ok:
            assert server.step(f"{without_proof},p={client_proof}".encode()).username == "user"
        else:
            with pytest.raises(ScramError, match="nonce"):
                server.step(f"{without_proof},p={client_proof}".encode())


def test_tokenauth_authenticates_a_delegation_token_as_its_owner_kip48() -> None:
    hmac_b64 = base64.b64encode(b"the-token-hmac").decode()
    cred = make_credential(ScramMechanism.SCRAM_SHA_256, hmac_b64, b"salt", 4096)
    tokens = {"tok-1": (cred, "User:alice", 1000)}
    # Without tokenauth the token id is no user (refused at the proof); an unknown token id,
    # or tokens off (no lookup), is refused at once, as Kafka does.
    server = ScramServer("sha256", {}.get, "N", SECRET, tokens.get)
    client = ScramClient("sha256", "tok-1", hmac_b64, "c")
    with pytest.raises(ScramError, match="invalid credentials"):
        server.step(client.final(server.step(client.first())))
    for server, token_id in ((ScramServer("sha256", {}.get, "N", SECRET), "tok-1"),
                             (ScramServer("sha256", {}.get, "N", SECRET, tokens.get), "tok-2")):
        with pytest.raises(ScramError, match="Invalid tokenId"):
            server.step(ScramClient("sha256", token_id, hmac_b64, "c", tokenauth=True).first())
    server = ScramServer("sha256", {}.get, "N", SECRET, tokens.get)
    client = ScramClient("sha256", "tok-1", hmac_b64, "c", tokenauth=True)
    done = server.step(client.final(server.step(client.first())))
    client.verify(done.message)
    assert (done.username, done.token_owner, done.token_expiry_ms) == ("tok-1", "User:alice", 1000)
