"""The ``kgroup`` argument parser.

Global options (``--bootstrap-server``, ``--request-timeout-ms``) are accepted both before
and after the subcommand, as Kafka's tools take them after. The parser never prints usage
and exits on a mistake: it raises ``UsageError`` so ``main`` prints the one-line error.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from typing import Any

from .errors import UsageError
from .client_metrics import add_client_metrics_commands
from .ops_parser import (
    add_consume_options,
    add_group_tools,
    add_produce_options,
    config_change_options,
    format_option,
    group_tool_options,
    kgroup_version,
    one_group_argument,
)
from .quotas import add_quota_commands
from .security import add_security_commands
from .tokens import add_token_commands

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
_NEGATIVE = re.compile(r"^-\d+$|^-\d*\.\d+$")
_FSYNC = re.compile(r"^(always|never|interval:[1-9][0-9]*)$")


class Parser(argparse.ArgumentParser):
    """ArgumentParser that raises UsageError instead of exiting, takes no abbreviations
    (``--exec`` is not ``--execute``), and names an unknown option with the help of the
    command it was given to, before any other complaint about that command's arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(message, f"run `{self.prog} --help`")

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:  # type: ignore[override]
        self._check_options(list(sys.argv[1:] if args is None else args))
        parsed, extras = super().parse_known_args(args, namespace)
        leaf = not any(isinstance(a, argparse._SubParsersAction) for a in self._actions)
        if extras and leaf and " " in self.prog:
            # argparse leaves over a second run of GROUPs given after an option: say where they go.
            several = any(a.nargs == "*" and not a.option_strings for a in self._actions)
            raise UsageError(f"unexpected argument {extras[0]!r} for {self.prog.partition(' ')[2]}",
                             ("give the GROUPs together, before or after the options; " if several else "")
                             + f"see `{self.prog} --help`")
        return parsed, extras

    def _check_options(self, args: list[str]) -> None:
        """UsageError for the first option this command does not have (before its
        subcommand, for a command that has subcommands)."""
        known = set(self._option_string_actions)
        commands = {name for a in self._actions if isinstance(a, argparse._SubParsersAction) for name in a.choices}
        for arg in args:
            if arg == "--" or arg in commands:
                return
            if not arg.startswith("-") or arg == "-" or _NEGATIVE.match(arg) or " " in arg:
                # (argparse takes a negative number or a word with a space as a value)
                continue
            name = arg.split("=", 1)[0] if arg.startswith("--") else arg
            if name in known or (not arg.startswith("--") and arg[:2] in known):
                continue
            close = difflib.get_close_matches(name, sorted(o for o in known if o.startswith("--")), n=1)
            guess = f" (did you mean {close[0]}?)" if close else ""
            command = self.prog.partition(" ")[2]
            where = f" for {command}" if command else ""
            raise UsageError(f"unknown option {name}{where}{guess}", f"see `{self.prog} --help`")


def fsync_policy(text: str) -> str:
    """``always``, ``never`` or ``interval:MS``."""
    if not _FSYNC.match(text):
        raise argparse.ArgumentTypeError(
            f"invalid fsync policy {text!r} (use always, never or interval:MS)"
        )
    return text


