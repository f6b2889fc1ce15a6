"""A listener's TLS certificate changed at run time (Kafka's per-broker dynamic
`listener.name.<listener>.ssl.keystore.location`): new connections get the new certificate,
without a restart and after one; a keystore that cannot be loaded is refused."""

from __future__ import annotations

import asyncio
import socket
import ssl

import pytest

from kgroup.client.admin import BROKER_RESOURCE, CONFIG_SET, AdminClient
from kgroup.client.errors import BrokerError
from tests.integration.security_setup import ADMIN, ADMIN_PASSWORD, make_certs, our_settings, secure_broker

pytestmark = pytest.mark.integration


def _handshake(port: int, cafile) -> bool:
    """Whether a TLS client trusting only `cafile` accepts the listener's certificate."""
    context = ssl.create_default_context(cafile=str(cafile))
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname="127.0.0.1"):
                return True
    except ssl.SSLCertVerificationError:
        return False


def _alter(sb, changes) -> None:
    async def go() -> None:
        async with AdminClient(sb.address(sb.sasl_port), config=our_settings(
                "SASL_PLAINTEXT", "SCRAM-SHA-512", ADMIN, ADMIN_PASSWORD)) as admin:
            await admin.alter_configs(BROKER_RESOURCE, "1", changes)

    asyncio.run(go())


def test_dynamic_listener_keystore_serves_new_connections_with_the_new_certificate(tmp_path):
    sb = secure_broker(tmp_path / "broker", ())
    renewed = make_certs(tmp_path / "renewed", ())
    keystore = tmp_path / "renewed" / "keystore.pem"          # a PEM keystore: chain and key
    keystore.write_bytes(renewed.server_cert.read_bytes() + renewed.server_key.read_bytes())
    broken = tmp_path / "broken.pem"
    broken.write_text("not a certificate\n")
    sb.proc.start()
    try:
        assert _handshake(sb.sasl_ssl_port, sb.certs.ca) and not _handshake(sb.sasl_ssl_port, renewed.ca)
        with pytest.raises(BrokerError, match="Validation of dynamic config update of SSLFactory failed"):
            _alter(sb, [("listener.name.secure.ssl.keystore.location", CONFIG_SET, str(broken))])
        _alter(sb, [("listener.name.secure.ssl.keystore.location", CONFIG_SET, str(keystore))])
        assert _handshake(sb.sasl_ssl_port, renewed.ca) and not _handshake(sb.sasl_ssl_port, sb.certs.ca)
        # The other TLS listener keeps its own certificate.
        assert not _handshake(sb.ssl_port, renewed.ca)
        sb.proc.stop()
        sb.proc.start()
        assert _handshake(sb.sasl_ssl_port, renewed.ca)
    finally:
        sb.proc.finish()
