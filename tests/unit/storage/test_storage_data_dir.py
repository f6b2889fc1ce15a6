"""DataDir: lock, topic metadata, partition logs and the group-metadata log together."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from batch_builder import base_offset_of, make_batch

from kgroup.storage.data_dir import DataDir
from kgroup.storage.errors import (
    CorruptDataError,
    DataDirLockedError,
    StorageConfigError,
    StorageError,
    TopicError,
)


def test_second_open_of_a_locked_dir_says_who_holds_it(tmp_path: Path) -> None:
    with DataDir(tmp_path, metadata_partitions=3):
        with pytest.raises(DataDirLockedError, match=f"{tmp_path}.*pid {os.getpid()}"):
            DataDir(tmp_path, metadata_partitions=3)
    DataDir(tmp_path, metadata_partitions=3).close()  # released on close


def test_topics_survive_reopen_with_their_data(tmp_path: Path) -> None:
    tid = uuid.uuid4()
    with DataDir(tmp_path, metadata_partitions=3) as dd:
        meta = dd.create_topic("orders", 2, {"retention.ms": "1000"}, topic_id=tid)
        assert meta.topic_id == tid
        dd.partition_log("orders", 1).append(make_batch([b"a", b"b"]))
        dd.metadata_log.for_group("g").append(b"commit")
        dd.sync()
    with DataDir(tmp_path, metadata_partitions=3) as dd:
        assert dd.topics()["orders"].topic_id == tid
        assert dd.topic("orders").configs == {"retention.ms": "1000"}
        plog = dd.partition_log("orders", 1)
        assert plog.config.retention_ms == 1000
        assert plog.log_end_offset == 2 and base_offset_of(plog.read(0, 100)) == 0
        assert list(dd.metadata_log.for_group("g").load().tail) == [(0, b"commit")]
    assert (tmp_path / "topics" / "orders-0").is_dir()
    assert (tmp_path / "topics.json").is_file()


def test_topic_misuse_raises_topic_errors(tmp_path: Path) -> None:
    with DataDir(tmp_path, metadata_partitions=1) as dd:
        dd.create_topic("t", 1)
        with pytest.raises(TopicError, match="already exists"):
            dd.create_topic("t", 1)
        with pytest.raises(TopicError, match="illegal"):
            dd.create_topic("bad/name", 1)
        with pytest.raises(TopicError, match="unknown"):
            dd.partition_log("t", 5)
        with pytest.raises(TopicError):
            dd.create_partitions("t", 1)
        with pytest.raises(StorageError, match="segment.bytes"):
            dd.create_topic("u", 1, {"segment.bytes": "big"})
        assert "u" not in dd.topics()


def test_create_partitions_and_delete_topic(tmp_path: Path) -> None:
    with DataDir(tmp_path, metadata_partitions=1) as dd:
        dd.create_topic("a", 1)
        dd.create_topic("a-1", 1)  # its directory "a-1-0" does not clash with "a"'s
        dd.create_partitions("a", 3)
        dd.partition_log("a", 2).append(make_batch([b"x"]))
        dd.delete_topic("a")
        assert sorted(p.name for p in (tmp_path / "topics").iterdir()) == ["a-1-0"]
        dd.create_topic("a", 1)  # recreated empty
        assert dd.partition_log("a", 0).log_end_offset == 0


def test_orphan_partition_dirs_are_removed_on_open(tmp_path: Path) -> None:
    with DataDir(tmp_path, metadata_partitions=1) as dd:
        dd.create_topic("keep", 1)
    (tmp_path / "topics" / "gone-0").mkdir()
    (tmp_path / "topics" / "keep-7").mkdir()
    (tmp_path / "topics" / "old-0.abc-delete").mkdir()
    with DataDir(tmp_path, metadata_partitions=1):
        pass
    assert sorted(p.name for p in (tmp_path / "topics").iterdir()) == ["keep-0"]


def test_missing_topics_file_with_partition_dirs_is_refused(tmp_path: Path) -> None:
    with DataDir(tmp_path, metadata_partitions=1) as dd:
        dd.create_topic("t", 1)
    (tmp_path / "topics.json").unlink()
    with pytest.raises(CorruptDataError, match="topics.json is missing"):
        DataDir(tmp_path, metadata_partitions=1)
    # and the failed open released the lock
    (tmp_path / "topics" / "t-0").rename(tmp_path / "elsewhere")
    DataDir(tmp_path, metadata_partitions=1).close()


def test_corrupt_topics_file_is_a_storage_error(tmp_path: Path) -> None:
    DataDir(tmp_path, metadata_partitions=1).close()
    (tmp_path / "topics.json").write_text("{not json")
    with pytest.raises(CorruptDataError, match="topics.json"):
        DataDir(tmp_path, metadata_partitions=1)


def test_metadata_partition_count_is_fixed(tmp_path: Path) -> None:
    DataDir(tmp_path, metadata_partitions=4).close()
    with pytest.raises(StorageConfigError, match="4 partitions"):
        DataDir(tmp_path, metadata_partitions=50)


def test_retention_over_all_partitions(tmp_path: Path) -> None:
    with DataDir(tmp_path, metadata_partitions=1) as dd:
        dd.create_topic("t", 2, {"segment.bytes": "100", "retention.ms": "10"})
        for p in range(2):
            for ts in (0, 1, 100):
                dd.partition_log("t", p).append(make_batch([b"x" * 30], base_timestamp=ts))
        assert dd.apply_retention(now_ms=50) == 4
        assert dd.partition_log("t", 0).log_start_offset == 2
