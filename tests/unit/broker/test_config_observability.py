"""The `[log]` table and `http_listen`: file, flags over file, and mistakes named."""

from __future__ import annotations

import pytest

from kgroup.broker.config import ConfigError, load_config


def test_log_table_http_listen_and_flags_over_the_file(tmp_path):
    path = tmp_path / "b.toml"
    path.write_text('http_listen = "127.0.0.1:8080"\n[log]\nformat = "json"\nrebalance_warn_count = 7\n'
                    "rebalance_warn_window_ms = 60000\nfenced_warn_count = 2\n")
    config = load_config(str(path))
    assert (config.http_listen_host, config.http_listen_port) == ("127.0.0.1", 8080)
    assert (config.log.format, config.log.level, config.log.rebalance_warn_count,
            config.log.rebalance_warn_window_ms, config.log.fenced_warn_count) == ("json", "INFO", 7, 60000, 2)
    config = load_config(str(path), http_listen="0.0.0.0:9000", log_format="text", log_level="DEBUG")
    assert (config.http_listen_host, config.http_listen_port, config.log.format, config.log.level) == \
        ("0.0.0.0", 9000, "text", "DEBUG")
    default = load_config(None)
    assert default.http_listen_host is None and default.log.rebalance_warn_count == 5
    assert default.log.rebalance_warn_window_ms == 300_000


@pytest.mark.parametrize("text, message", [
    ('[log]\nformat = "xml"\n', '[log] format = "xml": must be one of text, json'),
    ("[log]\nrebalance_warn_count = 0\n", "[log] rebalance_warn_count = 0: must be >= 1"),
    ('[log]\nrebalance_warn_count = "5"\n', '[log] rebalance_warn_count = "5": must be a whole number'),
    ("[log]\nverbose = true\n", "unknown setting 'verbose' in [log]; known: fenced_warn_count, format"),
    ('http_listen = "nowhere"\n', 'http_listen = "nowhere": must look like HOST:PORT'),
    ("log = 3\n", "[log] must be a table"),
])
def test_mistakes_are_named(tmp_path, text, message):
    path = tmp_path / "b.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_config(str(path))
