"""SASL/SCRAM over a raw connection: SaslHandshake v1, then SaslAuthenticate v2 twice."""

from __future__ import annotations

import secrets
from typing import Any

from kgroup.conformance.messages import request
from kgroup.conformance.raw import RawClient
from kgroup.wire.scram import ScramClient

USERS = {"admin": "admin-secret", "alice": "alice-secret"}
HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


async def scram_login(raw: RawClient, user: str, password: str, mechanism: str = "SCRAM-SHA-256",
                      t: Any = None, label: str = "", tokenauth: bool = False) -> int:
    """Authenticate `raw` as `user` (with `tokenauth`: a delegation token's id, its HMAC in
    base64 as the password); with a Target `t`, every answer goes into its
    transcript. Returns the error code of the last answer (0: authenticated)."""
    async def ask(what: str, req: Any) -> Any:
        if t is None:
            return await raw.call(req)
        return await t.ask(raw, f"{label}{what}", req)

    hs = await ask("handshake", request("SaslHandshake", 1, mechanism=mechanism))
    if hs is None or int(hs.error_code):
        return -1 if hs is None else int(hs.error_code)
    client = ScramClient(HASHES[mechanism], user, password, secrets.token_urlsafe(18), tokenauth=tokenauth)
    first = await ask("client-first", request("SaslAuthenticate", 2, auth_bytes=client.first()))
    if first is None or int(first.error_code):
        return -1 if first is None else int(first.error_code)
    final = await ask("client-final", request("SaslAuthenticate", 2, auth_bytes=client.final(bytes(first.auth_bytes))))
    if final is None:
        return -1
    return int(final.error_code)
