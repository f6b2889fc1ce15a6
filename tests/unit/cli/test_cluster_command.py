"""`kgroup cluster` hands each node `kgroup serve`'s flags and, with --config, its port offset."""

from __future__ import annotations

from kgroup.cli.cluster import _serve_command
from kgroup.cli.parser import build_parser


def test_each_node_gets_the_serve_flags_and_its_port_offset() -> None:
    args = build_parser().parse_args(["cluster", "--config", "c.toml", "--data-dir", "d", "--log-level", "debug",
                                      "--log-format", "json", "--no-group-events", "--node-timeout-ms", "3000"])
    first, second = (_serve_command(args, i, "0=127.0.0.1:1,1=127.0.0.1:2") for i in (0, 1))
    assert "--port-offset" not in first
    assert second[second.index("--port-offset") + 1] == "1"
    for flag, value in (("--log-level", "DEBUG"), ("--log-format", "json"), ("--node-timeout-ms", "3000")):
        assert second[second.index(flag) + 1] == value
    assert "--no-group-events" in second
    serve = build_parser().parse_args(second[3:])
    assert (serve.port_offset, serve.node_id, serve.group_events) == (1, 1, False)
