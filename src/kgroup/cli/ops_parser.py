"""Arguments of the operator tools: the group commands, config changes, consume/produce options.

Kept apart from parser.py's skeleton; ``build_parser`` calls these with the subparsers. Values
are checked here (specs.py, record_format.py), so a mistake is one usage line before any
connection is made.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from importlib import metadata
from typing import Any

from . import specs
from .errors import UsageError
from .record_format import compile_format


def _typed(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse type from a parser raising ValueError with its own message."""
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    convert.__name__ = parse.__name__
    return convert


def _record_format(text: str) -> str:
    compile_format(text)
    return text


def _signed_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a whole number (use +N or -N)") from None


def _non_negative(text: str) -> int:
    value = _signed_int(text)
    if value < 0:
        raise ValueError(f"{text!r} must not be negative")
    return value


def format_option(parser: argparse.ArgumentParser) -> None:
    """``--format text|json`` for list and describe commands."""
    parser.add_argument("--format", choices=["text", "json"], default="text",
                        help="text tables (default) or one JSON document (shape in README.md)")


def config_change_options(parser: argparse.ArgumentParser) -> None:
    """kafka-configs' ``--add-config`` / ``--delete-config``."""
    parser.add_argument("--add-config", action="append", default=[], metavar="NAME=VALUE[,NAME=VALUE...]",
                        help="set configs (a list value in brackets: cleanup.policy=[delete,compact]); "
                        "repeatable")
    parser.add_argument("--delete-config", action="append", default=[], metavar="NAME[,NAME...]",
                        help="remove dynamic configs (back to the default); repeatable")


def _group_selection(parser: argparse.ArgumentParser, every: bool = True) -> None:
    """GROUP arguments or Kafka's ``--group`` (repeatable); ``every``: ``--all-groups`` and
    rpk's ``--regex`` too."""
    parser.add_argument("groups", metavar="GROUP", nargs="*", help="group(s)")
    parser.add_argument("--group", action="append", default=[], metavar="GROUP",
                        help="a group, repeatable (as kafka-consumer-groups.sh takes it)")
    if every:
        parser.add_argument("--all-groups", action="store_true", help="every group")
        parser.add_argument("--regex", "-r", action="store_true",
                            help="GROUPs are regular expressions (as rpk's --regex): every group whose name "
                            "matches one (anchor with ^ and $)")


def one_group_argument(parser: argparse.ArgumentParser) -> None:
    """A single GROUP, as an argument or as Kafka's ``--group``."""
    parser.add_argument("groups", metavar="GROUP", nargs="?", default=None, help="the group")
    parser.add_argument("--group", action="append", default=[], metavar="GROUP",
                        help="the group (as kafka-consumer-groups.sh takes it)")


