"""The verdict of a probe, against the command's security.protocol, gives the line that names
the real cause (cli/diagnosis.py); a verdict that fits the settings leaves the error as it was."""

from __future__ import annotations

import pytest

from kgroup.cli.diagnosis import explain
from kgroup.client.probe import Listener

A = "127.0.0.1:9"
CASES = [
    (Listener("http", console_listeners=("127.0.0.1:9092 (PLAINTEXT)",)), "PLAINTEXT",
     "that is kgroup's web console; the Kafka listener is 127.0.0.1:9092 (PLAINTEXT)"),
    (Listener("http"), "SASL_SSL", "answered HTTP, not Kafka"),
    (Listener("tls", sasl=("PLAIN",), kafka_inside=True), "PLAINTEXT", "security.protocol=SASL_SSL"),
    (Listener("tls", sasl=("PLAIN",), kafka_inside=True), "SSL", "wants SASL authentication (PLAIN)"),
    (Listener("tls", sasl=(), kafka_inside=True), "PLAINTEXT", "security.protocol=SSL and ssl.ca.location"),
    (Listener("tls"), "PLAINTEXT", "probably with a client certificate"),
    (Listener("kafka", sasl=("SCRAM-SHA-512",)), "PLAINTEXT", "is a SASL listener (SCRAM-SHA-512)"),
    (Listener("kafka", sasl=()), "SSL", "security.protocol=PLAINTEXT"),
    (Listener("kafka", sasl=("PLAIN",)), "SASL_SSL", "security.protocol=SASL_PLAINTEXT"),
    (Listener("kafka", sasl=()), "SASL_PLAINTEXT", "a plaintext listener without SASL"),
    (Listener("tls", sasl=(), kafka_inside=True), "SASL_SSL", "a TLS listener without SASL"),
]


@pytest.mark.parametrize(("verdict", "protocol", "says"), CASES)
def test_each_mismatch_names_its_cause(verdict, protocol, says):
    problem = explain(verdict, A, protocol)
    assert problem is not None and says in f"{problem} — {problem.hint}"


@pytest.mark.parametrize(("verdict", "protocol"), [
    (None, "PLAINTEXT"),
    (Listener("kafka", sasl=()), "PLAINTEXT"),
    (Listener("kafka", sasl=("PLAIN",)), "SASL_PLAINTEXT"),
    (Listener("tls", sasl=(), kafka_inside=True), "SSL"),
    (Listener("tls"), "SSL"),
    (Listener("tls", sasl=("PLAIN",), kafka_inside=True), "SASL_SSL"),
])
def test_a_verdict_that_fits_the_settings_explains_nothing(verdict, protocol):
    assert explain(verdict, A, protocol) is None


def _run_explained(monkeypatch, verdict, connect, bootstrap="127.0.0.1:9"):
    import asyncio

    from kgroup.cli import diagnosis

    async def fake_probe(host, port, budget=1.0):
        return verdict

    monkeypatch.setattr(diagnosis, "probe", fake_probe)
    monkeypatch.setattr(diagnosis, "WATCH_S", 0.01)

    async def run():
        return "ran"

    return asyncio.run(diagnosis.explained(run, connect, bootstrap, "PLAINTEXT"))


def test_a_first_answer_that_does_not_come_is_explained_without_waiting_for_it(monkeypatch):
    import asyncio

    from kgroup.cli.errors import CliError

    async def never():
        await asyncio.Event().wait()

    with pytest.raises(CliError, match="answered HTTP, not Kafka"):
        _run_explained(monkeypatch, Listener("http"), never)


def test_a_connection_error_is_explained_or_left_as_it_was(monkeypatch):
    from kgroup.cli.errors import CliError
    from kgroup.client.errors import KafkaConnectionError

    async def closed():
        raise KafkaConnectionError("broker 127.0.0.1:9 closed the connection")

    with pytest.raises(CliError, match="is a SASL listener"):
        _run_explained(monkeypatch, Listener("kafka", sasl=("PLAIN",)), closed)
    with pytest.raises(KafkaConnectionError, match="closed the connection"):
        _run_explained(monkeypatch, Listener("kafka", sasl=()), closed)


def test_with_several_bootstrap_addresses_a_slow_one_is_waited_for(monkeypatch):
    import asyncio

    async def slow():
        await asyncio.sleep(0.05)

    assert _run_explained(monkeypatch, Listener("http"), slow, "127.0.0.1:9,127.0.0.1:10") == "ran"
