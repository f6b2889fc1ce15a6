"""SCRAM (RFC 5802, RFC 7677): credentials, messages and both sides of the exchange.

How this works. A stored credential never holds the password: it is the salt, the iteration
count and two keys derived from ``SaltedPassword = PBKDF2(password, salt, i)``:
``StoredKey = H(HMAC(SaltedPassword, "Client Key"))`` and
``ServerKey = HMAC(SaltedPassword, "Server Key")``. The exchange has two round trips:

    client-first   n,,n=<user>,r=<client nonce>
    server-first   r=<client nonce + server nonce>,s=<base64 salt>,i=<iterations>
    client-final   c=<base64 gs2 header>,r=<nonce>,p=<base64 ClientProof>
    server-final   v=<base64 ServerSignature>

The server checks the proof by recomputing ``ClientKey = ClientProof XOR
HMAC(StoredKey, AuthMessage)`` and comparing ``H(ClientKey)`` with StoredKey in constant
time; the client checks the server's signature the same way, so each side proves it knows
the credential without sending it.

``ScramServer`` is the server side as a small state machine (enum states and one
transition table): it takes each client message and answers with the next server message,
``ScramDone(username)`` or raises ``ScramError``. The client-final nonce must be the
server-first one; librdkafka before 2.6.1 (librdkafka#4895: Debian's kcat 1.7.1, Ubuntu's
librdkafka) sends its own nonce once more in front of it, and is let through -- the whole
combined nonce still has to follow, so the server's nonce is checked (the replay CVE-2024-56128
was about), and the proof is checked over the message as sent. Kafka 3.8.1-3.9 let it
through the same way; Kafka 4.x refuses it, which locks those clients out of SCRAM. An unknown user gets a made-up salt derived
from a server secret and the name, so the exchange fails only at the proof and does not tell
which user names exist. Kafka's extension ``tokenauth=true`` (KIP-48) makes the user name a
delegation token's id: the credential is then the token's (``token_lookup``) and the exchange
ends with the token's owner (``ScramDone.token_owner``), whose ACLs apply. ``ScramClient`` is the client side. Nonces and salts are given to
these classes, never drawn here: this module does no I/O and uses no randomness of its own.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from dataclasses import dataclass
from enum import Enum, IntEnum

__all__ = [
    "MAX_ITERATIONS",
    "MIN_ITERATIONS",
    "MECHANISMS",
    "ScramClient",
    "ScramCredential",
    "ScramDone",
    "ScramError",
    "ScramMechanism",
    "ScramServer",
    "make_credential",
    "salted_password",
    "verify_password",
]

# Kafka's bounds for SCRAM iterations (ScramMechanism.minIterations and the limit of
# AlterUserScramCredentials).
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
# Messages longer than this are refused outright: a real one is well under 1 KiB.
MAX_MESSAGE_BYTES = 8192


class ScramMechanism(IntEnum):
    """Kafka's numbers for the SCRAM mechanisms (AlterUserScramCredentials, Describe...)."""

    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def sasl_name(self) -> str:
        return self.name.replace("_", "-")

    @property
    def hash_name(self) -> str:
        return {1: "sha256", 2: "sha512"}[int(self)]

    @classmethod
    def from_sasl_name(cls, name: str) -> ScramMechanism:
        """``SCRAM-SHA-256`` -> SCRAM_SHA_256; ValueError for anything else."""
        try:
            mech = cls[name.strip().upper().replace("-", "_")]
        except KeyError:
            mech = cls.UNKNOWN
        if mech is cls.UNKNOWN:
            raise ValueError(f"unknown SCRAM mechanism {name!r} (SCRAM-SHA-256 or SCRAM-SHA-512)")
        return mech


MECHANISMS = {m.sasl_name: m for m in ScramMechanism if m is not ScramMechanism.UNKNOWN}


