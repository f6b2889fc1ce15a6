"""`control_listen`: off by default, from the TOML file or the flag (which wins)."""

from __future__ import annotations

import pytest

from kgroup.broker.config import ConfigError, load_config


def test_the_control_api_is_off_unless_an_address_is_given(tmp_path):
    assert load_config().control_listen is None
    path = tmp_path / "k.toml"
    path.write_text('control_listen = "127.0.0.1:9093"\n')
    assert load_config(str(path)).control_listen == ("127.0.0.1", 9093)
    assert load_config(str(path), control_listen="0.0.0.0:19093").control_listen == ("0.0.0.0", 19093)


def test_a_bad_control_address_says_which_setting(tmp_path):
    with pytest.raises(ConfigError, match="--control-listen must look like HOST:PORT"):
        load_config(control_listen="nowhere")
    path = tmp_path / "k.toml"
    path.write_text('control_listen = "127.0.0.1:99999"\n')
    with pytest.raises(ConfigError, match='k.toml: control_listen = "127.0.0.1:99999": must look like HOST:PORT'):
        load_config(str(path))
