"""The CLI as issue 34 asks: no abbreviations, an unknown option named with its command's
help (before any complaint about a missing one), and kafka-consumer-groups.sh's (and rpk's)
flags on every group command."""

from __future__ import annotations

import argparse

import pytest

from kgroup.cli.errors import UsageError
from kgroup.cli.main import main
from kgroup.cli.ops_parser import one_group
from kgroup.cli.parser import build_parser
from kgroup.cli.specs import parse_datetime, read_partition_list


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def refused(*argv: str) -> UsageError:
    with pytest.raises(UsageError) as raised:
        parse(*argv)
    return raised.value


def every_parser(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                yield from every_parser(child)


def test_no_parser_takes_abbreviations() -> None:
    parsers = list(every_parser(build_parser()))
    assert len(parsers) > 40
    assert [p.prog for p in parsers if p.allow_abbrev] == []


@pytest.mark.parametrize(("argv", "says", "hint"), [
    # --exec once ran as --execute and committed offsets.
    (["groups", "reset-offsets", "g", "--topic", "t", "--to-earliest", "--exec"],
     "unknown option --exec for groups reset-offsets (did you mean --execute?)",
     "see `kgroup groups reset-offsets --help`"),
    # A misspelt target was reported as a missing one.
    (["groups", "reset-offsets", "g", "--topic", "t", "--to-earlist"],
     "unknown option --to-earlist for groups reset-offsets (did you mean --to-earliest?)",
     "see `kgroup groups reset-offsets --help`"),
    (["groups", "describe", "g", "--member"], "unknown option --member for groups describe (did you mean --members?)",
     "see `kgroup groups describe --help`"),
    (["--bootstrap-serv", "h:1", "topics", "list"], "unknown option --bootstrap-serv (did you mean --bootstrap-server?)",
     "see `kgroup --help`"),
    (["topics", "create", "t", "--partitions=2", "--replication=1"], "unknown option --replication for topics create",
     "see `kgroup topics create --help`"),
    (["groups", "delete", "a", "--all-groups", "b"], "unexpected argument 'b' for groups delete",
     "give the GROUPs together"),
])
def test_an_unknown_option_is_named_with_its_commands_help(argv, says, hint) -> None:
    error = refused(*argv)
    assert str(error).startswith(says) and hint in error.hint, (str(error), error.hint)


def test_values_that_look_like_options_are_still_values() -> None:
    args = parse("groups", "reset-offsets", "g", "--topic", "t", "--shift-by", "-3")
    assert args.shift_by == -3
    assert parse("produce", "t", "--key-separator", "-").key_separator == "-"
    assert parse("consume", "t", "--format", "- %v").format == "- %v"
    assert parse("groups", "describe", "-r", "^g").regex


def test_group_commands_take_kafkas_group_flags() -> None:
    args = parse("groups", "delete", "--group", "a", "--group", "b")
    assert (args.groups, args.group, args.all_groups) == ([], ["a", "b"], False)
    assert parse("groups", "delete", "--all-groups").all_groups
    args = parse("groups", "delete-offsets", "g", "--group", "h", "--topic", "t")
    assert (args.groups, args.group) == (["g"], ["h"])
    assert one_group(parse("groups", "alter-config", "--group", "g", "--add-config", "x=1")) == "g"
    assert one_group(parse("groups", "remove-members", "--group", "g", "--instance-id", "i")) == "g"
    assert one_group(parse("groups", "watch", "--group", "g")) == "g" and parse("groups", "watch").groups is None
    with pytest.raises(UsageError, match="takes one group"):
        one_group(parse("groups", "alter-config", "g", "--group", "h"))
    describe = parse("groups", "describe", "--group", "g", "--offsets", "--verbose", "--lag-per-topic")
    assert (describe.offsets, describe.verbose, describe.lag_per_topic) == (True, True, True)


@pytest.mark.parametrize("command", [["list"], ["describe", "g"], ["reset-offsets", "g"], ["delete", "g"],
                                     ["delete-offsets", "g"], ["alter-config", "g"], ["remove-members", "g"],
                                     ["watch"]])
def test_timeout_is_kafkas_name_for_the_request_timeout(command) -> None:
    extra = ["--to-earliest"] if command[0] == "reset-offsets" else []
    extra += ["--instance-id", "i"] if command[0] == "remove-members" else []
    extra += ["--topic", "t"] if command[0] == "delete-offsets" else []
    assert parse("groups", *command, *extra, "--timeout", "1500").request_timeout_ms == 1500


def test_version_is_printed_by_every_group_command(capsys) -> None:
    for command in (["groups", "list"], ["groups", "describe"], ["groups", "reset-offsets"], ["groups", "delete"], []):
        assert main([*command, "--version"]) == 0
        assert capsys.readouterr().out.startswith("kgroup ")


def test_reset_to_another_groups_offsets_and_to_epoch_milliseconds() -> None:
    args = parse("groups", "reset-offsets", "g", "--to-group", "source")
    assert args.to_group == "source" and not args.topic
    assert parse("groups", "reset-offsets", "g", "--all-topics", "--to-datetime", "1700000000123").to_datetime \
        == 1700000000123
    assert parse_datetime("1970-01-01T00:00:01Z") == 1000 and parse_datetime("1000") == 1000
    refused("groups", "reset-offsets", "g", "--to-group", "a", "--to-latest")


def test_offset_delete_file_takes_rpks_lines() -> None:
    assert read_partition_list("t 1\nt,0\n\nu 3\n") == {"t": [0, 1], "u": [3]}
    for bad in ("t\n", "t x\n", ""):
        with pytest.raises(ValueError):
            read_partition_list(bad)


def test_a_mistake_is_one_line_on_stderr(capsys) -> None:
    assert main(["groups", "reset-offsets", "g", "--topic", "t", "--to-earlist"]) == 2
    err = capsys.readouterr().err
    assert err == ("kgroup: error: unknown option --to-earlist for groups reset-offsets (did you mean "
                   "--to-earliest?) — see `kgroup groups reset-offsets --help`\n")
