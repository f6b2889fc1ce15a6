"""`kgroup control`: its arguments, and mistakes as one-line errors before any request."""

from __future__ import annotations

import pytest

from kgroup.cli.errors import UsageError
from kgroup.cli.main import main
from kgroup.cli.parser import build_parser


def parse(*argv: str):
    return build_parser().parse_args(list(argv))


def test_control_address_before_or_after_the_action_or_from_the_environment(monkeypatch):
    assert parse("control", "--control", "h:1", "rebalance", "g").control == "h:1"
    assert parse("control", "expire", "g", "m", "--control", "h:2").control == "h:2"
    monkeypatch.setenv("KGROUP_CONTROL", "h:3")
    assert parse("control", "faults", "list").control == "h:3"


def test_faults_add_takes_one_action_and_the_matching_options():
    args = parse("control", "faults", "add", "--api", "Fetch", "--delay-ms", "2000", "--topic", "t",
                 "--partition", "0", "--count", "5")
    assert (args.api, args.delay_ms, args.topic, args.partition, args.count) == ("Fetch", 2000, "t", 0, 5)
    with pytest.raises(UsageError, match="not allowed with argument"):
        parse("control", "faults", "add", "--api", "Heartbeat", "--error", "X", "--close-connection")
    with pytest.raises(UsageError, match="must be at least 1"):
        parse("control", "faults", "add", "--api", "Heartbeat", "--error", "X", "--count", "0")


def test_wait_takes_state_members_and_timeout():
    args = parse("control", "wait", "g", "--state", "Stable", "--members", "3", "--timeout-ms", "500")
    assert (args.group, args.state, args.members, args.timeout_ms) == ("g", "Stable", 3, 500)


def test_a_fault_without_an_action_is_refused_before_any_request(capsys):
    assert main(["control", "--control", "127.0.0.1:1", "faults", "add", "--api", "Heartbeat"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kgroup: error: a fault needs --error, --delay-ms, --throttle-ms or --close-connection")
