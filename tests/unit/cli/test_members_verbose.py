"""What `kgroup groups describe --members [--verbose]` prints and puts in its JSON, from a
described group (cli/group_tools.py's tables): Kafka 4.4's columns for consumer, classic,
mixed (UPGRADED) and share groups."""

from __future__ import annotations

import io

from kgroup.cli.group_tools import _Described, _document, _print_members
from kgroup.cli.member_payloads import kafka_assignment
from kgroup.client.admin import GroupDescription, MemberDescription


def member(mid: str, assignment, *, instance=None, epoch=None, target=None, upgraded=None, client="c",
           metadata=b"", assignment_bytes=b"") -> MemberDescription:
    return MemberDescription(mid, instance, client, "/10.0.0.1", metadata, assignment_bytes, assignment,
                             member_epoch=epoch, target_assignment=target, upgraded=upgraded)


def cells(desc: GroupDescription, verbose: bool) -> list[list[str]]:
    """The table's non-blank cells per line (columns are two or more spaces apart)."""
    out = io.StringIO()
    _print_members(_Described(desc.group_id, desc, None, {}), out, verbose)
    return [[c.strip() for c in line.split("  ") if c.strip()] for line in out.getvalue().splitlines()]


CONSUMER = GroupDescription("g", "Reconciling", "consumer", "uniform", (
    member("m1", {"b": (2,), "a": (1, 0)}, instance="i-1", epoch=7, target={"a": (0, 1), "b": (2,)}, upgraded=True),
    member("m2", {}, epoch=6, target={"a": (3,)}, upgraded=True),
), group_type="consumer", epoch=8, assignment_epoch=8)


def test_kafkas_assignment_text_sorts_partitions_and_topics():
    assert kafka_assignment({"b": (2,), "a": (10, 1, 0)}) == "a:0,1,10;b:2"
    assert kafka_assignment({}) == "" and kafka_assignment({"a": ()}) == ""


def test_consumer_group_verbose_has_kip_848_epochs_and_target_assignment():
    assert cells(CONSUMER, True) == [
        ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
         "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"],
        ["g", "m1", "i-1", "/10.0.0.1", "c", "3", "7", "a:0,1;b:2", "8", "a:0,1;b:2"],
        # No instance id: a blank cell, as Kafka's tool; nothing assigned yet: `-`.
        ["g", "m2", "/10.0.0.1", "c", "0", "6", "-", "8", "a:3"],
    ]
    # The blank GROUP-INSTANCE-ID keeps its column (the cells after it line up).
    out = io.StringIO()
    _print_members(_Described("g", CONSUMER, None, {}), out, True)
    head, _, second = out.getvalue().splitlines()
    assert head.index("HOST") == second.index("/10.0.0.1")
    assert cells(CONSUMER, False)[0] == ["GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID",
                                         "#PARTITIONS"]


def test_classic_group_has_no_epochs_nor_target_and_no_instance_column_without_static_members():
    desc = GroupDescription("k", "Stable", "consumer", "range", (
        member("k1-x", {"t": (0, 1)}, metadata=b"12345", assignment_bytes=b"123"),), group_type="classic")
    assert cells(desc, True) == [
        ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH", "CURRENT-ASSIGNMENT",
         "TARGET-EPOCH", "TARGET-ASSIGNMENT"],
        ["k", "k1-x", "/10.0.0.1", "c", "2", "-", "t:0,1", "-", "-"]]
    (m,) = _document(_Described("k", desc, None, {}))["members"]
    assert (m["current_epoch"], m["current_assignment"], m["target_epoch"], m["target_assignment"], m["upgraded"],
            m["metadata_bytes"], m["assignment_bytes"]) == (None, "t:0,1", None, None, None, 5, 3)