class ScramError(Exception):
    """The exchange failed: a malformed message, a wrong nonce, a wrong proof."""


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """What the server stores for one user and mechanism (never the password)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@dataclass(frozen=True, slots=True)
class ScramDone:
    """The exchange succeeded: the last message to send and who authenticated."""

    message: bytes
    username: str
    # With tokenauth=true: the token's owner (a principal, `User:name`) and its expiry.
    token_owner: str | None = None
    token_expiry_ms: int | None = None


def _hmac(hash_name: str, key: bytes, msg: bytes) -> bytes:
    return hmac.new(key, msg, hash_name).digest()


def _h(hash_name: str, data: bytes) -> bytes:
    return hashlib.new(hash_name, data).digest()


def salted_password(hash_name: str, password: str, salt: bytes, iterations: int) -> bytes:
    """``Hi(Normalize(password), salt, i)``: PBKDF2-HMAC (passwords taken as UTF-8, as
    Kafka's clients send them, without SASLprep)."""
    return hashlib.pbkdf2_hmac(hash_name, password.encode(), salt, iterations)


def credential_from_salted(hash_name: str, salted: bytes, salt: bytes, iterations: int) -> ScramCredential:
    """The stored credential for a SaltedPassword (what AlterUserScramCredentials sends)."""
    client_key = _hmac(hash_name, salted, b"Client Key")
    return ScramCredential(salt=salt, stored_key=_h(hash_name, client_key),
                           server_key=_hmac(hash_name, salted, b"Server Key"), iterations=iterations)


def make_credential(mechanism: ScramMechanism, password: str, salt: bytes, iterations: int) -> ScramCredential:
    """The stored credential for ``password`` with ``salt`` (from the caller's randomness)."""
    name = mechanism.hash_name
    return credential_from_salted(name, salted_password(name, password, salt, iterations), salt, iterations)


def verify_password(mechanism: ScramMechanism, credential: ScramCredential, password: str) -> bool:
    """Whether ``password`` is the one ``credential`` was made from (SASL/PLAIN checks
    passwords against the SCRAM store this way); constant-time comparison."""
    derived = make_credential(mechanism, password, credential.salt, credential.iterations)
    return hmac.compare_digest(derived.stored_key, credential.stored_key)


# -- message syntax ------------------------------------------------------------------------

def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _unb64(text: str, what: str) -> bytes:
    try:
        return base64.b64decode(text.encode(), validate=True)
    except (binascii.Error, ValueError, UnicodeEncodeError):
        raise ScramError(f"{what} is not valid base64") from None


def _attributes(message: str, what: str) -> list[tuple[str, str]]:
    """``a=x,b=y`` -> [(a, x), (b, y)]; each attribute one letter."""
    out = []
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=" or not part[0].isalpha():
            raise ScramError(f"malformed {what}: attribute {part[:16]!r}")
        out.append((part[0], part[2:]))
    return out


def _valid_nonce(nonce: str) -> bool:
    # RFC 5802: printable ASCII except ','.
    return bool(nonce) and all(0x21 <= ord(c) <= 0x7E and c != "," for c in nonce)


def encode_saslname(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def decode_saslname(text: str) -> str:
    """RFC 5802 saslname: '=2C' is ',' and '=3D' is '='; any other '=' is an error."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "=":
            code = text[i:i + 3]
            if code == "=2C":
                out.append(",")
            elif code == "=3D":
                out.append("=")
            else:
                raise ScramError("malformed user name (bad '=' escape)")
            i += 3
        else:
            out.append(text[i])
            i += 1
    if not out:
        raise ScramError("empty user name")
    return "".join(out)


def _text(message: bytes, what: str) -> str:
    if len(message) > MAX_MESSAGE_BYTES:
        raise ScramError(f"{what} of {len(message)} bytes is too long")
    try:
        return message.decode("utf-8")
    except UnicodeDecodeError:
        raise ScramError(f"{what} is not UTF-8") from None


# -- server side ---------------------------------------------------------------------------

class ServerState(Enum):
    """Where the server side of one exchange is."""

    AWAIT_CLIENT_FIRST = "await client-first"
    AWAIT_CLIENT_FINAL = "await client-final"
    DONE = "done"
    FAILED = "failed"


# The one transition table of ScramServer: (state, outcome) -> next state.
_SERVER_MOVES = {
    (ServerState.AWAIT_CLIENT_FIRST, "ok"): ServerState.AWAIT_CLIENT_FINAL,
    (ServerState.AWAIT_CLIENT_FIRST, "fail"): ServerState.FAILED,
    (ServerState.AWAIT_CLIENT_FINAL, "ok"): ServerState.DONE,
    (ServerState.AWAIT_CLIENT_FINAL, "fail"): ServerState.FAILED,
}


class ScramServer:
    """The server side of one SCRAM exchange; see the module comment.

    ``hash_name`` is the hashlib name of the mechanism's hash (``ScramMechanism.hash_name``;
    RFC 5802's SHA-1 examples use "sha1"); ``lookup(username)`` returns the user's
    credential for this mechanism or None;
    ``nonce`` is this exchange's server nonce (printable, no ','); ``secret`` keys the
    made-up salts of unknown users; ``token_lookup(token_id)`` returns a delegation token's
    (credential, owner, expiry ms) or None, for ``tokenauth=true`` (None: tokens are refused).
    """

    def __init__(self, hash_name: str, lookup, nonce: str, secret: bytes, token_lookup=None) -> None:
        if not _valid_nonce(nonce):
            raise ValueError("server nonce must be printable ASCII without ','")
        self.hash_name = hash_name
        self._lookup = lookup
        self._token_lookup = token_lookup
        self._token: tuple[str, int] | None = None   # (owner, expiry ms) with tokenauth=true
        self._server_nonce = nonce
        self._secret = secret
        self.state = ServerState.AWAIT_CLIENT_FIRST
        self._username = ""
        self._credential: ScramCredential | None = None
        self._known = False
        self._nonce = ""
        self._client_nonce = ""
        self._gs2 = ""
        self._client_first_bare = ""
        self._server_first = ""

    def _move(self, outcome: str) -> None:
        try:
            self.state = _SERVER_MOVES[(self.state, outcome)]
        except KeyError:
            raise ScramError(f"no SCRAM message expected in state {self.state.value}") from None

    def step(self, message: bytes) -> bytes | ScramDone:
        """The answer to the client's next message; ScramError ends the exchange."""
        if self.state is ServerState.AWAIT_CLIENT_FIRST:
            handler = self._client_first
        elif self.state is ServerState.AWAIT_CLIENT_FINAL:
            handler = self._client_final
        else:
            raise ScramError(f"no SCRAM message expected in state {self.state.value}")
        try:
            answer = handler(message)
        except ScramError:
            self._move("fail")
            raise
        self._move("ok")
        return answer

    def _client_first(self, message: bytes) -> bytes:
        text = _text(message, "client-first message")
        # 1. gs2 header: no channel binding ('n' or 'y'), an optional authzid.
        flag, sep, rest = text.partition(",")
        authzid_part, sep2, bare = rest.partition(",")
        if not sep or not sep2:
            raise ScramError("malformed client-first message")
        if flag == "p" or flag.startswith("p="):
            raise ScramError("channel binding is not supported")
        if flag not in ("n", "y"):
            raise ScramError("malformed client-first message (gs2 flag)")
        parts = bare.split(",")
        attrs = _attributes(",".join(parts[:2]), "client-first message")
        if len(attrs) < 2 or attrs[0][0] != "n" or attrs[1][0] != "r":
            raise ScramError("client-first message must start with n=<user>,r=<nonce>")
        username = decode_saslname(attrs[0][1])
        client_nonce = attrs[1][1]
        if not _valid_nonce(client_nonce):
            raise ScramError("client nonce has characters SCRAM does not allow")
        # Kafka's extensions (key=value, e.g. tokenauth=true for delegation tokens).
        tokenauth = False
        for extension in parts[2:]:
            key, eq, value = extension.partition("=")
            if not eq or not key.isalnum() or not value:
                raise ScramError(f"malformed extension {extension[:16]!r}")
            if key == "tokenauth" and value.lower() == "true":
                tokenauth = True
        if authzid_part:
            if not authzid_part.startswith("a=") or decode_saslname(authzid_part[2:]) != username:
                raise ScramError("authorization id differs from the user name")
        # 2. The user's (or the token's) credential, or a made-up one that fails at the proof.
        if tokenauth:
            found = self._token_lookup(username) if self._token_lookup is not None else None
            if found is None:      # Kafka refuses an unknown token id at once
                raise ScramError(f"Token Authentication failed: Invalid tokenId: {username}")
            credential = found[0]
            self._token = (found[1], found[2])
        else:
            credential = self._lookup(username)
        self._known = credential is not None
        if credential is None:
            salt = _hmac(self.hash_name, self._secret, username.encode())[:16]
            credential = ScramCredential(salt, b"\0" * len(salt), b"", MIN_ITERATIONS)
        self._username = username
        self._credential = credential
        self._gs2 = text[: len(text) - len(bare)]
        self._client_first_bare = bare
        self._client_nonce = client_nonce
        self._nonce = client_nonce + self._server_nonce
        self._server_first = f"r={self._nonce},s={_b64(credential.salt)},i={credential.iterations}"
        return self._server_first.encode()

    def _client_final(self, message: bytes) -> ScramDone:
        text = _text(message, "client-final message")
        without_proof, sep, proof_text = text.rpartition(",p=")
        if not sep:
            raise ScramError("client-final message has no proof")
        attrs = _attributes(without_proof, "client-final message")
        if len(attrs) < 2 or attrs[0][0] != "c" or attrs[1][0] != "r":
            raise ScramError("client-final message must start with c=<binding>,r=<nonce>")
        if _unb64(attrs[0][1], "channel binding") != self._gs2.encode():
            raise ScramError("channel binding does not match the client-first message")
        sent = attrs[1][1].encode()
        if not (hmac.compare_digest(sent, self._nonce.encode())
                or hmac.compare_digest(sent, (self._client_nonce + self._nonce).encode())):
            raise ScramError("nonce does not match")
        proof = _unb64(proof_text, "client proof")
        cred = self._credential
        assert cred is not None
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = _hmac(self.hash_name, cred.stored_key, auth_message)
        if len(proof) != len(signature):
            raise ScramError("client proof has the wrong length")
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        good = hmac.compare_digest(_h(self.hash_name, client_key), cred.stored_key)
        if not (good and self._known):
            raise ScramError("invalid credentials")
        server_signature = _hmac(self.hash_name, cred.server_key, auth_message)
        owner, expiry = self._token if self._token is not None else (None, None)
        return ScramDone(f"v={_b64(server_signature)}".encode(), self._username, owner, expiry)


# -- client side ---------------------------------------------------------------------------

class ScramClient:
    """The client side of one exchange: ``first()``, ``final(server_first)``,
    ``verify(server_final)``; ScramError if the server misbehaves."""

    def __init__(self, hash_name: str, username: str, password: str, nonce: str, *, tokenauth: bool = False) -> None:
        if not _valid_nonce(nonce):
            raise ValueError("client nonce must be printable ASCII without ','")
        self.hash_name = hash_name
        self.username = username
        self.password = password
        self.nonce = nonce
        # tokenauth: the user name is a delegation token's id, the password its HMAC in base64.
        self._bare = f"n={encode_saslname(username)},r={nonce}" + (",tokenauth=true" if tokenauth else "")
        self._auth_message = b""
        self._salted = b""

    def first(self) -> bytes:
        return f"n,,{self._bare}".encode()

    @staticmethod
    def _server_message(message: bytes, what: str) -> tuple[str, dict[str, str]]:
        text = _text(message, what)
        attrs = dict(_attributes(text, what))
        if "e" in attrs:
            raise ScramError(f"server refused: {attrs['e']}")
        return text, attrs

    def final(self, server_first: bytes) -> bytes:
        text, attrs = self._server_message(server_first, "server-first message")
        nonce, salt_text, iter_text = attrs.get("r", ""), attrs.get("s"), attrs.get("i", "")
        if not nonce.startswith(self.nonce) or len(nonce) == len(self.nonce) or not _valid_nonce(nonce):
            raise ScramError("server nonce does not extend ours")
        if salt_text is None or not iter_text.isdigit():
            raise ScramError("malformed server-first message")
        iterations = int(iter_text)
        if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
            raise ScramError(f"server asks for {iterations} iterations "
                             f"(accepted: {MIN_ITERATIONS}-{MAX_ITERATIONS})")
        salt = _unb64(salt_text, "salt")
        self._salted = salted_password(self.hash_name, self.password, salt, iterations)
        without_proof = f"c={_b64(b'n,,')},r={nonce}"
        self._auth_message = f"{self._bare},{text},{without_proof}".encode()
        client_key = _hmac(self.hash_name, self._salted, b"Client Key")
        signature = _hmac(self.hash_name, _h(self.hash_name, client_key), self._auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        return f"{without_proof},p={_b64(proof)}".encode()

    def verify(self, server_final: bytes) -> None:
        _, attrs = self._server_message(server_final, "server-final message")
        server_key = _hmac(self.hash_name, self._salted, b"Server Key")
        expected = _hmac(self.hash_name, server_key, self._auth_message)
        if not hmac.compare_digest(_unb64(attrs.get("v", ""), "server signature"), expected):
            raise ScramError("the server's signature is wrong: it does not know our credential")
