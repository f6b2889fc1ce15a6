"""A JSON file shared by processes: changes under a lock, atomic replacement, change
detection by polling, and clear errors."""

from __future__ import annotations

import json
import multiprocessing
import os

import pytest

from kgroup.storage.errors import CorruptDataError, StorageError
from kgroup.storage.shared_file import SharedJsonFile


def _add(path: str, key: str, count: int) -> None:
    shared = SharedJsonFile(path)
    for i in range(count):
        with shared.changing() as doc:
            doc[f"{key}{i}"] = i


def test_changes_from_several_processes_all_land(tmp_path):
    path = tmp_path / "security" / "doc.json"
    procs = [multiprocessing.get_context("fork").Process(target=_add, args=(str(path), k, 30)) for k in "abc"]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    assert len(SharedJsonFile(path).read()) == 90


def test_a_reader_notices_changes_by_others_and_not_its_own(tmp_path):
    mine, theirs = SharedJsonFile(tmp_path / "d.json"), SharedJsonFile(tmp_path / "d.json")
    assert mine.read() == {} and not mine.changed()
    with mine.changing() as doc:
        doc["a"] = 1
    assert not mine.changed() and theirs.changed()
    assert theirs.read() == {"a": 1} and not theirs.changed()
    with theirs.changing() as doc:
        doc["b"] = 2
    assert mine.changed() and mine.read() == {"a": 1, "b": 2}


def test_an_unchanged_document_is_not_rewritten_and_a_failed_change_writes_nothing(tmp_path):
    shared = SharedJsonFile(tmp_path / "d.json", mode=0o600)
    with shared.changing() as doc:
        doc["a"] = 1
    before = os.stat(shared.path)
    with shared.changing():
        pass
    assert os.stat(shared.path).st_ino == before.st_ino
    assert before.st_mode & 0o777 == 0o600
    with pytest.raises(RuntimeError):
        with shared.changing() as doc:
            doc["a"] = 2
            raise RuntimeError("no")
    assert json.loads(shared.path.read_text()) == {"a": 1}


def test_corrupt_files_and_a_stuck_lock_are_named(tmp_path):
    path = tmp_path / "d.json"
    path.write_text("{not json")
    with pytest.raises(CorruptDataError, match="d.json"):
        SharedJsonFile(path).read()
    path.write_text("[1, 2]")
    with pytest.raises(CorruptDataError, match="JSON object"):
        SharedJsonFile(path).read()
    path.write_text("{}")
    import fcntl
    holder = os.open(str(path) + ".lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        with pytest.raises(StorageError, match="stayed locked"):
            with SharedJsonFile(path, lock_timeout_s=0.05).changing():
                pass
    finally:
        os.close(holder)
