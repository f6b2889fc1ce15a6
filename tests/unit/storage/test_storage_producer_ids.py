"""Producer ids from durable blocks: never handed out twice, by a restart or by two holders."""

from __future__ import annotations

import pytest

from kgroup.storage.errors import CorruptDataError
from kgroup.storage.producer_ids import ProducerIdBlocks


def test_ids_are_unique_across_restarts_and_blocks(tmp_path):
    first = ProducerIdBlocks(tmp_path, first=5000, block=10)
    a = [first.next() for _ in range(25)]                 # three blocks
    second = ProducerIdBlocks(tmp_path, first=0, block=10)  # a restart: the file, not `first`, counts
    b = [second.next() for _ in range(5)]
    assert a[0] == 5000 and len(set(a + b)) == 30 and min(b) >= 5030


def test_two_holders_sharing_a_directory_never_collide(tmp_path):
    one, two = ProducerIdBlocks(tmp_path, first=0, block=3), ProducerIdBlocks(tmp_path, first=0, block=3)
    ids = [h.next() for _ in range(10) for h in (one, two)]
    assert len(set(ids)) == len(ids)


def test_a_damaged_file_is_refused(tmp_path):
    (tmp_path / "producer-ids").write_text("not a number")
    with pytest.raises(CorruptDataError):
        ProducerIdBlocks(tmp_path, first=0).next()