def test_upgraded_column_only_when_a_consumer_group_has_members_of_both_protocols():
    mixed = GroupDescription("g", "Stable", "consumer", "uniform", (
        member("m1", {"a": (0,)}, epoch=3, target={"a": (0,)}, upgraded=True),
        member("m2", {"a": (1,)}, epoch=3, target={"a": (1,)}, upgraded=False),
    ), group_type="consumer", epoch=3, assignment_epoch=3)
    rows = cells(mixed, True)
    assert rows[0][-1] == "UPGRADED" and [r[-1] for r in rows[1:]] == ["true", "false"]
    assert "UPGRADED" not in cells(mixed, False)[0] and "UPGRADED" not in cells(CONSUMER, True)[0]


def test_share_group_shows_kafka_share_groups_columns_sorted_by_member():
    desc = GroupDescription("s", "Stable", "share", "simple", (
        member("zz", {"t": (2, 0)}, epoch=4), member("aa", {}, epoch=5)), group_type="share", epoch=5)
    assert cells(desc, True) == [
        ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "MEMBER-EPOCH", "ASSIGNMENT"],
        ["s", "aa", "/10.0.0.1", "c", "0", "5"],
        ["s", "zz", "/10.0.0.1", "c", "2", "4", "t:0,2"]]
    assert cells(desc, False)[0] == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"]
    doc = _document(_Described("s", desc, None, {}, share_lag={}))
    assert [(m["consumer_id"], m["current_epoch"], m["target_epoch"]) for m in doc["members"]] == [
        ("zz", 4, None), ("aa", 5, None)]


def streams_member(mid: str, process: str, active: dict, standby: dict, target: dict | None = None) -> MemberDescription:
    tasks = {"active": active, "standby": standby, "warmup": {}}
    return MemberDescription(mid, None, "app-client", "/10.0.0.1", b"", b"", {}, member_epoch=4, process_id=process,
                             topology_epoch=0, tasks=tasks, target_tasks=target or tasks)


def test_streams_group_members_read_as_kafka_streams_groups_sh():
    # The rows Kafka 4.4's kafka-streams-groups.sh --describe --members [--verbose] printed for
    # this group (two members, a stateful subtopology 0 with one standby; runs of blanks folded).
    desc = GroupDescription("app", "Stable", "streams", "", (
        streams_member("m0", "p0", {"0": (0,), "1": (0,)}, {"0": (1,)}),
        streams_member("m1", "p1", {"0": (1,), "1": (1,)}, {"0": (0,)},
                       {"active": {"0": (1, 2), "1": (1,)}, "standby": {}, "warmup": {"0": (0,)}}),
    ), group_type="streams", epoch=4, assignment_epoch=4)
    assert cells(desc, False) == [
        ["GROUP", "MEMBER", "PROCESS", "CLIENT-ID", "ASSIGNMENTS"],
        ["app", "m0", "p0", "app-client", "ACTIVE: 0:[0]; 1:[0]; STANDBY: 0:[1];"],
        ["app", "m1", "p1", "app-client", "ACTIVE: 0:[1]; 1:[1]; STANDBY: 0:[0];"],
    ]
    assert cells(desc, True) == [
        ["GROUP", "TARGET-ASSIGNMENT-EPOCH", "TOPOLOGY-EPOCH", "MEMBER", "MEMBER-PROTOCOL", "MEMBER-EPOCH", "PROCESS",
         "CLIENT-ID", "ASSIGNMENTS"],
        ["app", "4", "0", "m0", "streams", "4", "p0", "app-client",
         "ACTIVE: 0:[0]; 1:[0]; STANDBY: 0:[1]; TARGET-ACTIVE: 0:[0]; 1:[0]; TARGET-STANDBY: 0:[1];"],
        ["app", "4", "0", "m1", "streams", "4", "p1", "app-client",
         "ACTIVE: 0:[1]; 1:[1]; STANDBY: 0:[0]; TARGET-ACTIVE: 0:[1,2]; 1:[1]; TARGET-WARMUP: 0:[0];"],
    ]
    # The JSON document carries each member's process and tasks by kind.
    (_, second) = _document(_Described("app", desc, None, {}))["members"]
    assert second["process_id"] == "p1" and second["tasks"]["standby"] == {"0": [0]}
    assert second["target_tasks"]["warmup"] == {"0": [0]}
