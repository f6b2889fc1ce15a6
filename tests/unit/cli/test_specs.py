"""The operator argument parsers (specs.py), consume's record format, and the new options."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from kgroup.cli.errors import UsageError
from kgroup.cli.parser import build_parser
from kgroup.cli.record_format import compile_format
from kgroup.cli.specs import (
    OffsetSpec,
    TopicSpec,
    header_pair,
    offset_spec,
    parse_datetime,
    parse_duration,
    read_reset_plan,
    topic_spec,
)
from kgroup.client.admin import FetchedRecord


def parse(*argv: str):
    return build_parser().parse_args(list(argv))


@pytest.mark.parametrize(("text", "ms"), [
    ("PT30M", 1_800_000), ("P1DT2H", 93_600_000), ("PT0.5S", 500), ("PT1H30M10S", 5_410_000),
    ("P2D", 172_800_000), ("-PT1H", -3_600_000), ("pt10s", 10_000), ("PT1,25S", 1_250),
])
def test_durations_as_java_parses_them(text, ms):
    assert parse_duration(text) == ms


@pytest.mark.parametrize("text", ["P", "PT", "P1", "T1H", "1H", "30m", "PT1H2", ""])
def test_bad_durations(text):
    with pytest.raises(ValueError, match="invalid duration"):
        parse_duration(text)


def test_datetimes_with_a_zone_and_in_local_time():
    assert parse_datetime("2024-05-01T09:30:00Z") == 1_714_555_800_000
    assert parse_datetime("2024-05-01T09:30:00.123+02:00") == 1_714_548_600_123
    local = datetime(2024, 5, 1, 9, 30).astimezone()
    assert parse_datetime("2024-05-01T09:30:00") == int(local.timestamp() * 1000)
    with pytest.raises(ValueError, match="invalid date-time"):
        parse_datetime("yesterday")


def test_topics_offsets_and_headers():
    assert topic_spec("orders") == TopicSpec("orders")
    assert topic_spec("orders:2,0,2") == TopicSpec("orders", (0, 2))
    for bad in ("", ":1", "t:", "t:a", "t:-1"):
        with pytest.raises(ValueError):
            topic_spec(bad)
    assert offset_spec("earliest") == OffsetSpec("earliest") and offset_spec("latest") == OffsetSpec("latest")
    assert offset_spec("42") == OffsetSpec("offset", 42) and offset_spec("@1700") == OffsetSpec("timestamp", 1700)
    for bad in ("-1", "soon", "@x"):
        with pytest.raises(ValueError):
            offset_spec(bad)
    assert header_pair("trace=a=b") == ("trace", b"a=b")
    with pytest.raises(ValueError):
        header_pair("novalue")


def test_reset_plans_in_kafkas_two_csv_shapes():
    assert read_reset_plan("t,0,5\nt,1,7\n", ["g"]) == {"g": {("t", 0): 5, ("t", 1): 7}}
    assert read_reset_plan("a,t,0,5\nb,t,0,1\n", ["a", "b"]) == {"a": {("t", 0): 5}, "b": {("t", 0): 1}}
    for text, groups in (("t,0,5\n", ["a", "b"]), ("t,x,5\n", ["g"]), ("t,0\n", ["g"]), ("", ["g"])):
        with pytest.raises(ValueError):
            read_reset_plan(text, groups)


def test_record_format_placeholders_like_kcat():
    r = FetchedRecord("t", 1, 5, 1000, b"k", None, (("a", b"1"), ("b", None)))
    assert compile_format("%t/%p@%o %k=%v [%h] %T %K %S 100%%")(r) == "t/1@5 k= [a=1,b=] 1000 1 -1 100%\n"
    assert compile_format("%k\\t%v\\n")(r) == "k\t\n"
    with pytest.raises(ValueError, match="unknown placeholder '%x'"):
        compile_format("%x")


def test_reset_offsets_options():
    args = parse("groups", "reset-offsets", "--group", "a", "--group", "b", "--topic", "t:0,1", "--topic", "u",
                 "--shift-by", "-5", "--execute", "--export")
    assert (args.group, [s.topic for s in args.topic], args.topic[0].partitions) == (["a", "b"], ["t", "u"], (0, 1))
    assert (args.shift_by, args.execute, args.export, args.dry_run) == (-5, True, True, False)
    args = parse("groups", "reset-offsets", "g", "--all-topics", "--by-duration", "PT1H")
    assert (args.groups, args.all_topics, args.by_duration) == (["g"], True, 3_600_000)
    args = parse("groups", "reset-offsets", "--all-groups", "--all-topics", "--to-datetime", "2024-01-01T00:00:00Z")
    assert args.all_groups and args.to_datetime == int(datetime(2024, 1, 1, tzinfo=timezone.utc).timestamp() * 1000)


@pytest.mark.parametrize("argv", [
    ["groups", "reset-offsets", "g", "--topic", "t", "--to-earliest", "--to-current"],
    ["groups", "reset-offsets", "g", "--topic", "t", "--all-topics", "--to-earliest"],
    ["groups", "reset-offsets", "g", "--topic", "t", "--to-earliest", "--dry-run", "--execute"],
    ["groups", "reset-offsets", "g", "--topic", "t", "--shift-by", "x"],
    ["groups", "reset-offsets", "g", "--topic", "t", "--to-offset", "-3"],
    ["groups", "describe", "g", "--members", "--state"],
    ["groups", "list", "--format", "yaml"],
    ["groups", "delete-offsets", "g"],
    ["consume", "t", "--format", "%q"],
])
def test_bad_tool_arguments(argv):
    with pytest.raises(UsageError):
        parse(*argv)


def test_describe_list_and_config_options():
    args = parse("groups", "describe", "a", "b", "--group", "c", "--members", "--verbose", "--format", "json")
    assert (args.groups, args.group, args.members, args.verbose, args.format) == (["a", "b"], ["c"], True, True,
                                                                                  "json")
    assert parse("topics", "list", "--format", "json").format == "json"
    args = parse("topics", "alter-config", "t", "--add-config", "retention.ms=1", "--delete-config", "segment.ms")
    assert (args.add_config, args.delete_config) == (["retention.ms=1"], ["segment.ms"])
    args = parse("produce", "t", "--header", "a=1", "--header", "b=2")
    assert args.header == [("a", b"1"), ("b", b"2")]
