"""Ownership in the data dir: the epoch table, ownership records, node liveness files."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kgroup.storage.epoch_table import DELETED, EpochTable
from kgroup.storage.errors import FencedError, StorageError
from kgroup.storage.node_registry import NodeLockedError, NodeRegistry
from kgroup.storage.ownership import OwnershipRecords
from tests.integration.waits import hold, pace, wait_for

SRC = str(Path(__file__).resolve().parents[3] / "src")


# -- epoch table ----------------------------------------------------------------------------

def test_the_largest_published_epoch_owns_the_unit(tmp_path: Path) -> None:
    a = EpochTable(tmp_path / "epochs", 3)
    b = EpochTable(tmp_path / "epochs", 3)   # another process's mapping of the same file
    assert a.current(7) == (0, -1)
    a.publish(7, 0, 1)
    assert b.current(7) == (1, 0)
    b.publish(7, 2, 2)
    assert a.current(7) == (2, 2)
    # A node that won an older epoch and publishes late does not hide the newer one.
    a.publish(7, 1, 1)
    assert b.current(7) == (2, 2)


def test_a_fence_fails_once_another_node_publishes_a_newer_epoch(tmp_path: Path) -> None:
    a = EpochTable(tmp_path / "epochs", 2)
    b = EpochTable(tmp_path / "epochs", 2)
    a.publish(3, 0, 5)
    fence = a.fence(3, 0, 5)
    fence.check()
    assert fence.holds
    b.publish(3, 1, 6)
    assert not fence.holds
    with pytest.raises(FencedError, match="epoch 5"):
        fence.check()


def test_a_released_mark_is_cleared_when_the_node_publishes_again(tmp_path: Path) -> None:
    t = EpochTable(tmp_path / "epochs", 2)
    t.publish(0, 1, 4)
    t.release(0, 1, 4)
    assert t.released(0, 1) == 4
    t.publish(0, 1, 4)                      # resumed at the same epoch
    assert t.released(0, 1) == 0


def test_deleting_fences_every_owner(tmp_path: Path) -> None:
    a = EpochTable(tmp_path / "epochs", 2)
    b = EpochTable(tmp_path / "epochs", 2)
    a.publish(9, 0, 3)
    fence = a.fence(9, 0, 3)
    b.mark_deleted(9, 1)
    assert a.current(9) == (DELETED, 1)
    with pytest.raises(FencedError):
        fence.check()


def test_a_grown_table_is_remapped_by_readers(tmp_path: Path) -> None:
    a = EpochTable(tmp_path / "epochs", 2)
    b = EpochTable(tmp_path / "epochs", 2)
    far = a.capacity + 1000
    a.ensure_capacity(far + 1)
    a.publish(far, 0, 1)                    # `a` remaps on demand
    assert b.current(far) == (1, 0)         # and so does `b`
    fence = b.fence(0, 1, 1)
    b.publish(0, 1, 1)
    fence.check()                           # a fence reads the current mapping


def test_the_node_count_must_match(tmp_path: Path) -> None:
    EpochTable(tmp_path / "epochs", 3).close()
    with pytest.raises(StorageError, match="cluster of 3 nodes, not 2"):
        EpochTable(tmp_path / "epochs", 2)


# -- ownership records ----------------------------------------------------------------------

def test_only_one_node_wins_an_epoch(tmp_path: Path) -> None:
    a = OwnershipRecords(tmp_path / "owners")
    b = OwnershipRecords(tmp_path / "owners")
    assert a.claim(4, 1, node=0)
    assert not b.claim(4, 1, node=1)
    assert b.owner(4, 1) == 0
    assert b.claim(4, 2, node=1)
    assert a.latest(4) == 2 and a.owner(4, 2) == 1


def test_latest_probes_past_a_stale_hint_and_lists_when_the_hint_was_pruned(tmp_path: Path) -> None:
    r = OwnershipRecords(tmp_path / "owners")
    for epoch in range(1, 6):
        assert r.claim(1, epoch, node=epoch % 2)
    assert r.latest(1, hint=2) == 5
    r.prune(1, below=4)
    assert not r.exists(1, 3) and r.exists(1, 4)
    assert r.latest(1, hint=2) == 5          # record 2 is gone: the directory is listed
    assert r.latest(2) == 0


def test_prune_removes_the_run_below_an_epoch_and_nothing_of_other_units(tmp_path: Path) -> None:
    r = OwnershipRecords(tmp_path / "owners")
    for slot in (7, 8):
        for epoch in range(1, 7):
            assert r.claim(slot, epoch, node=0)
    r.prune(7, below=5)                       # what the owner of epoch 6 does
    assert [e for e in range(1, 7) if r.exists(7, e)] == [5, 6]
    assert [e for e in range(1, 7) if r.exists(8, e)] == [1, 2, 3, 4, 5, 6]
    assert r.owner(7, 3) is None and r.owner(7, 5) == 0
    assert r.claim(7, 7, node=1)
    r.prune(7, below=6)                       # the next owner: only the run's new bottom goes
    assert [e for e in range(1, 8) if r.exists(7, e)] == [6, 7]
    r.prune(7, below=6)                       # again: nothing left to remove, no error
    assert sorted(os.listdir(tmp_path / "owners")) == sorted(
        [f"7@{e}" for e in (6, 7)] + [f"8@{e}" for e in range(1, 7)])

def test_a_prune_cut_short_leaves_a_run_the_next_prune_removes(tmp_path: Path, monkeypatch) -> None:
    """kill -9 in the middle of a prune: what it left is still found and removed later."""
    r = OwnershipRecords(tmp_path / "owners")
    for epoch in range(1, 7):
        assert r.claim(3, epoch, node=0)
    unlink, done = os.unlink, []

    def killed_after_two(path):
        if len(done) == 2:
            raise KeyboardInterrupt   # the process dies here
        unlink(path)
        done.append(path)

    monkeypatch.setattr(os, "unlink", killed_after_two)
    with pytest.raises(KeyboardInterrupt):
        r.prune(3, below=5)
    monkeypatch.setattr(os, "unlink", unlink)
    assert [e for e in range(1, 7) if r.exists(3, e)] == [3, 4, 5, 6]   # the bottom went first
    OwnershipRecords(tmp_path / "owners").prune(3, below=6)              # the next owner, restarted
    assert sorted(os.listdir(tmp_path / "owners")) == ["3@6"]


# -- node liveness files ----------------------------------------------------------------------

def test_a_node_lock_is_exclusive_and_released_on_close(tmp_path: Path) -> None:
    me = NodeRegistry(tmp_path, [0, 1], 0)
    me.lock_self()
    peer = NodeRegistry(tmp_path, [0, 1], 1)
    assert not peer.lock_free(0)
    assert peer.lock_free(1)                 # never started
    with pytest.raises(NodeLockedError, match="node 0 is already running"):
        NodeRegistry(tmp_path, [0, 1], 0).lock_self(timeout_s=0.05)
    me.close()
    assert peer.lock_free(0)


def test_lease_and_expulsion_handshake(tmp_path: Path) -> None:
    node = NodeRegistry(tmp_path, [0, 1], 0)
    node.lock_self()
    peer = NodeRegistry(tmp_path, [0, 1], 1)
    assert peer.lease(0) is None
    assert node.renew(1_000, incarnation=7)
    lease = peer.lease(0)
    assert (lease.time_ms, lease.incarnation) == (1_000, 7)
    peer.expel(0, 7)
    assert peer.expelled(0) == 7
    assert not node.renew(2_000, incarnation=7)   # the renewal reads the mark after writing
    assert node.renew(2_001, incarnation=8)       # a new incarnation is not expelled


CHILD_LOCK = textwrap.dedent("""
    import sys, time
    from kgroup.storage.node_registry import NodeRegistry
    reg = NodeRegistry(sys.argv[1], [0, 1], 0)
    reg.lock_self()
    incarnation = 1
    while True:
        reg.renew(int(time.time() * 1000), incarnation)
        print("renewed", flush=True)
        time.sleep(0.02)
