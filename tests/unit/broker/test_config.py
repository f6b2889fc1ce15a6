"""Broker configuration: TOML file plus flags, with clear errors."""

from __future__ import annotations

import pytest

from kgroup.broker.config import ConfigError, load_config


def test_toml_file_flags_and_per_group_overrides(tmp_path):
    path = tmp_path / "kgroup.toml"
    path.write_text(
        'listen = "127.0.0.1:9999"\nfsync = "never"\n'
        "[group]\ninitial_rebalance_delay_ms = 0\nconsumer_assignors = [\"range\", \"uniform\"]\n"
        "[group.overrides.fast]\nconsumer_session_timeout_ms = 50000\nconsumer_heartbeat_interval_ms = 10000\n"
    )
    cfg = load_config(str(path), listen="127.0.0.1:1234")
    assert (cfg.listen_host, cfg.listen_port) == ("127.0.0.1", 1234)      # the flag wins
    assert cfg.fsync == "never" and cfg.group.initial_rebalance_delay_ms == 0
    assert cfg.group.consumer_assignors == ("range", "uniform")
    assert cfg.group.consumer_session_timeout("fast") == 50_000
    assert cfg.group.consumer_heartbeat_interval("other") == 5_000


@pytest.mark.parametrize("text, message", [
    ("nonsense = 1\n", "unknown setting 'nonsense'"),
    ("[group]\nbogus = 1\n", "unknown [group] setting 'bogus'"),
    ("listen = \"nowhere\"\n", "HOST:PORT"),
    ("[group.overrides.g]\nconsumer_session_timeout_ms = 1\n", "needs consumer_session_timeout_ms"),
    ("[group.overrides.g]\nconsumer_session_timeout_ms = 1000\nconsumer_heartbeat_interval_ms = 500\n",
     "outside the broker's bounds"),
    ("this is not toml", "not valid TOML"),
])
def test_mistakes_get_a_clear_message(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_config(str(path))


def test_missing_file_says_so(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(str(tmp_path / "nope.toml"))
