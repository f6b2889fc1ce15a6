"""Client security settings: TLS and SASL (PLAIN, SCRAM-SHA-256/512), by Kafka's names.

How this works: ``ClientSecurity.from_settings`` reads the properties librdkafka and Kafka's
tools use — ``security.protocol`` (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL),
``sasl.mechanism`` (or librdkafka's ``sasl.mechanisms``), ``sasl.username``,
``sasl.password`` (or Java's ``sasl.jaas.config`` with ``username="…" password="…"``),
``ssl.ca.location``, ``ssl.certificate.location``, ``ssl.key.location``, ``ssl.key.password``
and ``ssl.endpoint.identification.algorithm`` (``https``, the default: check the broker's
host name; ``none``: do not). A ``Connection`` opened with it wraps its socket in TLS, and
after ApiVersions runs SaslHandshake and SaslAuthenticate (``authenticate``). When the
broker gives the session a lifetime (KIP-368) the connection re-authenticates before it
ends. A wrong password is ``AuthenticationError`` (never retried); the password never
appears in a message or ``repr``.
"""

from __future__ import annotations

import re
import secrets
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kgroup.wire.scram import MECHANISMS, ScramClient, ScramError
from kgroup.wire.api_keys import ApiKey

from .errors import AuthenticationError

if TYPE_CHECKING:
    from .connection import Connection

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", *MECHANISMS)

# The settings every client takes (consumer, producer, admin, CLI --command-config).
SECURITY_DEFAULTS: dict[str, Any] = {
    "security.protocol": "PLAINTEXT",
    "sasl.mechanism": None,
    "sasl.mechanisms": None,
    "sasl.username": None,
    "sasl.password": None,
    "sasl.jaas.config": None,
    "ssl.ca.location": None,
    "ssl.certificate.location": None,
    "ssl.key.location": None,
    "ssl.key.password": None,
    "ssl.endpoint.identification.algorithm": "https",
}

_JAAS = re.compile(r'(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')


class SecurityConfigError(ValueError):
    """A security setting is wrong or missing; the message names it."""


@dataclass(frozen=True)
class ClientSecurity:
    """How to reach a secured listener (see the module comment)."""

    protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_location: str | None = None
    certificate_location: str | None = None
    key_location: str | None = None
    key_password: str | None = field(default=None, repr=False)
    check_hostname: bool = True

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> ClientSecurity | None:
        """The security of these settings; None for plain PLAINTEXT (nothing to do)."""
        protocol = str(settings.get("security.protocol") or "PLAINTEXT").upper()
        if protocol not in PROTOCOLS:
            raise SecurityConfigError(f"security.protocol must be one of {', '.join(PROTOCOLS)}, not {protocol!r}")
        if protocol == "PLAINTEXT":
            return None
        mechanism = settings.get("sasl.mechanism") or settings.get("sasl.mechanisms")
        username, password = settings.get("sasl.username"), settings.get("sasl.password")
        jaas = settings.get("sasl.jaas.config")
        if jaas and (username is None or password is None):
            found = {k: v.replace('\\"', '"') for k, v in _JAAS.findall(str(jaas))}
            username = username if username is not None else found.get("username")
            password = password if password is not None else found.get("password")
        if protocol.startswith("SASL_"):
            mechanism = str(mechanism or "").upper()
            if mechanism not in SASL_MECHANISMS:
                raise SecurityConfigError(f"sasl.mechanism must be one of {', '.join(SASL_MECHANISMS)} with "
                                          f"security.protocol={protocol}" + (f", not {mechanism!r}" if mechanism else ""))
            if not username or password is None:
                raise SecurityConfigError(f"security.protocol={protocol} needs sasl.username and sasl.password")
        check = str(settings.get("ssl.endpoint.identification.algorithm") or "https").lower()
        return cls(protocol, mechanism or None, username, password,
                   settings.get("ssl.ca.location"), settings.get("ssl.certificate.location"),
                   settings.get("ssl.key.location"), settings.get("ssl.key.password"), check != "none")

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context for SSL and SASL_SSL (None otherwise); SecurityConfigError for a
        file that cannot be read."""
        if not self.tls:
            return None
        try:
            ctx = ssl.create_default_context(cafile=self.ca_location)
            ctx.minimum_version = ssl.TLSVersion.TLSv1_2
            ctx.check_hostname = self.check_hostname
            if self.certificate_location:
                ctx.load_cert_chain(self.certificate_location, self.key_location, self.key_password)
        except (OSError, ssl.SSLError) as exc:
            raise SecurityConfigError(f"cannot load the TLS files (ssl.ca.location, ssl.certificate.location, "
                                      f"ssl.key.location): {exc}") from None
        return ctx

    async def authenticate(self, conn: Connection) -> int:
        """SaslHandshake and SaslAuthenticate on ``conn``; the session lifetime in ms (0:
        none). AuthenticationError when the broker refuses."""
        assert self.mechanism is not None and self.username is not None and self.password is not None
        where = conn.address
        hs = await conn.request(ApiKey.SASL_HANDSHAKE, {"mechanism": self.mechanism})
        if int(hs.error_code):
            raise AuthenticationError(
                f"broker {where} does not accept SASL mechanism {self.mechanism} "
                f"(it offers {', '.join(hs.mechanisms) or 'none'})", "set sasl.mechanism to one it offers")

        async def step(token: bytes) -> Any:
            resp = await conn.request(ApiKey.SASL_AUTHENTICATE, {"auth_bytes": token})
            if int(resp.error_code):
                raise AuthenticationError(
                    f"authentication as {self.username} with {self.mechanism} at {where} failed: "
                    f"{resp.error_message or int(resp.error_code)}")
            return resp

        if self.mechanism == "PLAIN":
            last = await step(f"\0{self.username}\0{self.password}".encode())
        else:
            scram = ScramClient(MECHANISMS[self.mechanism].hash_name, self.username, self.password,
                                secrets.token_urlsafe(24))
            try:
                first = await step(scram.first())
                last = await step(scram.final(bytes(first.auth_bytes)))
                scram.verify(bytes(last.auth_bytes))
            except ScramError as exc:
                raise AuthenticationError(f"SCRAM with {where} failed: {exc}",
                                          "the broker is not the one holding our credentials") from None
        lifetime = getattr(last, "session_lifetime", None)
        return int(lifetime.total_seconds() * 1000) if lifetime is not None else 0
