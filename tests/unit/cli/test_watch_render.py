"""What `kgroup groups watch` draws, from what it fetched (cli/watch.py's pure renderers)."""

from __future__ import annotations

from kgroup.broker.observe.group_history import GroupHistory
from kgroup.cli.watch import GroupRow, GroupSnapshot, MemberRow, PartitionRow, render_group, render_groups
from tests.unit.broker.test_group_history import assigned, ev


def history() -> GroupHistory:
    h = GroupHistory()
    h.apply(ev("member_joined", 1_000, member="a-1", state="PreparingRebalance", generation=0))
    h.apply(ev("rebalance_started", 1_000, state="PreparingRebalance", generation=0, reason="member_joined"))
    h.apply(assigned("a-1", 1_020, 0, 1))
    h.apply(ev("rebalance_completed", 1_020, generation=1))
    h.apply(ev("member_joined", 5_000, member="b-1", state="PreparingRebalance"))
    h.apply(ev("rebalance_started", 5_000, state="PreparingRebalance", reason="member_joined"))
    return h


def snapshot() -> GroupSnapshot:
    return GroupSnapshot("g", "Stable", "consumer", "range", None, [
        MemberRow("a-1", "alpha", "/10.0.0.1", None, [("orders", 0)]),
        MemberRow("b-1", "beta", "/10.0.0.2", "i-b", [("orders", 1)]),
    ], [PartitionRow("orders", 0, "alpha", 5, 12), PartitionRow("orders", 1, "beta", None, 3)])


def test_one_group_shows_state_generation_members_lag_per_partition_and_rebalances():
    lines = render_group(snapshot(), "g", history().groups["g"], True)
    text = "\n".join(lines)
    assert lines[0] == "STATE Stable   PROTOCOL consumer/range   GENERATION 1   MEMBERS 2   LAG 7"
    assert any(line.split()[:4] == ["b-1", "beta", "/10.0.0.2", "i-b"] and line.endswith("orders-1")
               for line in lines)
    assert any(line.split() == ["orders", "0", "alpha", "5", "12", "7"] for line in lines)
    assert any(line.split() == ["orders", "1", "beta", "-", "3", "-"] for line in lines)   # nothing committed
    assert "LAST REBALANCES (from __kgroup_events)" in text
    rows = [line.split() for line in lines[lines.index("LAST REBALANCES (from __kgroup_events)") + 2:]]
    assert rows[0][1:] == ["...", "member", "joined", "in", "progress", "-", "-"]
    assert rows[1][1:] == ["1", "member", "joined", "20", "ms", "1", "0"]


def test_without_the_event_topic_the_history_says_so_and_a_consumer_group_shows_its_epoch():
    snap = snapshot()
    snap.epoch, snap.protocol_type, snap.protocol = 9, "consumer", "uniform"
    lines = render_group(snap, "g", None, False)
    assert lines[0].startswith("STATE Stable   PROTOCOL consumer/uniform   EPOCH 9   MEMBERS 2")
    assert lines[-1] == "LAST REBALANCES: not available (the broker has no __kgroup_events topic)"
    assert render_group(None, "ghost", None, True) == ["Group 'ghost' does not exist (yet): waiting for it to appear."]


def test_all_groups_list_members_lag_and_the_last_rebalance():
    h = history()
    h.apply(ev("rebalance_completed", 5_300, generation=2))
    lines = render_groups([GroupRow("g", "classic", "Stable", 2, 7), GroupRow("other", "consumer", "Empty", 0, None)],
                          3, h, True)
    assert lines[0].split() == ["GROUP", "TYPE", "STATE", "MEMBERS", "LAG", "REBALANCES", "LAST", "REBALANCE"]
    assert lines[1].split()[:6] == ["g", "classic", "Stable", "2", "7", "2"]
    assert lines[1].endswith("(300 ms, member joined)")
    assert lines[2].split() == ["other", "consumer", "Empty", "0", "-", "0", "-"]
    assert lines[3] == "... and 1 more (make the terminal taller, or name a GROUP)"
    assert render_groups([], 0, None, None) == ["No groups yet."]


def test_with_telemetry_each_member_shows_its_own_pushed_metrics():
    """--telemetry (KIP-714): the member whose client pushes shows its key metrics, the other '-'."""
    pushed = {"a-1": {"poll-idle-ratio-avg": 0.5, "commit-latency-avg": 12.25, "rebalance-total": 3.0}}
    lines = render_group(snapshot(), "g", None, True, pushed)
    head = next(line for line in lines if line.startswith("MEMBER-ID"))
    assert head.split()[-3:] == ["POLL-IDLE-RATIO", "COMMIT-LATENCY-AVG", "REBALANCES"]
    assert next(line for line in lines if line.startswith("a-1")).split()[-3:] == ["0.500", "12.250", "3"]
    assert next(line for line in lines if line.startswith("b-1")).split()[-3:] == ["-", "-", "-"]
