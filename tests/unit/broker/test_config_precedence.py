"""Config precedence of `kgroup serve` (and `kgroup cluster`): a value in the TOML file is
used unless its flag is given on the command line -- for every flag that has a file key.

Each key is checked through the real parser and the config `kgroup serve` builds from it
(`serve_config`): the file alone, the flag alone over the file, and neither (the default).
A flag whose argparse default is not None would be passed as an override every time and
hide the file's value: the walk over the parser's options catches a new one.
"""

from __future__ import annotations

import argparse

import pytest

from kgroup.broker.config import FLAG_KEYS, BrokerConfig
from kgroup.broker.server import serve_config
from kgroup.cli.cluster import _data_dir, _serve_command
from kgroup.cli.parser import build_parser


def _subparser(name: str) -> argparse.ArgumentParser:
    root = build_parser()
    action = next(a for a in root._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def config(tmp_path, toml: str, *flags: str) -> BrokerConfig:
    path = tmp_path / "kgroup.toml"
    path.write_text(toml)
    return serve_config(build_parser().parse_args(["serve", "--config", str(path), *flags]))


# flag (with its value) | the file's line | what the config holds | file's | flag's | default
CASES = [
    (("--listen", "127.0.0.1:2001"), 'listen = "127.0.0.1:1001"',
     lambda c: f"{c.listen_host}:{c.listen_port}", "127.0.0.1:1001", "127.0.0.1:2001", "127.0.0.1:9092"),
    (("--advertised", "adv2:2002"), 'advertised = "adv1:1002"',
     lambda c: f"{c.advertised_host}:{c.advertised_port}", "adv1:1002", "adv2:2002", "None:None"),
    (("--data-dir", "/flag/data"), 'data_dir = "/file/data"',
     lambda c: c.data_dir, "/file/data", "/flag/data", "./kgroup-data"),
    (("--fsync", "interval:50"), 'fsync = "never"', lambda c: c.fsync, "never", "interval:50", "always"),
    # --no-group-events can only say false: once over a file that says true, once alone.
    (("--no-group-events",), "group_events = true", lambda c: c.group_events, True, False, True),
    (("--no-group-events",), "group_events = false", lambda c: c.group_events, False, False, True),
    (("--http-listen", "127.0.0.1:2004"), 'http_listen = "127.0.0.1:1004"',
     lambda c: f"{c.http_listen_host}:{c.http_listen_port}", "127.0.0.1:1004", "127.0.0.1:2004", "None:None"),
    (("--log-level", "debug"), '[log]\nlevel = "WARNING"', lambda c: c.log.level, "WARNING", "DEBUG", "INFO"),
    (("--log-format", "text"), '[log]\nformat = "json"', lambda c: c.log.format, "json", "text", "text"),
    (("--control-listen", "127.0.0.1:2005"), 'control_listen = "127.0.0.1:1005"',
     lambda c: f"{c.control_listen_host}:{c.control_listen_port}", "127.0.0.1:1005", "127.0.0.1:2005",
     "None:None"),
    (("--node-id", "2"), "node_id = 3", lambda c: c.node_id, 3, 2, 1),
    (("--cluster", "1=127.0.0.1:2011,2=127.0.0.1:2012"), 'cluster = "1=127.0.0.1:1011,2=127.0.0.1:1012"',
     lambda c: c.cluster, ((1, "127.0.0.1", 1011), (2, "127.0.0.1", 1012)),
     ((1, "127.0.0.1", 2011), (2, "127.0.0.1", 2012)), ()),
    (("--node-timeout-ms", "2000"), "node_timeout_ms = 9000", lambda c: c.node_timeout_ms, 9000, 2000, 6000),
]


@pytest.mark.parametrize(("flag", "line", "held", "from_file", "from_flag", "default"), CASES,
                         ids=[f"{c[0][0]}:{c[1].splitlines()[-1]}" for c in CASES])
def test_the_file_value_is_used_unless_the_flag_is_given(tmp_path, flag, line, held, from_file, from_flag,
                                                         default):
    assert held(config(tmp_path, "")) == default
    assert held(config(tmp_path, line + "\n")) == from_file
    assert held(config(tmp_path, line + "\n", *flag)) == from_flag


def test_every_serve_flag_with_a_file_key_is_checked_and_defaults_to_not_given():
    serve = _subparser("serve")
    # --port-offset has no file key: it is what tells apart the nodes sharing one file.
    dests = {a.dest for a in serve._actions
             if a.option_strings and a.dest not in ("help", "config", "port_offset")}
    # Every other flag of serve has a file key; each is passed only when given.
    assert dests == set(FLAG_KEYS)
    defaults = vars(build_parser().parse_args(["serve"]))
    assert {k: defaults[k] for k in FLAG_KEYS} == dict.fromkeys(FLAG_KEYS)
    checked = {a.dest for a in serve._actions for c in CASES if c[0][0] in a.option_strings}
    assert checked == set(FLAG_KEYS)


@pytest.mark.parametrize(("toml", "flags", "expected"), [
    ("", (), "./kgroup-cluster"),
    ('data_dir = "/file/shared"\n', (), "/file/shared"),
    ('data_dir = "/file/shared"\n', ("--data-dir", "/flag/shared"), "/flag/shared"),
])
def test_cluster_nodes_get_the_file_data_dir_unless_the_flag_is_given(tmp_path, toml, flags, expected):
    path = tmp_path / "kgroup.toml"
    path.write_text(toml)
    args = build_parser().parse_args(["cluster", "--config", str(path), *flags])
    args.data_dir = _data_dir(args)
    assert args.data_dir == expected
    command = _serve_command(args, 0, "0=127.0.0.1:9092")
    assert command[command.index("--data-dir") + 1] == expected
    assert "--fsync" not in command          # the file's fsync stands on every node
