"""Argument parsing of `kgroup`: options, defaults, and mistakes as one-line errors."""

from __future__ import annotations

import pytest

from kgroup.cli.errors import UsageError
from kgroup.cli.main import main
from kgroup.cli.parser import build_parser


def parse(*argv: str):
    return build_parser().parse_args(list(argv))


def test_serve_defines_the_broker_options_with_defaults() -> None:
    args = parse("serve")
    assert args.command == "serve"
    assert args.listen is None  # 127.0.0.1:9092 (config.py), the node's --cluster entry, or none with [[listeners]]
    assert args.advertised is None
    assert args.node_id is None and args.cluster is None and args.node_timeout_ms is None
    assert args.data_dir is None  # the config file's data_dir, else ./kgroup-data (config.py)
    assert args.config is None
    assert args.fsync is None


def test_serve_accepts_every_fsync_policy_form() -> None:
    for policy in ("always", "never", "interval:250"):
        assert parse("serve", "--fsync", policy).fsync == policy
    with pytest.raises(UsageError, match="fsync"):
        parse("serve", "--fsync", "interval:")


def test_serve_rejects_a_listen_address_without_port() -> None:
    with pytest.raises(UsageError, match="HOST:PORT"):
        parse("serve", "--listen", "localhost")


def test_bootstrap_server_is_accepted_before_and_after_the_subcommand() -> None:
    assert parse("--bootstrap-server", "h:1", "topics", "list").bootstrap_server == "h:1"
    assert parse("topics", "list", "--bootstrap-server", "h:2").bootstrap_server == "h:2"


def test_bootstrap_server_defaults_to_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("KGROUP_BOOTSTRAP", "envhost:1234")
    assert parse("topics", "list").bootstrap_server == "envhost:1234"
    monkeypatch.delenv("KGROUP_BOOTSTRAP")
    assert parse("topics", "list").bootstrap_server == "127.0.0.1:9092"


def test_topics_create_collects_configs() -> None:
    args = parse("topics", "create", "t", "--partitions", "3", "--config", "a=1",
                 "--config", "retention.ms=10")
    assert (args.name, args.partitions) == ("t", 3)
    assert args.config == [("a", "1"), ("retention.ms", "10")]


@pytest.mark.parametrize("argv", [
    ["topics", "create", "t", "--partitions", "0"],
    ["topics", "create", "t", "--config", "novalue"],
    ["groups", "reset-offsets", "g", "--topic", "t"],  # no target
    ["groups", "reset-offsets", "g", "--topic", "t", "--to-earliest", "--to-latest"],
    ["groups", "remove-members", "g"],  # no --instance-id
    ["produce", "t", "--acks", "2"],
    ["consume"],
    ["nonsense"],
])
def test_bad_arguments_raise_usage_error(argv) -> None:
    with pytest.raises(UsageError):
        parse(*argv)


def test_reset_offsets_targets() -> None:
    args = parse("groups", "reset-offsets", "g", "--topic", "t", "--to-offset", "7")
    assert (args.to_offset, args.to_earliest, args.to_latest, args.execute) == (7, False, False,
                                                                                 False)
    assert parse("groups", "reset-offsets", "g", "--topic", "t", "--to-latest",
                 "--execute").execute


def test_remove_members_takes_several_instance_ids() -> None:
    args = parse("groups", "remove-members", "g", "--instance-id", "a", "--instance-id", "b")
    assert args.instance_id == ["a", "b"]


def test_consume_options() -> None:
    args = parse("consume", "t", "--from-beginning", "--max-messages", "5", "--group", "g",
                 "--partition", "2", "--timeout-ms", "100", "--print-key")
    assert (args.from_beginning, args.max_messages, args.group, args.partition,
            args.timeout_ms, args.print_key) == (True, 5, "g", 2, 100, True)


def test_main_prints_one_line_for_bad_arguments(capsys) -> None:
    assert main(["topics", "create"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("kgroup: error: ") and " — " in err
    assert "Traceback" not in err


def test_help_exits_zero(capsys) -> None:
    assert main(["--help"]) == 0
    assert "consume" in capsys.readouterr().out


def test_consume_help_says_the_group_must_have_no_active_members(capsys) -> None:
    assert main(["consume", "--help"]) == 0
    assert "no active members" in " ".join(capsys.readouterr().out.split())


def test_serve_takes_a_node_id_and_a_cluster_list() -> None:
    args = parse("serve", "--node-id", "2", "--cluster", "0=127.0.0.1:9092,1=h:9093,2=h:9094",
                 "--node-timeout-ms", "3000")
    assert (args.node_id, args.node_timeout_ms) == (2, 3000)
    assert args.cluster == "0=127.0.0.1:9092,1=h:9093,2=h:9094"
    with pytest.raises(UsageError, match="cluster entry"):
        parse("serve", "--cluster", "0=127.0.0.1:9092,h:9093")


def test_cluster_defines_its_options_with_defaults() -> None:
    args = parse("cluster")
    assert (args.nodes, args.base_port, args.data_dir) == (3, 9092, None)   # file, else ./kgroup-cluster
    assert parse("cluster", "--nodes", "5", "--base-port", "19092").base_port == 19092
    with pytest.raises(UsageError, match="port"):
        parse("cluster", "--base-port", "0")


def test_consume_joins_with_a_protocol_or_reads_without_joining() -> None:
    args = parse("consume", "t", "--group", "g")
    assert (args.group_protocol, args.no_join) == ("classic", False)
    args = parse("consume", "t", "--group", "g", "--group-protocol", "share")
    assert args.group_protocol == "share"
    assert parse("consume", "t", "--group", "g", "--no-join").no_join


def test_consume_help_names_the_protocols_and_no_join(capsys) -> None:
    assert main(["consume", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--group-protocol {classic,consumer,share}" in text and "--no-join" in text
    assert "kafka-console-share-consumer" in text
