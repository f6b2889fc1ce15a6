"""A partition's leader-epoch history (storage/leader_epochs.py): the leader epoch is the
ownership epoch less one (0 on a single broker, whatever it does), each takeover begins a
new epoch at the log end, written into the new epoch directory before anything is appended
and carried over by every later takeover; appended batches carry the epoch."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from batch_builder import make_batch

from kgroup.storage import leader_epochs
from kgroup.storage.data_dir import DataDir, NodeMembership
from kgroup.storage.epoch_dirs import epoch_dir_name
from kgroup.storage.errors import CorruptDataError

from tests.unit.closing import closed_after_test

NODES = (0, 1, 2)


def node(path: Path, me: int) -> DataDir:
    # closed after the test: scenarios drop nodes to stand for kill -9
    return closed_after_test(DataDir(path, metadata_partitions=4, membership=NodeMembership(NODES, me, exclusive=False)))


def take(d: DataDir, slot: int) -> int:
    epoch = d.acquire(slot)
    assert epoch is not None
    d.open_unit(slot, epoch)
    return epoch


def stamped_epochs(plog, *offsets: int) -> list[int]:
    """The partition leader epoch field (bytes 12..16) of the batch read at each offset."""
    return [struct.unpack_from(">i", plog.read(o, 1 << 20), 12)[0] for o in offsets]


def test_assign_replaces_what_the_new_epoch_supersedes():
    assert leader_epochs.assign([(0, 0)], 1, 5) == [(0, 0), (1, 5)]
    assert leader_epochs.assign([(0, 0), (1, 5)], 2, 5) == [(0, 0), (2, 5)]   # nothing written at 1
    assert leader_epochs.assign([(0, 0)], 1, 0) == [(1, 0)]                   # an empty log
    assert leader_epochs.assign([(0, 0), (1, 5)], 1, 5) == [(0, 0), (1, 5)]   # again: unchanged


def test_the_effective_history_starts_at_the_log_start():
    assert leader_epochs.effective([], 7) == [(0, 7)]
    assert leader_epochs.effective([(0, 0), (1, 5), (2, 9)], 6) == [(1, 6), (2, 9)]
    assert leader_epochs.effective([(0, 0), (1, 5)], 0) == [(0, 0), (1, 5)]


def test_leader_epoch_of_an_ownership_epoch():
    assert [leader_epochs.leader_epoch_of(e) for e in (0, 1, 2, 5)] == [0, 0, 1, 4]


def test_the_file_round_trips_and_a_bad_one_is_refused(tmp_path: Path):
    assert leader_epochs.read(tmp_path) == []
    leader_epochs.write(tmp_path, [(0, 0), (3, 17)])
    assert leader_epochs.read(tmp_path) == [(0, 0), (3, 17)]
    (tmp_path / leader_epochs.LEADER_EPOCHS_FILE).write_text("garbage\n")
    with pytest.raises(CorruptDataError):
        leader_epochs.read(tmp_path)


def test_a_single_broker_stays_at_epoch_zero_across_restarts(tmp_path: Path):
    for _ in range(3):
        d = DataDir(tmp_path)
        if "t" not in d.topics():
            d.create_topic("t", 1)
        plog = d.partition_log("t", 0)
        plog.append(make_batch([b"x"]))
        plog.sync()
        assert plog.leader_epoch == 0 and d.leader_epoch(d.topic("t").slots[0]) == 0
        assert plog.leader_epoch_history() == [(0, 0)]
        d.close()
    d = DataDir(tmp_path)
    assert stamped_epochs(d.partition_log("t", 0), 0, 1, 2) == [0, 0, 0]
    d.close()


def test_each_takeover_begins_an_epoch_at_the_log_end_and_keeps_the_history(tmp_path: Path):
    a, b, c = node(tmp_path, 0), node(tmp_path, 1), node(tmp_path, 2)
    slot = a.create_topic("orders", 1).slots[0]
    assert b.refresh_topics() and c.refresh_topics()
    take(a, slot)
    first = a.partition_log("orders", 0)
    first.append(make_batch([b"a", b"b", b"c"]))
    first.sync()
    assert first.leader_epoch == 0 and c.leader_epoch(slot) == 0
    assert take(b, slot) == 2
    second = b.partition_log("orders", 0)
    assert second.leader_epoch == 1 and c.leader_epoch(slot) == 1   # every node sees it
    assert second.leader_epoch_history() == [(0, 0), (1, 3)]
    second.append(make_batch([b"d"]))
    second.sync()
    b.close_unit(slot, release=True)
    assert take(c, slot) == 3
    third = c.partition_log("orders", 0)
    assert third.leader_epoch_history() == [(0, 0), (1, 3), (2, 4)]
    third.append(make_batch([b"e"]))
    third.sync()
    assert stamped_epochs(third, 0, 3, 4) == [0, 1, 2]
    directory = tmp_path / "topics" / "orders-0" / epoch_dir_name(slot, 3)
    assert leader_epochs.read(directory) == [(0, 0), (1, 3), (2, 4)]
    # A restart of the owner resumes epoch 3 with the same history (read from e3/).
    c.close()
    c2 = DataDir(tmp_path, metadata_partitions=4, membership=NodeMembership(NODES, 2, exclusive=False))
    take(c2, slot)
    again = c2.partition_log("orders", 0)
    assert again.leader_epoch == 2 and again.leader_epoch_history() == [(0, 0), (1, 3), (2, 4)]
