"""Name the real cause when the address given is not the Kafka listener the command expects.

A command's first connection that fails (closed, refused after a handshake, timed out) or
that waits longer than ``WATCH_S`` for ApiVersions, which a Kafka broker answers at once,
has its address probed (kgroup.client.probe): an HTTP server (kgroup's web console names
the Kafka listeners), a TLS listener reached in plaintext, a SASL listener reached without
credentials, or a plaintext listener reached with TLS each get one line saying so and what
to give instead. Where the probe agrees with the command's security settings, the original
error stands.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from kgroup.client.errors import KafkaConnectionError, RequestTimeout
from kgroup.client.probe import Listener, probe

from .errors import CliError

# A Kafka broker answers ApiVersions in milliseconds; past this, ask what is listening.
WATCH_S = 0.5
T = TypeVar("T")

_TLS = ("SSL", "SASL_SSL")


def _first_address(bootstrap: str) -> tuple[str, int]:
    host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
    return host.strip("[]"), int(port)


def _sasl_settings(mechanisms: tuple[str, ...]) -> str:
    mechanism = mechanisms[0] if len(mechanisms) == 1 else f"one of {', '.join(mechanisms)}"
    return f"sasl.mechanism ({mechanism}), sasl.username and sasl.password"


def explain(verdict: Listener | None, address: str, protocol: str) -> CliError | None:
    """The error naming the real cause, or None where the verdict fits ``protocol``."""
    protocol = protocol.upper()
    if verdict is None:
        return None
    if verdict.kind == "http":
        if verdict.console_listeners:
            kafka = verdict.console_listeners[0].split(" ")[0]
            return CliError(f"{address} answered HTTP — that is kgroup's web console; the Kafka listener is "
                            f"{', '.join(verdict.console_listeners)}", f"use --bootstrap-server {kafka}")
        return CliError(f"{address} answered HTTP, not Kafka",
                        "point --bootstrap-server at the broker's Kafka listener (kgroup serve --listen; "
                        "127.0.0.1:9092 by default)")
    if verdict.kind == "tls":
        if verdict.sasl:
            if protocol == "SASL_SSL":
                return None
            return CliError(f"{address} speaks TLS and wants SASL authentication ({', '.join(verdict.sasl)}) — the "
                            "broker wants TLS/SASL",
                            "give --command-config with security.protocol=SASL_SSL, "
                            f"{_sasl_settings(verdict.sasl)}, and ssl.ca.location")
        if protocol == "SASL_SSL" and verdict.sasl == ():
            return CliError(f"{address} is a TLS listener without SASL", "set security.protocol=SSL in --command-config")
        if protocol in _TLS:
            return None
        if verdict.kafka_inside:
            return CliError(f"{address} speaks TLS, not plaintext Kafka — the broker wants TLS",
                            "give --command-config with security.protocol=SSL and ssl.ca.location")
        return CliError(f"{address} speaks TLS and closed the connection after the handshake — the broker wants "
                        "TLS, probably with a client certificate",
                        "give --command-config with security.protocol=SSL, ssl.ca.location, "
                        "ssl.certificate.location and ssl.key.location")
    # Kafka in plaintext.
    sasl = verdict.sasl or ()
    if protocol in _TLS:
        return CliError(f"{address} speaks Kafka in plaintext, not TLS",
                        f"set security.protocol={'SASL_PLAINTEXT' if sasl else 'PLAINTEXT'} in --command-config")
    if sasl and protocol != "SASL_PLAINTEXT":
        return CliError(f"{address} is a SASL listener ({', '.join(sasl)}) and the command gave no credentials, "
                        "so the broker closed the connection",
                        f"give --command-config with security.protocol=SASL_PLAINTEXT, {_sasl_settings(sasl)}")
    if verdict.sasl == () and protocol == "SASL_PLAINTEXT":
        return CliError(f"{address} is a plaintext listener without SASL",
                        "set security.protocol=PLAINTEXT in --command-config")
    return None


async def explained(run: Callable[[], Awaitable[T]], connect: Callable[[], Awaitable[Any]],
                    bootstrap: str, protocol: str) -> T:
    """``connect()`` then ``run()``; a connection error or a slow first answer is explained
    by probing the (first) bootstrap address."""
    host, port = _first_address(bootstrap)
    address = f"{host}:{port}"

    async def diagnose() -> CliError | None:
        try:
            return explain(await probe(host, port), address, protocol)
        except Exception:  # noqa: BLE001 - a probe that fails tells nothing
            return None

    try:
        first = asyncio.ensure_future(connect())
        try:
            done, _ = await asyncio.wait({first}, timeout=WATCH_S)
            # (With several bootstrap addresses the client may yet reach another one.)
            if not done and "," not in bootstrap.strip(","):
                problem = await diagnose()
                if problem is not None and not first.done():
                    raise problem
            await first
        finally:
            first.cancel()
        return await run()
    except (KafkaConnectionError, RequestTimeout):
        problem = await diagnose()
        if problem is not None:
            raise problem from None
        raise
