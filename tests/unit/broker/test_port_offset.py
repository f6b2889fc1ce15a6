"""`kgroup serve --port-offset N` (node N of `kgroup cluster`): N added to every port the
config file names, not to flags, and a port pushed past 65535 refused."""

from __future__ import annotations

import pytest

from kgroup.broker.config import ConfigError, load_config

FILE = """
http_listen = "127.0.0.1:8080"
[[listeners]]
name = "SECURE"
address = "0.0.0.0:9192"
advertised = "broker.example:19192"
protocol = "SASL_PLAINTEXT"
"""


def test_port_offset_shifts_every_listener_of_the_file(tmp_path) -> None:
    path = tmp_path / "k.toml"
    path.write_text(FILE)
    config = load_config(str(path), port_offset=2, control_listen="127.0.0.1:7000")
    (secure,) = config.listeners
    assert (secure.port, secure.advertised) == (9194, ("broker.example", 19194))
    assert config.http_listen_port == 8082
    assert config.control_listen == ("127.0.0.1", 7000)      # a flag is taken as given
    assert load_config(str(path), port_offset=0).listeners[0].port == 9192


def test_port_offset_past_the_last_port_is_refused(tmp_path) -> None:
    path = tmp_path / "k.toml"
    path.write_text(FILE.replace("0.0.0.0:9192", "0.0.0.0:65535"))
    with pytest.raises(ConfigError, match=r"\[\[listeners\]\] 'SECURE' address port 65535 \+ --port-offset 1"):
        load_config(str(path), port_offset=1)
