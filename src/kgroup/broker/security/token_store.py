"""Delegation tokens (KIP-48, KIP-373), durable in the data dir, and Kafka's rules for them.

How this works. `<data_dir>/security/delegation-tokens.json` (a SharedJsonFile: changed
under a short flock, replaced atomically with an fsync, mode 0600, so an acknowledged token
survives kill -9 and every node of a cluster sees it) holds each token's information — id,
owner, requester, renewers, issue / expiry / max timestamps — never its HMAC: the HMAC is
HmacSHA512 of the token id keyed by `[auth] delegation_token_secret_key`, as Kafka computes
it, so it is recomputed when the file is read. The client's SCRAM password for a token is
the HMAC in base64; the SCRAM credentials (4096 iterations, Kafka's minimum) are derived
from it on first use and cached.

The rules are Kafka's controller's (DelegationTokenControlManager): a new token expires
after `min(max lifetime, expiry time)` and never outlives its max timestamp (the request's
max lifetime, when > 0, lowers the broker's); renew and expire find the token by HMAC
(DELEGATION_TOKEN_NOT_FOUND), only the owner or a renewer may (OWNER_MISMATCH), renewing an
expired token is DELEGATION_TOKEN_EXPIRED, and a negative expiry period removes the token
at once. Expired tokens are removed by `sweep` (polled by the broker), so a token's expiry
is also the end of authentication with it. Methods take `now_ms`; the file is the only I/O.
"""

from __future__ import annotations

import base64
import hashlib
import hmac as hmac_lib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from kgroup.error_codes import ErrorCode
from kgroup.kafka_uuid import random_uuid_text
from kgroup.storage.errors import CorruptDataError
from kgroup.storage.shared_file import SharedJsonFile
from kgroup.wire.scram import MIN_ITERATIONS, ScramCredential, ScramMechanism, make_credential

TOKENS_FILE = Path("security") / "delegation-tokens.json"


class TokenError(Exception):
    """A token request Kafka refuses: `code` is its error."""

    def __init__(self, code: ErrorCode) -> None:
        super().__init__(code.name)
        self.code = code


@dataclass(frozen=True, slots=True)
class Token:
    """One delegation token's information (principals are `Type:name`)."""

    token_id: str
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_ms: int
    expiry_ms: int
    max_ms: int
    hmac: bytes = b""

    def may_renew(self, principal: str) -> bool:
        """Renew and expire: the owner or a renewer (Kafka's controller's rule)."""
        return principal == self.owner or principal in self.renewers

    def involves(self, principal: str) -> bool:
        """Describe: the owner, the requester (KIP-373) or a renewer (Kafka's ownerOrRenewer)."""
        return principal in (self.owner, self.requester) or principal in self.renewers

    def expired(self, now_ms: int) -> bool:
        return self.max_ms < now_ms or self.expiry_ms < now_ms

    def to_json(self) -> dict:
        return {"owner": self.owner, "requester": self.requester, "renewers": list(self.renewers),
                "issue_ms": self.issue_ms, "expiry_ms": self.expiry_ms, "max_ms": self.max_ms}


def token_hmac(secret_key: str, token_id: str) -> bytes:
    """Kafka's HMAC of a token: HmacSHA512 over the id's UTF-8, keyed by the secret's UTF-8."""
    return hmac_lib.new(secret_key.encode(), token_id.encode(), hashlib.sha512).digest()


def _sum(now: int, duration: int) -> int:
    return min(now + duration, 2**63 - 1)