def host_port(text: str) -> str:
    """``HOST:PORT`` with a port in 1..65535."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"invalid address {text!r} (use HOST:PORT)")
    return text


def port_number(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f"invalid port {text!r} (use 1-65535)")
    return int(text)


def cluster_list(text: str) -> str:
    """``ID=HOST:PORT,ID=HOST:PORT,...``."""
    for part in text.split(","):
        node, sep, address = part.strip().partition("=")
        if not sep or not node.isdigit():
            raise argparse.ArgumentTypeError(f"invalid cluster entry {part!r} (use ID=HOST:PORT)")
        host_port(address)
    return text


def bootstrap_list(text: str) -> str:
    for part in text.split(","):
        host_port(part.strip())
    return text


def config_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"invalid config {text!r} (use NAME=VALUE)")
    return key.strip(), value


def _whole_number(text: str, minimum: int, rule: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < minimum:
        raise argparse.ArgumentTypeError(f"{text!r} {rule}")
    return value


def positive_int(text: str) -> int:
    return _whole_number(text, 1, "must be at least 1")


def non_negative_int(text: str) -> int:
    return _whole_number(text, 0, "must not be negative")


def _client_options(defaults: bool) -> argparse.ArgumentParser:
    """Options every client command takes; real defaults only on the top-level parser."""
    p = argparse.ArgumentParser(add_help=False)
    sup = argparse.SUPPRESS
    p.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT[,HOST:PORT...]",
        type=bootstrap_list,
        default=os.environ.get("KGROUP_BOOTSTRAP", DEFAULT_BOOTSTRAP) if defaults else sup,
        help="broker to connect to (default: $KGROUP_BOOTSTRAP or 127.0.0.1:9092)",
    )
    p.add_argument(
        "--request-timeout-ms",
        metavar="MS",
        type=positive_int,
        default=10000 if defaults else sup,
        help="how long to wait to connect and for each answer (default: 10000)",
    )
    p.add_argument(
        "--command-config",
        metavar="FILE",
        default=None if defaults else sup,
        help="client properties (security.protocol, sasl.mechanism, sasl.username, "
        "sasl.password, ssl.ca.location, ...) in Java .properties format, as Kafka's tools take",
    )
    return p


def _broker_storage_options(p: argparse.ArgumentParser, data_dir: str, what: str) -> None:
    """--data-dir, --config, --fsync of `serve` and `cluster`. Like every flag with a key in
    the config file, their default is None (not given): the file's value, else the default
    named in the help, applies unless the flag is on the command line."""
    p.add_argument("--data-dir", metavar="DIR", default=None,
                   help=f"{what} (default: the config file's data_dir, else {data_dir})")
    p.add_argument("--config", metavar="FILE", default=None, help="broker config file")
    p.add_argument("--fsync", metavar="{always,never,interval:MS}", type=fsync_policy,
                   default=None, help="when to fsync appended data")


def _node_options(p: argparse.ArgumentParser) -> None:
    """Flags of `serve` that `cluster` hands every node as they are."""
    p.add_argument("--no-group-events", dest="group_events", action="store_const", const=False,
                   default=None, help="do not write group changes to the __kgroup_events topic")
    p.add_argument("--log-level", default=None, type=str.upper,
                   choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
                   help="logging level (default: INFO)")
    p.add_argument("--log-format", default=None, choices=["text", "json"],
                   help="log lines for people (text, the default) or one JSON object a line")


def _lease_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--node-timeout-ms", metavar="MS", type=positive_int, default=None,
                   help="a node that stops renewing its lease this long loses its "
                   "partitions (default: 6000)")


def build_parser() -> Parser:
    """The full ``kgroup`` parser."""
    root = Parser(
        prog="kgroup",
        description="kgroup: a Kafka-compatible broker built around the consumer-group "
        "coordinator, and tools to drive it.",
        parents=[_client_options(True)],
    )
    root.add_argument("--version", action="version", version=f"kgroup {kgroup_version()}",
                      help="print kgroup's version and exit")
    client = _client_options(False)
    sub = root.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True

    # serve
    serve = sub.add_parser("serve", help="run the broker (one node of a cluster with --cluster)")
    serve.add_argument("--listen", metavar="HOST:PORT", type=host_port,
                       default=None, help="address of the PLAINTEXT listener (default: 127.0.0.1:9092, "
                       "this node's entry in --cluster, or none when the config file has [[listeners]])")
    serve.add_argument("--advertised", metavar="HOST:PORT", type=host_port, default=None,
                       help="address given to clients in Metadata (default: --listen)")
    _broker_storage_options(serve, "./kgroup-data", "where logs and group state live")
    serve.add_argument("--control-listen", metavar="HOST:PORT", type=host_port, default=None,
                       help="serve the control API (faults on demand, group state and waits, "
                       "rebalance, expire, node and coordinator controls; for tests) here "
                       "(default: off)")
    _node_options(serve)
    serve.add_argument("--http-listen", metavar="HOST:PORT", type=host_port, default=None,
                       help="serve the web console, /metrics and /api here (default: off)")
    serve.add_argument("--node-id", type=non_negative_int, default=None,
                       help="this node's id in --cluster (default: 1)")
    serve.add_argument("--cluster", metavar="ID=HOST:PORT,...", type=cluster_list, default=None,
                       help="every node of the cluster, the same list on each node; all share "
                       "--data-dir (one host, or a shared file system with POSIX locks)")
    _lease_option(serve)
    serve.add_argument("--port-offset", metavar="N", type=non_negative_int, default=None,
                       help="add N to the port of every listener the config file names ([[listeners]] "
                       "address and advertised, http_listen, control_listen; not flags): node N "
                       "of `kgroup cluster` gets N, so the nodes can share one file (default: 0)")

    # cluster
    cluster = sub.add_parser(
        "cluster", help="run a cluster of N nodes on this host, in the foreground",
        description="Start N `kgroup serve` nodes as child processes sharing one data dir, "
        "print their addresses, and stop them all on Ctrl-C. Every node reads the same --config "
        "file, so it takes the same settings as `kgroup serve` (security included: [[listeners]], "
        "[auth], inter_node_listener and its credentials); node i gets its own port for every "
        "listener of the file: the file's port + i (`kgroup serve --port-offset i`), and "
        "127.0.0.1:BASE+i for its PLAINTEXT listener. A file whose ports would meet (or that sets "
        "listen/advertised, which BASE+i replaces) is refused before any node starts.")
    cluster.add_argument("--nodes", type=positive_int, default=3, help="how many nodes (default: 3)")
    cluster.add_argument("--base-port", type=port_number, default=9092,
                         help="node i's PLAINTEXT listener is 127.0.0.1:BASE+i (default: 9092)")
    _broker_storage_options(cluster, "./kgroup-cluster", "the data dir every node shares")
    _node_options(cluster)
    _lease_option(cluster)
    cluster.add_argument("--control-base-port", type=port_number, default=None,
                         help="node i also serves the control API on 127.0.0.1:PORT+i, and node "
                         "controls (kill, stop, start, pause) sent to any of them are carried out "
                         "by this process (default: off)")

    # topics
    topics = sub.add_parser("topics", help="create, list, describe, delete topics")
    tsub = topics.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
    tsub.required = True
    t = tsub.add_parser("create", parents=[client], help="create a topic")
    t.add_argument("name", metavar="NAME")
    t.add_argument("--partitions", type=positive_int, default=1, help="(default: 1)")
    t.add_argument("--replication-factor", type=positive_int, default=1, help="(default: 1)")
    t.add_argument("--config", metavar="NAME=VALUE", type=config_pair, action="append",
                   default=[], help="topic config, repeatable")
    format_option(tsub.add_parser("list", parents=[client], help="list topic names"))
    t = tsub.add_parser("describe", parents=[client],
                        help="partitions, leaders, start and end offsets, and changed configs of a topic")
    t.add_argument("name", metavar="NAME")
    format_option(t)
    t = tsub.add_parser("delete", parents=[client], help="delete a topic")
    t.add_argument("name", metavar="NAME")
    t = tsub.add_parser("add-partitions", parents=[client],
                        help="grow a topic to a new partition count")
    t.add_argument("name", metavar="NAME")
    t.add_argument("--partitions", type=positive_int, required=True,
                   help="the new total partition count")
    t = tsub.add_parser("alter-config", parents=[client],
                        help="set or remove topic configs (retention.ms, ...); print them")
    t.add_argument("name", metavar="NAME")
    config_change_options(t)
    t = tsub.add_parser("reassign", parents=[client],
                        help="move partitions to other nodes (kafka-reassign-partitions' options)",
                        description="Start, verify, cancel or list partition moves. In a kgroup cluster a "
                        "partition's replicas are the node that leads it: a plan naming [n] moves its "
                        "leadership to node n by a clean hand-over.")
    action = t.add_mutually_exclusive_group(required=True)
    action.add_argument("--execute", action="store_true", help="start the moves the plan names")
    action.add_argument("--verify", action="store_true", help="say which of the plan's moves are done")
    action.add_argument("--cancel", action="store_true", help="cancel the plan's moves still under way")
    action.add_argument("--list", action="store_true", help="list the moves under way")
    t.add_argument("--reassignment-json-file", metavar="FILE",
                   help='the plan: {"version":1,"partitions":[{"topic":"T","partition":0,"replicas":[1]}]}')
    format_option(t)
    t = tsub.add_parser("elect-leaders", parents=[client],
                        help="move partitions back to their preferred nodes (kafka-leader-election's options)")
    t.add_argument("--election-type", choices=("preferred", "unclean"), required=True,
                   type=str.lower, help="preferred: back to the preferred node; unclean: only where none leads")
    which = t.add_mutually_exclusive_group(required=True)
    which.add_argument("--topic", metavar="TOPIC", help="the topic of --partition")
    which.add_argument("--all-topic-partitions", action="store_true", help="every partition")
    which.add_argument("--path-to-json-file", metavar="FILE",
                       help='the partitions: {"partitions":[{"topic":"T","partition":0}]}')
    t.add_argument("--partition", type=non_negative_int, metavar="N", help="the partition of --topic")
    format_option(t)

    # groups
    groups = sub.add_parser("groups", help="list, describe, delete groups; reset offsets")
    gsub = groups.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
    gsub.required = True
    g = gsub.add_parser("remove-members", parents=[group_tool_options(client)],
                        help="remove static members by group.instance.id")
    one_group_argument(g)
    g.add_argument("--instance-id", action="append", required=True, metavar="ID",
                   help="group.instance.id to remove, repeatable")
    add_group_tools(gsub, client)

    # groups watch (cli/watch.py)
    g = gsub.add_parser(
        "watch", parents=[group_tool_options(client)], help="live view of a group (or of all groups), refreshing in place",
        description="A live view of one group (state, generation or epoch, members and their partitions, "
        "lag per partition, the last rebalances) or of every group, refreshed in place until you press q "
        "or Ctrl-C. Rebalance history comes from kgroup's __kgroup_events topic where the broker has it.")
    one_group_argument(g)
    g.add_argument("--interval-ms", type=positive_int, default=2000, metavar="MS",
                   help="how often to refresh (default: 2000)")
    g.add_argument("--telemetry", metavar="HOST:PORT", type=host_port, default=None,
                   help="with a GROUP: each member's own metrics (KIP-714), from the broker's --http-listen address")

    # transactions
    txns = sub.add_parser("transactions", help="list and describe transactions")
    xsub = txns.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
    xsub.required = True
    x = xsub.add_parser("list", parents=[client], help="transactional ids, their producers and states")
    x.add_argument("--state", action="append", default=[],
                   help="only transactions in this state (Ongoing, PrepareCommit, ...), repeatable")
    x.add_argument("--producer-id", action="append", type=non_negative_int, default=[], metavar="ID",
                   help="only this producer id, repeatable")
    x.add_argument("--min-duration-ms", type=non_negative_int, default=-1, metavar="MS",
                   help="only transactions running at least this long (find a hanging one)")
    x = xsub.add_parser("describe", parents=[client],
                        help="a transactional id's producer, state, timeout and partitions")
    x.add_argument("transactional_id", nargs="+", metavar="TRANSACTIONAL-ID")

    # produce
    p = sub.add_parser("produce", parents=[client],
                       help="send stdin lines to a topic, one message per line")
    p.add_argument("topic", metavar="TOPIC")
    p.add_argument("--key-separator", metavar="SEP", default=None,
                   help="split each line into KEY SEP VALUE at the first SEP")
    p.add_argument("--partition", type=non_negative_int, default=None,
                   help="send every message to this partition (default: by key hash, "
                   "else one partition per batch of 500 in turn)")
    p.add_argument("--acks", type=int, choices=[-1, 0, 1], default=-1, help="(default: -1)")
    add_produce_options(p)

    # consume
    c = sub.add_parser(
        "consume", parents=[client],
        help="print messages of a topic (with --group, as a member of the group)",
        description="Print the messages of a topic. With --group, join the group as "
        "kafka-console-consumer --group does (or kafka-console-share-consumer, with "
        "--group-protocol share): the group's members split the topic's partitions and "
        "rebalance as members come and go; progress is committed after every batch printed "
        "and on exit (Ctrl-C / SIGTERM commit what was printed and leave the group). "
        "With --no-join (or --partition / --offset) the old way: read every partition without "
        "joining and commit as a 'simple' consumer (generation -1); the group must then have "
        "no active members.",
    )
    c.add_argument("topic", metavar="TOPIC")
    c.add_argument("--from-beginning", action="store_true",
                   help="start at the earliest offset (default: the latest) where the group "
                   "has no committed offset")
    c.add_argument("--max-messages", type=positive_int, default=None,
                   help="stop after N messages")
    c.add_argument("--group", default=None,
                   help="join this group and read the partitions it assigns, from its committed "
                   "offsets")
    c.add_argument("--group-protocol", choices=["classic", "consumer", "share"], default="classic",
                   help="how to join --group: classic (JoinGroup/SyncGroup, the default), "
                   "consumer (KIP-848) or share (a share group, KIP-932: each record printed is "
                   "acknowledged)")
    c.add_argument("--no-join", action="store_true",
                   help="with --group: do not join it; read every partition and commit as a "
                   "'simple' consumer (the group must have no active members)")
    c.add_argument("--partition", type=non_negative_int, default=None,
                   help="only this partition")
    c.add_argument("--timeout-ms", type=positive_int, default=None,
                   help="stop after this long without a new message (default: never)")
    c.add_argument("--print-key", action="store_true", help="print KEY<separator>VALUE")
    c.add_argument("--key-separator", metavar="SEP", default="\t",
                   help="separator for --print-key (default: tab)")
    add_consume_options(c)

    # users, acls, quotas
    add_security_commands(sub, client, Parser)
    add_token_commands(sub, client, Parser)
    add_quota_commands(sub, client, Parser)
    add_client_metrics_commands(sub, client)

    # control
    _control_parser(sub)

    # lab
    lab = sub.add_parser("lab", help="simulate consumer groups under churn (the rebalance lab)")
    lsub = lab.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
    lsub.required = True
    r = lsub.add_parser("run", help="simulate one scenario here; write Parquet and report.html")
    r.add_argument("scenario", metavar="SCENARIO", help="scenario YAML file")
    r.add_argument("--out", metavar="DIR", required=True, help="output directory")
    r.add_argument("--seed", type=int, default=None, help="override the scenario's seed")
    w = lsub.add_parser("sweep", help="simulate a sweep's groups on Spark; write Parquet and report.html")
    w.add_argument("sweep", metavar="SWEEP", help="sweep YAML file")
    w.add_argument("--out", metavar="DIR", required=True, help="output directory")
    w.add_argument("--master", default="local[*]", help="Spark master URL (default: local[*])")
    w.add_argument("--partitions", type=positive_int, default=None,
                   help="Spark tasks to split the groups into (default: 8 per core, or one per "
                   "50 groups if more)")
    y = lsub.add_parser("replay", help="replay a group's recorded __kgroup_events under other settings")
    y.add_argument("events", metavar="EVENTS",
                   help="file of group events, one JSON a line ('-': stdin), e.g. from "
                   "`kgroup consume __kgroup_events --from-beginning --timeout-ms 2000`")
    y.add_argument("--group", default=None, help="the group to replay (default: every group of the file)")
    y.add_argument("--master", default=None,
                   help="replay the groups on Spark at this master URL, e.g. 'local[*]' (default: here)")
    y.add_argument("--as", dest="variant", metavar="KEY=VALUE[,...]", action="append",
                   help="a what-if variant of member settings, e.g. --as static=true or "
                   "--as protocol=consumer,assignor=uniform (repeatable)")
    y.add_argument("--out", metavar="DIR", required=True, help="output directory")
    i = lsub.add_parser("import", help="read a Kafka cluster's group history (__consumer_offsets) "
                        "into lab events for `kgroup lab replay`")
    i.add_argument("--bootstrap-server", metavar="HOST:PORT", default=None,
                   help="a broker of the cluster: its __consumer_offsets is fetched over the wire")
    i.add_argument("--segments", metavar="DIR", default=None,
                   help="a copy of a broker's log directory (its __consumer_offsets-N/*.log segments)")
    i.add_argument("--command-config", metavar="FILE", default=None,
                   help="client properties (security, ...) in Java .properties format")
    i.add_argument("--out", metavar="FILE", default="-", help="events file, one JSON a line (default: stdout)")
    return root


def _control_parser(sub: argparse._SubParsersAction) -> None:
    """`kgroup control ...`: the control API of a broker started with --control-listen."""
    def control_option(defaults: bool) -> argparse.ArgumentParser:
        # Taken before or after the action, as the client options are (real default only once).
        p = argparse.ArgumentParser(add_help=False)
        p.add_argument("--control", metavar="HOST:PORT", type=host_port,
                       default=os.environ.get("KGROUP_CONTROL") if defaults else argparse.SUPPRESS,
                       help="the broker's --control-listen address (default: $KGROUP_CONTROL)")
        return p

    where = control_option(False)
    control = sub.add_parser("control", parents=[control_option(True)],
                             help="faults on demand, group waits, rebalance, expire, coordinator "
                             "moves and node controls (for tests)",
                             description="Drive the control API of a broker started with "
                             "`kgroup serve --control-listen HOST:PORT`.")
    csub = control.add_subparsers(dest="action", metavar="ACTION", parser_class=Parser)
    csub.required = True

    faults = csub.add_parser("faults", help="add, list or clear faults")
    fsub = faults.add_subparsers(dest="faults_action", metavar="ACTION", parser_class=Parser)
    fsub.required = True
    f = fsub.add_parser("add", parents=[where], help="answer the next matching requests with an error, "
                        "late, or by closing the connection; prints the fault's id")
    f.add_argument("--api", required=True, help="Kafka API name, e.g. Heartbeat, Fetch, OffsetCommit")
    action = f.add_mutually_exclusive_group()
    action.add_argument("--error", metavar="NAME", help="Kafka error name, e.g. REBALANCE_IN_PROGRESS")
    action.add_argument("--close-connection", action="store_true", help="close the client's connection")
    f.add_argument("--delay-ms", type=positive_int, default=None, help="hold each matching request this long")
    f.add_argument("--throttle-ms", type=positive_int, default=None,
                   help="serve each matching request, answered as over its client quota (throttle_time_ms, "
                   "then the connection muted this long)")
    f.add_argument("--count", type=positive_int, default=1, help="how many requests (default: 1)")
    f.add_argument("--group", help="only requests for this group")
    f.add_argument("--member", help="only requests of this member id or group.instance.id")
    f.add_argument("--client-id", help="only requests from this client.id")
    f.add_argument("--topic", help="only requests naming this topic")
    f.add_argument("--partition", type=non_negative_int, default=None, help="only requests naming this partition")
    f = fsub.add_parser("list", parents=[where], help="armed faults with what is left of them")
    f.add_argument("--json", action="store_true", help="print JSON")
    f = fsub.add_parser("clear", parents=[where], help="disarm one fault, or all")
    f.add_argument("fault_id", metavar="ID", nargs="?", default=None, help="the fault (default: all)")

    c = csub.add_parser("group", parents=[where], help="print a group's state and members as JSON")
    c.add_argument("group", metavar="GROUP")
    c = csub.add_parser("wait", parents=[where], help="wait until a group is in a state with N members; "
                        "prints it as JSON (exit 1 at the timeout)")
    c.add_argument("group", metavar="GROUP")
    c.add_argument("--state", default=None, help="e.g. Stable, Empty, PreparingRebalance, Reconciling")
    c.add_argument("--members", type=non_negative_int, default=None, help="how many members")
    c.add_argument("--timeout-ms", type=non_negative_int, default=30_000, help="(default: 30000)")
    c = csub.add_parser("rebalance", parents=[where], help="start a rebalance of a group now")
    c.add_argument("group", metavar="GROUP")
    c = csub.add_parser("expire", parents=[where], help="expire a member as if its session timed out")
    c.add_argument("group", metavar="GROUP")
    c.add_argument("member", metavar="MEMBER", help="member id or group.instance.id")
    c = csub.add_parser("move-coordinator", parents=[where], help="move a group's coordinator to a node "
                        "of the cluster by a clean hand-over; prints the group as JSON")
    c.add_argument("group", metavar="GROUP")
    c.add_argument("--node", type=non_negative_int, required=True, help="the node to move it to")
    c = csub.add_parser("nodes", parents=[where], help="print the cluster's nodes and their status as JSON")
    node = csub.add_parser("node", help="kill, stop, start or pause a node of the cluster (needs the "
                           "cluster to run under `kgroup cluster` or kgroup.testing.Cluster)")
    nsub = node.add_subparsers(dest="node_action", metavar="ACTION", parser_class=Parser)
    nsub.required = True
    for name, text in (("kill", "SIGKILL the node, as a crash"),
                       ("stop", "stop the node gracefully (it hands its partitions over)"),
                       ("start", "start a stopped or killed node again"),
                       ("pause", "stop the node answering for --ms milliseconds, as a GC pause")):
        c = nsub.add_parser(name, parents=[where], help=text)
        c.add_argument("node", metavar="NODE", type=non_negative_int, help="the node's id")
        if name == "pause":
            c.add_argument("--ms", type=positive_int, required=True, help="how long, in milliseconds")