""")


def _start_child(tmp_path: Path) -> subprocess.Popen:
    child = subprocess.Popen([sys.executable, "-c", CHILD_LOCK, str(tmp_path)], stdout=subprocess.PIPE,
                             env={**os.environ, "PYTHONPATH": SRC}, text=True)
    assert child.stdout.readline().strip() == "renewed"
    return child


def test_kill_9_releases_the_node_lock_at_once(tmp_path: Path) -> None:
    child = _start_child(tmp_path)
    peer = NodeRegistry(tmp_path, [0, 1], 1)
    try:
        assert not peer.lock_free(0)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert peer.lock_free(0)


def test_a_stopped_node_keeps_its_lock_but_its_lease_goes_stale(tmp_path: Path) -> None:
    child = _start_child(tmp_path)
    peer = NodeRegistry(tmp_path, [0, 1], 1)
    try:
        os.kill(child.pid, signal.SIGSTOP)
        wait_for(lambda: _state(child.pid) == "T", 10, 0.01, what="the node stopped")
        before = peer.lease(0).time_ms
        hold(0.3, "a running node renews its lease more often than this")
        assert peer.lease(0).time_ms == before  # no renewal while stopped
        assert not peer.lock_free(0)            # but the lock is held
        os.kill(child.pid, signal.SIGCONT)
        deadline = time.monotonic() + 10
        while peer.lease(0).time_ms == before:
            assert time.monotonic() < deadline, "no renewal after SIGCONT"
            pace(0.01)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()


def _state(pid: int) -> str:
    """A process's state letter from /proc (T: stopped by a signal)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
