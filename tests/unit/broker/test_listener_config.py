"""[[listeners]] and [auth] in the broker's TOML file: what they open, and clear mistakes."""

from __future__ import annotations

import pytest

from kgroup.broker.config import ConfigError, load_config

from .listener_tables import MTLS_LISTENER

SECURE = '''
[[listeners]]
name = "SECURE"
address = "127.0.0.1:9093"
advertised = "kafka.example.com:443"
protocol = "SASL_SSL"
sasl_mechanisms = ["SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN"]
ssl_certfile = "server.pem"
ssl_keyfile = "server.key"
''' + MTLS_LISTENER + '''
[auth]
authorizer = true
super_users = ["User:admin", "User:CN=ops"]
connections_max_reauth_ms = 60000
'''


def _load(tmp_path, text, **flags):
    path = tmp_path / "kgroup.toml"
    path.write_text(text)
    return load_config(str(path), **flags)


def test_listeners_and_auth_from_the_file(tmp_path):
    cfg = _load(tmp_path, SECURE)
    secure, mtls = cfg.listeners_to_open
    assert (secure.name, secure.host, secure.port, secure.protocol) == ("SECURE", "127.0.0.1", 9093, "SASL_SSL")
    assert secure.sasl and secure.ssl and secure.advertised == ("kafka.example.com", 443)
    assert secure.sasl_mechanisms == ("SCRAM-SHA-512", "SCRAM-SHA-256", "PLAIN")
    assert mtls.ssl_client_auth == "required" and not mtls.sasl and mtls.advertised == ("127.0.0.1", 9094)
    # Only [[listeners]]: no PLAINTEXT listener, and handlers name the first one.
    assert cfg.advertised == ("kafka.example.com", 443)
    assert cfg.auth.authorizer and cfg.auth.super_users == ("User:admin", "User:CN=ops")
    assert not cfg.auth.allow_everyone_if_no_acl and cfg.auth.connections_max_reauth_ms == 60000


def test_listen_alone_keeps_one_plaintext_listener_and_adds_to_listeners(tmp_path):
    (plain,) = load_config(None, listen="127.0.0.1:9999").listeners_to_open
    assert (plain.name, plain.protocol, plain.port) == ("PLAINTEXT", "PLAINTEXT", 9999)
    (default,) = load_config(None).listeners_to_open
    assert (default.host, default.port) == ("127.0.0.1", 9092)
    cfg = _load(tmp_path, SECURE, listen="127.0.0.1:9999")
    assert [lst.name for lst in cfg.listeners_to_open] == ["PLAINTEXT", "SECURE", "MTLS"]
    assert cfg.advertised == ("127.0.0.1", 9999)


def test_sasl_listener_defaults_to_scram(tmp_path):
    cfg = _load(tmp_path, '[[listeners]]\nname = "S"\naddress = "127.0.0.1:9093"\nprotocol = "SASL_PLAINTEXT"\n')
    assert cfg.listeners[0].sasl_mechanisms == ("SCRAM-SHA-512", "SCRAM-SHA-256")


def _listener(**kw) -> str:
    fields = {"name": '"L"', "address": '"127.0.0.1:9093"', **kw}
    return "[[listeners]]\n" + "".join(f"{k} = {v}\n" for k, v in fields.items())


@pytest.mark.parametrize("text, message", [
    (_listener(protocol='"TLS"'), "\\[\\[listeners\\]\\] 'L' protocol = \"TLS\": must be one of"),
    (_listener(protocol='"SASL_PLAINTEXT"', sasl_mechanisms='["GSSAPI"]'), "sasl_mechanisms = \\[\"GSSAPI\"\\]: 'GSSAPI' is not one of PLAIN"),
    (_listener(sasl_mechanisms='["PLAIN"]'), "sasl_mechanisms needs protocol SASL"),
    (_listener(protocol='"SSL"'), "needs ssl_certfile and ssl_keyfile"),
    (_listener(ssl_certfile='"a.pem"'), "ssl_\\* settings need protocol SSL"),
    (_listener(protocol='"SSL"', ssl_certfile='"a"', ssl_keyfile='"b"', ssl_client_auth='"required"'), "needs ssl_cafile"),
    (_listener(protocol='"SSL"', ssl_certfile='"a"', ssl_keyfile='"b"', ssl_client_auth='"always"'), "ssl_client_auth = \"always\": must be one of"),
    (_listener(name='"bad name"'), "letters, digits"),
    (_listener(address='"nowhere"'), "HOST:PORT"),
    (_listener(bogus="1"), "unknown setting 'bogus'"),
    ('[[listeners]]\naddress = "127.0.0.1:1"\n', "needs a name"),
    ('[[listeners]]\nname = "X"\n', "needs an address"),
    (_listener() + _listener(address='"127.0.0.1:9094"'), "two listeners share L"),
    (_listener() + _listener(name='"M"'), "two listeners share"),
    ('[auth]\nsuper_users = ["admin"]\n', "must look like User:NAME"),
    ('[auth]\nauthorizer = "yes"\n', "authorizer = \"yes\": must be true or false"),
    ('[auth]\nbogus = 1\n', "unknown setting 'bogus' in \\[auth\\]; known: allow_everyone"),
    ('[auth]\nconnections_max_reauth_ms = -1\n', "connections_max_reauth_ms"),
])
def test_listener_and_auth_mistakes_are_named(tmp_path, text, message):
    with pytest.raises(ConfigError, match=message):
        _load(tmp_path, text)


def test_a_listener_on_the_plaintext_port_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="two listeners share"):
        _load(tmp_path, _listener(), listen="127.0.0.1:9093")
