"""Takeover of a unit by another node of a cluster sharing one data dir: fencing at the
append site, sealing of the previous epoch, resume, topic changes seen by every node.

Each "node" is a DataDir with its own NodeMembership in this process (the files and the mapped
epoch table behave as between processes). A node that loses a unit and keeps writing is a
zombie: what it writes after the takeover must never be read back, and must never be
acknowledged.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from batch_builder import make_batch
from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.storage import epoch_dirs
from kgroup.storage.data_dir import DataDir, NodeMembership
from kgroup.storage.errors import FencedError, NotOwnedError, TopicError
from kgroup.storage.record_log import RecordLog

from tests.unit.closing import closed_after_test

NODES = (0, 1, 2)


def node(path: Path, me: int, **kw) -> DataDir:
    # closed after the test: scenarios drop nodes to stand for kill -9
    return closed_after_test(DataDir(path, metadata_partitions=4, membership=NodeMembership(NODES, me, exclusive=False), **kw))


def take(d: DataDir, slot: int) -> int:
    epoch = d.acquire(slot)
    assert epoch is not None
    d.open_unit(slot, epoch)
    return epoch


def records(part) -> list[bytes]:
    return [p for _, p in part.load().tail]


def owned_with(d: DataDir, slot: int, *payloads: bytes):
    """`d` takes group-metadata unit `slot` and appends `payloads`, acknowledged (synced)."""
    take(d, slot)
    part = d.metadata_log.partition(slot)
    for payload in payloads:
        part.append(payload)
    part.sync()
    return part


def test_the_new_owner_reads_everything_acknowledged_and_the_zombie_is_fenced(tmp_path: Path) -> None:
    a, b = node(tmp_path, 0), node(tmp_path, 1)
    part = owned_with(a, 2, *(b"r%d" % i for i in range(5)))   # acknowledged
    assert part.log.fence.epoch == 1 and part.durable_end == 5
    part.append(b"buffered, never flushed")   # lost with the process, like kill -9
    assert take(b, 2) == 2                    # b takes over: epoch 2 is published
    with pytest.raises(FencedError):
        part.sync()                           # the zombie's write is refused before write(2)
    with pytest.raises(FencedError):
        part.append(b"later")
    assert records(b.metadata_log.partition(2)) == [b"r%d" % i for i in range(5)]
    a.close_unit(2)
    with pytest.raises(NotOwnedError):
        a.metadata_log.partition(2)


def test_bytes_a_zombie_writes_after_the_seal_are_never_read(tmp_path: Path) -> None:
    a, b, c = node(tmp_path, 0), node(tmp_path, 1), node(tmp_path, 2)
    part = owned_with(a, 0, b"acked")
    segment = part.log._segments[-1]
    take(b, 0)
    # The zombie was past its fence check when it paused: its bytes land after the seal
    # (in the file b now shares by a hard link), and in a segment it rolled to in its own
    # directory (which b then failed to remove).
    os.pwrite(segment.fd, b"\x00\x00\x00\x05junk!garbage", segment.size)
    segment.path.parent.mkdir(exist_ok=True)
    (segment.path.parent / "00000000000000000099.log").write_bytes(b"zombie segment")
    b.metadata_log.partition(0).append(b"from b")
    b.metadata_log.partition(0).sync()
    assert records(b.metadata_log.partition(0)) == [b"acked", b"from b"]
    b.close_unit(0)
    assert take(c, 0) == 3                    # and so does every later owner
    assert records(c.metadata_log.partition(0)) == [b"acked", b"from b"]


def test_a_write_that_races_the_takeover_is_not_acknowledged(tmp_path: Path) -> None:
    a, b = node(tmp_path, 0), node(tmp_path, 1)
    take(a, 1)
    log = a.metadata_log.partition(1).log

    class TakeoverDuringWrite:
        """Passes the check before the write, then b takes over (as if a paused there)."""

        def __init__(self, real):
            self.real, self.calls = real, 0

        def check(self):
            self.calls += 1
            if self.calls == 2:
                take(b, 1)
            self.real.check()

    log.fence = TakeoverDuringWrite(log.fence)
    log.append(b"raced")
    with pytest.raises(FencedError):
        log.flush()                            # written, but the check after the write fails
    assert log.fenced
    with pytest.raises(FencedError):
        log.sync()


def test_an_fsync_that_completes_after_a_takeover_reports_nothing_durable(tmp_path: Path) -> None:
    a, b = node(tmp_path, 0), node(tmp_path, 1)
    take(a, 3)
    part = a.metadata_log.partition(3)
    part.append(b"x")
    part.flush()
    take(b, 3)                                 # between the write and the fsync
    with pytest.raises(FencedError):
        part.sync()
    assert part.durable_end == 0
    assert records(b.metadata_log.partition(3)) == [b"x"]   # inside the seal: consistent


def test_a_torn_tail_of_the_previous_owner_is_read_up_to_its_last_frame_not_cut(tmp_path: Path) -> None:
    a, b = node(tmp_path, 0), node(tmp_path, 1)
    part = owned_with(a, 0, b"whole")
    segment = part.log._segments[-1]
    os.pwrite(segment.fd, b"\x00\x00\x00\x20torn", segment.size)   # a frame cut short by kill -9
    size = os.fstat(segment.fd).st_size
    take(b, 0)
    assert records(b.metadata_log.partition(0)) == [b"whole"]
    assert os.fstat(segment.fd).st_size == size   # not b's file to cut


def test_a_name_deleted_by_a_zombie_after_it_was_opened_is_copied(tmp_path: Path) -> None:
    a, b = node(tmp_path, 0), node(tmp_path, 1)
    part = owned_with(a, 1, b"keep me")
    segment = part.log._segments[-1].path
    epoch = b.acquire(1)
    plan = epoch_dirs.prepare(tmp_path / "group-metadata" / "1", 1, epoch)
    os.unlink(segment)                          # the zombie prunes it now
    log = RecordLog(plan.directory, plan=plan, fence=b.table.fence(1, 1, epoch))
    assert [p for _, p in log.read_from(0)] == [b"keep me"]
    assert log.directory.name == f"u1-e{epoch}"


def test_snapshots_past_the_seal_are_not_inherited(tmp_path: Path) -> None:
    a, b = node(tmp_path, 0), node(tmp_path, 1)
    take(a, 0)
    part = a.metadata_log.partition(0)
    for i in range(4):
        part.append(b"r%d" % i)
    part.write_snapshot(2, [b"state@2"])
    part.sync()
    # A snapshot for offsets the sealed log does not have (written from state that the
    # new owner will never see).
    (part.directory / "00000000000000000009.snapshot").write_bytes(b"not even valid")
    take(b, 0)
    mine = b.metadata_log.partition(0)
    assert mine.snapshots.offsets() == [2]
    replay = mine.load()
    assert list(replay.snapshot) == [b"state@2"]
    assert [p for _, p in replay.tail] == [b"r2", b"r3"]


def test_a_restarted_node_resumes_its_own_epoch_and_cuts_its_own_torn_tail(tmp_path: Path) -> None:
    a = node(tmp_path, 0)
    part = owned_with(a, 2, b"one")
    assert part.log.fence.epoch == 1
    segment = part.log._segments[-1].path
    a.close()
    with open(segment, "ab") as f:
        f.write(b"\x00\x00\x00\x20torn")
    a = node(tmp_path, 0)                       # the same node again: nobody else wrote epoch 1
    assert take(a, 2) == 1
    assert segment.stat().st_size == 8 + 3      # its own file: cut
    assert records(a.metadata_log.partition(2)) == [b"one"]


def test_a_released_unit_is_taken_at_the_next_epoch_with_nothing_lost(tmp_path: Path) -> None:
    a, b = node(tmp_path, 0), node(tmp_path, 1)
    part = owned_with(a, 1, b"handed over")
    a.close_unit(1, release=True)
    assert b.table.released(1, 0) == 1
    assert take(b, 1) == 2
    assert records(b.metadata_log.partition(1)) == [b"handed over"]
    # And back: a takes epoch 3 (b released), b's epoch directory is sealed in turn.
    b.metadata_log.partition(1).append(b"from b")
    b.metadata_log.partition(1).sync()
    b.close_unit(1, release=True)
    assert take(a, 1) == 3
    assert records(a.metadata_log.partition(1)) == [b"handed over", b"from b"]
    assert sorted(p.name for p in (tmp_path / "group-metadata" / "1").iterdir()) == ["u1-e3"]


def test_a_log_from_before_clusters_is_adopted_by_the_first_epoch(tmp_path: Path) -> None:
    legacy = RecordLog(tmp_path / "group-metadata" / "0")
    legacy.append(b"old")
    legacy.sync()
    legacy.close()
    (tmp_path / "group-metadata" / "partitions.json").write_text('{"num_partitions": 4}')
    a = node(tmp_path, 0)
    take(a, 0)
    assert records(a.metadata_log.partition(0)) == [b"old"]
    assert sorted(p.name for p in (tmp_path / "group-metadata" / "0").iterdir()) == ["u0-e1"]


def test_topic_partitions_are_fenced_and_sealed_like_metadata(tmp_path: Path) -> None:
    a, b = node(tmp_path, 0), node(tmp_path, 1)
    meta = a.create_topic("orders", 2)
    assert b.refresh_topics()                    # b sees the new topic
    assert b.topic("orders").slots == meta.slots
    slot = meta.slots[1]
    take(a, slot)
    plog = a.partition_log("orders", 1)
    plog.append(make_batch([b"a", b"b"]))
    plog.sync()
    with pytest.raises(NotOwnedError):
        b.partition_log("orders", 1)
    take(b, slot)
    with pytest.raises(FencedError):
        plog.append(make_batch([b"zombie"]))
    mine = b.partition_log("orders", 1)
    assert mine.log_end_offset == 2
    assert mine.append(make_batch([b"c"])) == 2


def test_deleting_a_topic_fences_its_owner_and_a_new_topic_of_that_name_starts_empty(tmp_path: Path) -> None:
    a, b = node(tmp_path, 0), node(tmp_path, 1)
    meta = a.create_topic("t", 1)
    take(a, meta.slots[0])
    plog = a.partition_log("t", 0)
    plog.append(make_batch([b"old"]))
    plog.sync()
    b.refresh_topics()
    b.delete_topic("t")                          # from the other node
    with pytest.raises(FencedError):
        plog.append(make_batch([b"zombie"]))
    assert a.acquire(meta.slots[0]) is None      # a deleted unit cannot be claimed
    new = b.create_topic("t", 1)
    assert new.slots != meta.slots
    a.refresh_topics()
    take(a, new.slots[0])
    assert a.partition_log("t", 0).log_end_offset == 0
    with pytest.raises(TopicError):
        a.delete_topic("missing")


def test_configs_and_growth_reach_the_other_nodes(tmp_path: Path) -> None:
    a, b = node(tmp_path, 0), node(tmp_path, 1)
    a.create_topic("t", 1)
    b.refresh_topics()
    take(b, b.topic("t").slots[0])
    a.set_topic_configs("t", {"retention.ms": "1234"})
    a.create_partitions("t", 3)
    assert not a.refresh_topics()                # its own change is already in its image
    assert b.refresh_topics()
    assert b.partition_log("t", 0).config.retention_ms == 1234
    assert len(set(b.topic("t").slots)) == 3


def test_a_bound_topic_partition_is_owned_with_its_metadata_partition(tmp_path: Path) -> None:
    bound = frozenset({"__events"})
    a = node(tmp_path, 0, bound_topics=bound)
    take(a, 3)                                   # before the topic exists
    meta = a.create_topic("__events", 4)
    assert meta.slots == (0, 1, 2, 3)
    a.partition_log("__events", 3).append(make_batch([b"e"]))   # opened in unit 3's epoch
    with pytest.raises(NotOwnedError):
        a.partition_log("__events", 2)
    with pytest.raises(TopicError, match="cannot be deleted"):
        a.delete_topic("__events")
    b = node(tmp_path, 1, bound_topics=bound)
    take(b, 3)
    with pytest.raises(FencedError):
        a.partition_log("__events", 3).sync()


# -- model: any interleaving of writes and takeovers ------------------------------------------

steps = st.lists(st.one_of(
    st.tuples(st.just("append"), st.integers(0, 2), st.integers(1, 4)),
    st.tuples(st.just("sync"), st.integers(0, 2)),
    st.tuples(st.just("flush"), st.integers(0, 2)),
    st.tuples(st.just("take"), st.integers(0, 2)),
    st.tuples(st.just("release"), st.integers(0, 2)),
), max_size=40)


@settings(max_examples=60, deadline=None)
@given(steps)
def test_model_every_acknowledged_record_survives_every_takeover(tmp_path_factory, plan) -> None:
    """Three nodes append, flush, sync, take over and hand over one unit in any order. A
    record counts as acknowledged when a flush or sync after it returned on its node (the
    broker answers after one or the other, by fsync policy). The owner at the end reads
    every acknowledged record, in the order they were written, and nothing a node tried to
    write after it lost the unit."""
    path = tmp_path_factory.mktemp("model")
    nodes = [node(path, i) for i in NODES]
    session: dict[int, list[bytes]] = {i: [] for i in NODES}   # appended since it took the unit
    acked: list[bytes] = []
    refused: set[bytes] = set()
    counter = 0
    try:
        take(nodes[0], 0)
        for kind, i, *rest in plan:
            d = nodes[i]
            if kind == "take":
                if 0 not in d.owned_units():
                    take(d, 0)
                    session[i] = []
                continue
            if 0 not in d.owned_units():
                continue
            part = d.metadata_log.partition(0)
            if kind == "append":
                for _ in range(rest[0]):
                    counter += 1
                    payload = b"n%d-%d" % (i, counter)
                    try:
                        part.append(payload)
                        session[i].append(payload)
                    except FencedError:
                        refused.add(payload)
                continue
            try:
                part.flush() if kind == "flush" else part.sync()
                acked.extend(w for w in session[i] if w not in acked)
            except FencedError:
                pass
            if kind == "release":
                d.close_unit(0, release=not part.log.fenced)
        for d in nodes:
            d.close_unit(0)
        take(nodes[0], 0)
        got = records(nodes[0].metadata_log.partition(0))
        assert not refused & set(got)
        positions = [got.index(r) for r in acked]
        assert positions == sorted(positions)
    finally:
        for d in nodes:
            d.close()