def group_tool_options(client: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The client options plus kafka-consumer-groups.sh's ``--timeout`` and ``--version``."""
    p = argparse.ArgumentParser(add_help=False, parents=[client])
    p.add_argument("--timeout", dest="request_timeout_ms", metavar="MS", type=_typed(_positive),
                   default=argparse.SUPPRESS, help="as --request-timeout-ms (Kafka's name for it)")
    p.add_argument("--version", action="version", version=f"kgroup {kgroup_version()}",
                   help="print kgroup's version and exit")
    return p


def kgroup_version() -> str:
    try:
        return metadata.version("kgroup")
    except metadata.PackageNotFoundError:
        return "unknown"


def _positive(text: str) -> int:
    value = _signed_int(text)
    if value < 1:
        raise ValueError(f"{text!r} must be at least 1")
    return value


def add_group_tools(gsub: Any, client: argparse.ArgumentParser) -> None:
    """groups list | describe | reset-offsets | delete | delete-offsets | alter-config;
    remove-members and watch (parser.py) take the same options."""
    client = group_tool_options(client)
    g = gsub.add_parser("list", parents=[client], help="list groups")
    g.add_argument("--state", action="append", default=[],
                   help="only groups in this state (Empty, Stable, PreparingRebalance, CompletingRebalance, "
                   "Assigning, Reconciling, Dead; any case), repeatable")
    g.add_argument("--type", action="append", default=[],
                   help="only groups of this type (classic, consumer, share, streams), repeatable")
    format_option(g)

    g = gsub.add_parser("describe", parents=[client],
                        help="committed offsets and lag (default), members, or state of groups",
                        description="Describe groups as kafka-consumer-groups.sh --describe does: --offsets "
                        "(the default), --members or --state, each with --verbose for more; for the GROUPs "
                        "named, matched (--regex) or --all-groups.")
    _group_selection(g)
    mode = g.add_mutually_exclusive_group()
    mode.add_argument("--offsets", action="store_true", help="committed offsets, log end and lag (default)")
    mode.add_argument("--members", action="store_true", help="the members and how many partitions each has")
    mode.add_argument("--state", action="store_true", help="coordinator, assignment strategy, state, members")
    g.add_argument("--verbose", action="store_true",
                   help="with --offsets: each partition's leader epoch; with --members: each member's "
                   "partitions; with --state: the group's epochs")
    g.add_argument("--lag-per-topic", action="store_true",
                   help="with --offsets: the lag summed per topic (as rpk's --print-lag-per-topic)")
    g.add_argument("--telemetry", metavar="HOST:PORT", default=None,
                   help="with --members --verbose: each member's own metrics (KIP-714: POLL-IDLE-RATIO, "
                   "COMMIT-LATENCY-AVG, REBALANCES), read from the broker's --http-listen address")
    format_option(g)

    g = gsub.add_parser(
        "reset-offsets", parents=[client],
        help="change groups' committed offsets (groups must be inactive)",
        description="Change the committed offsets of inactive groups (Empty, no members), with the "
        "scenarios of kafka-consumer-groups.sh --reset-offsets (and rpk's --to-group). Prints the plan "
        "of every group (--dry-run, the default) and names the groups skipped because they are "
        "active; --execute commits it; --export prints it as CSV for --from-file.")
    _group_selection(g)
    scope = g.add_mutually_exclusive_group()
    scope.add_argument("--topic", action="append", default=[], type=_typed(specs.topic_spec),
                       metavar="TOPIC[:PARTITION,...]", help="a topic, or some of its partitions; repeatable")
    scope.add_argument("--all-topics", action="store_true", help="every topic the group has offsets for")
    target = g.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-earliest", action="store_true", help="the log start offset")
    target.add_argument("--to-latest", action="store_true", help="the log end offset")
    target.add_argument("--to-offset", type=_typed(_non_negative), metavar="N",
                        help="offset N (clamped into the partition's range)")
    target.add_argument("--to-current", action="store_true",
                        help="the committed offset (the log end where there is none)")
    target.add_argument("--to-datetime", type=_typed(specs.parse_datetime), metavar="YYYY-MM-DDTHH:mm:SS.sss|MS",
                        help="the first offset at or after this time (ISO-8601, local time unless a zone "
                        "is given; or milliseconds since the epoch)")
    target.add_argument("--by-duration", type=_typed(specs.parse_duration), metavar="PnDTnHnM",
                        help="the first offset at or after this long ago (e.g. PT30M, P1DT2H)")
    target.add_argument("--shift-by", type=_typed(_signed_int), metavar="±N",
                        help="move the committed offset by N (clamped into the partition's range)")
    target.add_argument("--to-group", metavar="GROUP",
                        help="another group's committed offsets (as rpk group seek --to-group; without "
                        "--topic, every partition that group has an offset for)")
    target.add_argument("--from-file", metavar="CSV", help="the offsets of a CSV written by --export")
    action = g.add_mutually_exclusive_group()
    action.add_argument("--dry-run", action="store_true", help="only print the plan (the default)")
    action.add_argument("--execute", action="store_true", help="commit the plan")
    g.add_argument("--export", action="store_true",
                   help="print the plan as CSV: topic,partition,offset (group,topic,partition,offset for "
                   "several groups)")

    g = gsub.add_parser("delete", parents=[client], help="delete empty groups",
                        description="Delete groups that have no active members (kafka-consumer-groups.sh "
                        "--delete): the GROUPs named, matched (--regex) or --all-groups.")
    _group_selection(g)

    g = gsub.add_parser("delete-offsets", parents=[client],
                        help="delete a group's committed offsets of topics it no longer consumes "
                        "(a share group's state, per whole topic, when the group is empty)")
    _group_selection(g, every=False)
    which = g.add_mutually_exclusive_group(required=True)
    which.add_argument("--topic", action="append", default=[], type=_typed(specs.topic_spec),
                       metavar="TOPIC[:PARTITION,...]", help="a topic, or some of its partitions; repeatable")
    which.add_argument("--from-file", metavar="FILE",
                   help="the partitions to delete, one 'topic partition' (or topic,partition) a line, as "
                   "rpk group offset-delete --from-file reads them")

    g = gsub.add_parser("alter-config", parents=[client],
                        help="set or remove group configs (consumer.session.timeout.ms, share.record.lock.duration.ms, ...); "
                        "print them",
                        description="Change a group's dynamic configs (Kafka's group configs, kept in the "
                        "group's metadata log) and print every config of the group with its source.")
    one_group_argument(g)
    config_change_options(g)


def one_group(args: Any) -> str:
    """The group of a command that takes one (GROUP or --group)."""
    named = ([args.groups] if args.groups else []) + list(args.group)
    if len(named) != 1:
        raise UsageError("name one group (GROUP or --group GROUP)" if not named else
                         f"this command takes one group, not {len(named)}")
    return named[0]


def add_produce_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--header", action="append", default=[], type=_typed(specs.header_pair),
                        metavar="KEY=VALUE", help="a header on every message, repeatable")


def add_consume_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--offset", type=_typed(specs.offset_spec), default=None,
                        metavar="N|earliest|latest|@TIMESTAMP_MS",
                        help="where to start in every partition read (overrides --from-beginning and the "
                        "group's committed offsets)")
    parser.add_argument("--format", type=_typed(_record_format), default=None, metavar="FORMAT",
                        help="print each message by kcat's placeholders: %%t topic, %%p partition, %%o offset, "
                        "%%k key, %%v value, %%h headers, %%T timestamp, %%K/%%S key/value length; \\n, \\t")
