"""Listeners: TLS contexts, principals from client certificates, advertised addresses.

Every listener is its own asyncio server. SSL and SASL_SSL listeners wrap the socket in TLS
with the stdlib ``ssl`` module (TLS 1.2 or newer); ``ssl_client_auth`` asks for
("requested") or insists on ("required") a client certificate signed by ``ssl_cafile``. On an
SSL listener the principal is the certificate's subject as Kafka's default principal builder
writes it — the RFC 2253 distinguished name, most specific part first, e.g.
``User:CN=alice,OU=eng,O=acme`` — or ``User:ANONYMOUS`` without a certificate. On SASL
listeners the principal is the authenticated user, and on PLAINTEXT ``User:ANONYMOUS``.

Handlers name the first listener's advertised address (Metadata brokers, FindCoordinator);
a connection on another listener is told its own listener's address instead
(the `on_listener` functions of the API tables), as Kafka answers with the endpoint of the listener a client came in on.
In a cluster every node is named by its address on that listener (as each node published it,
storage/node_listeners.py), and a node without a listener of that name is left out.
"""

from __future__ import annotations

import errno
import socket
import ssl
from typing import Any

from kgroup.broker.config import ConfigError, ListenerConfig
from kgroup.error_codes import ErrorCode
from kgroup.wire.kio_build import replace_fields

ANONYMOUS = "User:ANONYMOUS"
Address = tuple[str, int]
_VERIFY = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}
# X.500 attribute names as RFC 2253 (and Java's X500Principal) abbreviate them.
_SHORT = {"commonName": "CN", "countryName": "C", "localityName": "L", "stateOrProvinceName": "ST",
          "organizationName": "O", "organizationalUnitName": "OU", "streetAddress": "STREET",
          "domainComponent": "DC", "userId": "UID"}


def server_ssl_context(listener: ListenerConfig) -> ssl.SSLContext:
    """The TLS context of an SSL or SASL_SSL listener; ConfigError names a bad file."""
    where = f"[[listeners]] {listener.name!r}"
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(listener.ssl_certfile, listener.ssl_keyfile, listener.ssl_keyfile_password)
    except FileNotFoundError as exc:
        raise ConfigError(f"{where}: cannot read {exc.filename}: no such file") from None
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(f"{where}: cannot load ssl_certfile {listener.ssl_certfile} with ssl_keyfile "
                          f"{listener.ssl_keyfile}: {exc}") from None
    if listener.ssl_cafile:
        try:
            ctx.load_verify_locations(cafile=listener.ssl_cafile)
        except (ssl.SSLError, OSError) as exc:
            raise ConfigError(f"{where}: cannot load ssl_cafile {listener.ssl_cafile}: {exc}") from None
    ctx.verify_mode = _VERIFY[listener.ssl_client_auth]
    return ctx


def _escape(value: str) -> str:
    out = []
    for i, ch in enumerate(value):
        if ch in ',+"\\<>;' or (i == 0 and ch in "# ") or (i == len(value) - 1 and ch == " "):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def distinguished_name(cert: dict[str, Any]) -> str:
    """The certificate's subject in RFC 2253 form (``CN=alice,OU=eng,O=acme``)."""
    rdns = []
    for rdn in reversed(cert.get("subject", ())):
        rdns.append("+".join(f"{_SHORT.get(k, k)}={_escape(v)}" for k, v in rdn))
    return ",".join(rdns)


def tls_principal(transport: Any) -> str:
    """The principal of a TLS connection: its client certificate's subject, if any."""
    cert = transport.get_extra_info("peercert")
    if cert and cert.get("subject"):
        return "User:" + distinguished_name(cert)
    return ANONYMOUS