class TokenStore:
    """The cluster's delegation tokens (see the module comment)."""

    def __init__(self, data_dir: str | Path, secret_key: str | None, max_lifetime_ms: int, expiry_time_ms: int, *,
                 random_bytes: Callable[[int], bytes] = os.urandom) -> None:
        self.file = SharedJsonFile(Path(data_dir) / TOKENS_FILE, mode=0o600)
        self.secret_key = secret_key
        self.max_lifetime_ms = max_lifetime_ms
        self.expiry_time_ms = expiry_time_ms
        self.random_bytes = random_bytes
        self.tokens: dict[str, Token] = {}
        self._by_hmac: dict[bytes, str] = {}
        self._scram: dict[tuple[str, ScramMechanism], ScramCredential] = {}
        if self.enabled:
            self._load(self.file.read())

    @property
    def enabled(self) -> bool:
        return self.secret_key is not None

    def _load(self, doc: dict) -> None:
        tokens: dict[str, Token] = {}
        try:
            if doc and doc.get("version") != 1:
                raise ValueError(f"unknown version {doc.get('version')!r}")
            for token_id, t in doc.get("tokens", {}).items():
                tokens[token_id] = Token(token_id, str(t["owner"]), str(t["requester"]),
                                         tuple(str(r) for r in t["renewers"]), int(t["issue_ms"]),
                                         int(t["expiry_ms"]), int(t["max_ms"]),
                                         token_hmac(self.secret_key or "", token_id))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CorruptDataError(f"cannot read delegation tokens {self.file.path}: {exc}") from exc
        self.tokens = tokens
        self._by_hmac = {t.hmac: t.token_id for t in tokens.values()}
        self._scram = {k: v for k, v in self._scram.items() if k[0] in tokens}

    def refresh(self) -> bool:
        """Re-read the file if another process changed it; True if it was re-read."""
        if not self.enabled or not self.file.changed():
            return False
        self._load(self.file.read())
        return True

    def _change(self, upsert: Iterable[Token] = (), remove: Iterable[str] = ()) -> None:
        with self.file.changing() as doc:
            doc.setdefault("version", 1)
            tokens = doc.setdefault("tokens", {})
            for token_id in remove:
                tokens.pop(token_id, None)
            for t in upsert:
                tokens[t.token_id] = t.to_json()
            self._load(doc)

    # -- the four requests ------------------------------------------------------------------

    def create(self, owner: str, requester: str, renewers: tuple[str, ...], max_lifetime_ms: int,
               now_ms: int) -> Token:
        life = min(self.max_lifetime_ms, max_lifetime_ms) if max_lifetime_ms > 0 else self.max_lifetime_ms
        max_ms = _sum(now_ms, life)
        token_id = self._new_id()
        token = Token(token_id, owner, requester, renewers, now_ms, min(max_ms, _sum(now_ms, self.expiry_time_ms)),
                      max_ms, token_hmac(self.secret_key or "", token_id))
        self._change(upsert=[token])
        return token

    def _new_id(self) -> str:
        """Kafka's token id: a random (version 4) UUID in URL-safe base64 without padding (its
        Uuid.toString), never the zero one, never starting with '-'."""
        while True:
            text = random_uuid_text(self.random_bytes)
            if text not in self.tokens:
                return text

    def _by(self, hmac: bytes) -> Token:
        token = self.tokens.get(self._by_hmac.get(bytes(hmac), ""))
        if token is None:
            raise TokenError(ErrorCode.DELEGATION_TOKEN_NOT_FOUND)
        return token

    def renew(self, hmac: bytes, principal: str, renew_period_ms: int, now_ms: int) -> int:
        """The token's new expiry timestamp."""
        token = self._by(hmac)
        if token.expired(now_ms):
            raise TokenError(ErrorCode.DELEGATION_TOKEN_EXPIRED)
        if not token.may_renew(principal):
            raise TokenError(ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH)
        period = min(self.expiry_time_ms, renew_period_ms) if renew_period_ms > 0 else self.expiry_time_ms
        expiry = min(token.max_ms, _sum(now_ms, period))
        self._change(upsert=[replace(token, expiry_ms=expiry)])
        return expiry

    def expire(self, hmac: bytes, principal: str, expiry_period_ms: int, now_ms: int) -> int:
        """The token's new expiry timestamp (now, for a negative period: the token is gone)."""
        token = self._by(hmac)
        if not token.may_renew(principal):
            raise TokenError(ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH)
        if expiry_period_ms < 0:
            self._change(remove=[token.token_id])
            return now_ms
        if token.expired(now_ms):
            raise TokenError(ErrorCode.DELEGATION_TOKEN_EXPIRED)
        expiry = min(token.max_ms, _sum(now_ms, expiry_period_ms))
        self._change(upsert=[replace(token, expiry_ms=expiry)])
        return expiry

    def sweep(self, now_ms: int) -> list[Token]:
        """Remove the expired tokens (Kafka's periodic sweep); the ones removed."""
        gone = [t for t in self.tokens.values() if t.expired(now_ms)]
        if gone:
            self._change(remove=[t.token_id for t in gone])
        return gone

    # -- SASL/SCRAM with tokenauth=true -------------------------------------------------------

    def scram(self, mechanism: ScramMechanism, token_id: str) -> tuple[ScramCredential, str, int] | None:
        """(the token's SCRAM credential, its owner, its expiry) or None for no such token."""
        token = self.tokens.get(token_id)
        if token is None:
            return None
        cred = self._scram.get((token_id, mechanism))
        if cred is None:
            password = base64.b64encode(token.hmac).decode()
            cred = make_credential(mechanism, password, self.random_bytes(32), MIN_ITERATIONS)
            self._scram[(token_id, mechanism)] = cred
        return cred, token.owner, token.expiry_ms
