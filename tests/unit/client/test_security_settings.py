"""Client security settings by Kafka's names, and the CLI's --command-config file."""

from __future__ import annotations

import pytest

from kgroup.cli.errors import CliError
from kgroup.cli.properties import parse_properties, read_command_config
from kgroup.client.security import ClientSecurity, SecurityConfigError
from kgroup.client.settings import CONSUMER_DEFAULTS, PRODUCER_DEFAULTS, resolve


def test_plaintext_needs_nothing_and_sasl_needs_a_mechanism_and_credentials():
    assert ClientSecurity.from_settings({}) is None
    assert ClientSecurity.from_settings({"security.protocol": "plaintext"}) is None
    sec = ClientSecurity.from_settings({"security.protocol": "SASL_SSL", "sasl.mechanisms": "scram-sha-256",
                                        "sasl.username": "u", "sasl.password": "Pa55-word", "ssl.ca.location": "/ca.pem"})
    assert (sec.mechanism, sec.tls, sec.sasl, sec.check_hostname) == ("SCRAM-SHA-256", True, True, True)
    assert "Pa55-word" not in repr(sec)
    assert not ClientSecurity.from_settings({"security.protocol": "SSL",
                                             "ssl.endpoint.identification.algorithm": "none"}).check_hostname
    for settings, message in (
        ({"security.protocol": "TLS"}, "security.protocol must be one of"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.username": "u", "sasl.password": "p"}, "sasl.mechanism"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI", "sasl.username": "u",
          "sasl.password": "p"}, "not 'GSSAPI'"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "needs sasl.username"),
    ):
        with pytest.raises(SecurityConfigError, match=message):
            ClientSecurity.from_settings(settings)


def test_java_jaas_config_gives_the_user_and_password():
    sec = ClientSecurity.from_settings({
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                            'username="admin" password="p\\"w";'})
    assert (sec.username, sec.password) == ("admin", 'p"w')


def test_ssl_files_that_cannot_be_read_are_named(tmp_path):
    sec = ClientSecurity.from_settings({"security.protocol": "SSL", "ssl.ca.location": str(tmp_path / "none.pem")})
    with pytest.raises(SecurityConfigError, match="ssl.ca.location"):
        sec.ssl_context()
    assert ClientSecurity.from_settings({"security.protocol": "SSL"}).ssl_context() is not None


def test_consumer_and_producer_take_the_security_settings():
    for defaults in (CONSUMER_DEFAULTS, PRODUCER_DEFAULTS):
        s = resolve(defaults, {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}, {"sasl_username": "u"})
        assert (s["security.protocol"], s["sasl.mechanism"], s["sasl.username"]) == ("SASL_SSL", "PLAIN", "u")


def test_java_properties_format():
    text = ("# comment\n! other comment\n  security.protocol = SASL_SSL\nsasl.mechanism:SCRAM-SHA-512\n"
            "sasl.username alice\nsasl.password=p\\=w\\\\d\\u00e9\\\n  more\nempty=\n")
    assert parse_properties(text) == {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                                      "sasl.username": "alice", "sasl.password": "p=w\\démore", "empty": ""}


def test_command_config_mistakes_are_one_clear_line(tmp_path):
    with pytest.raises(CliError, match="does not exist"):
        read_command_config(str(tmp_path / "nope.properties"))
    path = tmp_path / "c.properties"
    path.write_text("ssl.truststore.location=/x.jks\n")
    with pytest.raises(CliError, match="ssl.truststore.location") as info:
        read_command_config(str(path))
    assert "ssl.ca.location" in info.value.hint
    path.write_text("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n")
    with pytest.raises(CliError, match="needs sasl.username"):
        read_command_config(str(path))
    path.write_text("security.protocol=SSL\nssl.ca.location=/ca.pem\n")
    assert read_command_config(str(path)) == {"security.protocol": "SSL", "ssl.ca.location": "/ca.pem"}