def brokers_on_listener(response: Any, addresses: dict[int, Address], version: int) -> Any:
    """A Metadata answer naming each node at its address on the request's listener
    (`addresses`); a node without that listener is left out, and a partition it leads
    answers LISTENER_NOT_FOUND (v6+; LEADER_NOT_AVAILABLE before) with no leader, as Kafka's
    metadata cache answers."""
    brokers = tuple(replace_fields(b, host=addresses[b.node_id][0], port=addresses[b.node_id][1])
                    for b in response.brokers if b.node_id in addresses)
    if len(brokers) == len(response.brokers):
        return replace_fields(response, brokers=brokers)
    missing = int(ErrorCode.LISTENER_NOT_FOUND if version >= 6 else ErrorCode.LEADER_NOT_AVAILABLE)

    def partition(p: Any) -> Any:
        if p.error_code or p.leader_id < 0 or p.leader_id in addresses:
            return p
        return replace_fields(p, error_code=missing, leader_id=-1)

    topics = tuple(replace_fields(t, partitions=tuple(partition(p) for p in t.partitions))
                   for t in response.topics)
    return replace_fields(response, brokers=brokers, topics=topics)


def cluster_on_listener(response: Any, addresses: dict[int, Address], version: int) -> Any:
    """A DescribeCluster answer naming each node at its address on the request's listener."""
    return replace_fields(response, brokers=tuple(
        replace_fields(b, host=addresses[b.broker_id][0], port=addresses[b.broker_id][1])
        for b in response.brokers if b.broker_id in addresses))


def endpoints_on_listener(response: Any, addresses: dict[int, Address], version: int) -> Any:
    """A ShareFetch/ShareAcknowledge answer whose current leaders' `node_endpoints`
    (KIP-951) are named at their addresses on the request's listener."""
    if not response.node_endpoints:
        return response
    return replace_fields(response, node_endpoints=tuple(
        replace_fields(e, host=addresses[e.node_id][0], port=addresses[e.node_id][1])
        for e in response.node_endpoints if e.node_id in addresses))


def _coordinator(entry: Any, addresses: dict[int, Address]) -> Any:
    if entry.error_code or entry.node_id < 0:
        return entry
    address = addresses.get(entry.node_id)
    if address is None:  # the coordinator has no such listener: Kafka's answer then
        return replace_fields(entry, error_code=int(ErrorCode.COORDINATOR_NOT_AVAILABLE), node_id=-1,
                              host="", port=-1)
    return replace_fields(entry, host=address[0], port=address[1])


def coordinator_on_listener(response: Any, addresses: dict[int, Address], version: int) -> Any:
    """A FindCoordinator answer naming the coordinator at its address on the request's
    listener (v4+: per key); COORDINATOR_NOT_AVAILABLE where it has no such listener."""
    if hasattr(response, "coordinators"):
        return replace_fields(response, coordinators=tuple(
            _coordinator(c, addresses) for c in response.coordinators))
    return _coordinator(response, addresses)


class ListenError(Exception):
    """A listener (Kafka, HTTP console, control API) could not be bound; the message says
    why and what to do."""


def listen_problem(host: str, port: int, exc: OSError) -> str:
    """One line saying why the broker cannot listen on host:port, and what to do."""
    where = f"cannot listen on {host}:{port}"
    if isinstance(exc, socket.gaierror):
        return f"{where}: {host!r} is not an address of this host (no such name) — use an IP address or a " \
               "name it resolves, e.g. --listen 127.0.0.1:9092 or 0.0.0.0:9092"
    if exc.errno == errno.EADDRNOTAVAIL:
        return f"{where}: this host has no address {host} — listen on one of its addresses (127.0.0.1, " \
               "or 0.0.0.0 for all) and give clients the outside address with --advertised"
    if exc.errno == errno.EADDRINUSE:
        return f"{where}: the port is in use — is another broker running there? Pick another --listen address"
    if exc.errno == errno.EACCES:
        return f"{where}: permission denied — ports below 1024 need privileges; use a port such as 9092"
    return f"{where}: {exc.strerror or exc} — pick another --listen address"
