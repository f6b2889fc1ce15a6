"""A custom consumer assignor object in the classic member: its user data goes out with
every JoinGroup, its assign runs in the leader, its on_assignment gets the whole assignment
(user data too) before the listener; an assignor that raises makes the member fatal."""

from __future__ import annotations

from kgroup.assignors import (
    EAGER,
    Assignment,
    decode_assignment,
    decode_subscription,
    encode_assignment,
)
from kgroup.error_codes import ErrorCode as E
from kgroup.member import (
    RunAssigned,
    RunOnAssignment,
    SendJoinGroup,
    SendSyncGroup,
    SyncGroupAnswered,
)
from tests.unit.member.memberctx import MemberCtx, members_meta


class Echo:
    """Gives every member all partitions of its first topic, with user data."""

    name = "echo"
    supported_protocols = (EAGER,)

    def __init__(self, fail: bool = False) -> None:
        self.seen: dict = {}
        self.fail = fail

    def subscription_user_data(self, topics):
        return ("|".join(topics)).encode()

    def assign(self, members, partitions_per_topic, partition_racks=None):
        if self.fail:
            raise TypeError("broken assignor")
        self.seen = {m: c.subscription.user_data for m, c in members.items()}
        out = {}
        for m, c in sorted(members.items()):
            t = c.subscription.topics[0]
            out[m] = Assignment(((t, tuple(range(partitions_per_topic[t]))),), f"for {m}".encode())
        return out

    def on_assignment(self, assignment, generation):  # called by the driver, not the member
        raise AssertionError("the member only asks for it")


def test_user_data_goes_out_and_the_leader_assigns_with_the_object():
    echo = Echo()
    ctx = MemberCtx(assignors=(echo, "range"))
    ctx.subscribe("t", "u")
    join = ctx.last(SendJoinGroup)
    assert [n for n, _ in join.protocols] == ["echo", "range"]
    assert decode_subscription(join.protocols[0][1]).user_data == b"t|u"
    assert decode_subscription(join.protocols[1][1]).user_data is None
    out = ctx.join_ok(member_id="a", leader="a", members=members_meta(["a"], ("t",)), protocol="echo")
    sync = out[0]
    assert isinstance(sync, SendSyncGroup)
    got = decode_assignment(dict(sync.assignments)["a"])
    assert got.partitions == (("t", (0, 1, 2, 3)),) and got.user_data == b"for a"


def test_on_assignment_gets_the_whole_assignment_before_the_listener():
    ctx = MemberCtx(assignors=(Echo(),))
    ctx.subscribe("t")
    ctx.join_ok(protocol="echo")
    raw = encode_assignment(Assignment((("t", (1,)),), b"routing table"), 1)
    out = ctx.send(SyncGroupAnswered(ctx.last(SendSyncGroup).request_id, E.NONE, ctx.now, raw))
    assert [type(a) for a in out] == [RunOnAssignment, RunAssigned]
    assert out[0].assignment.user_data == b"routing table" and out[0].generation == 1
    assert out[0].protocol == "echo"


def test_builtin_assignors_have_no_on_assignment_action():
    ctx = MemberCtx()
    ctx.subscribe("t")
    ctx.join_ok()
    assert [type(a) for a in ctx.sync_ok({"t": [0]})] == [RunAssigned]


def test_an_assignor_that_raises_makes_the_member_fatal_not_its_driver_crash():
    ctx = MemberCtx(assignors=(Echo(fail=True),))
    ctx.subscribe("t")
    out = ctx.join_ok(member_id="a", leader="a", members=members_meta(["a"]), protocol="echo")
    assert [type(a).__name__ for a in out] == ["Fatal"] and "broken assignor" in out[0].message
