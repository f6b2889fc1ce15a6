"""Durability under a real `kill -9`, and a model test of recovery after torn tails."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from kgroup.storage.metadata_log import MetadataPartition
from kgroup.storage.record_log import RecordLog

# The child appends on its main thread while a worker thread syncs (the broker's pattern:
# appends on the loop, group commit in a thread) and prints every durable end it gets.
CHILD = textwrap.dedent("""
    import sys, threading
    from kgroup.storage.metadata_log import MetadataPartition
    part = MetadataPartition(sys.argv[1], 0, segment_bytes=64 * 1024)
    def syncer():
        while True:
            print(part.sync(), flush=True)
    threading.Thread(target=syncer, daemon=True).start()
    i = 0
    while True:
        part.append(b"record-%d" % i)
        i += 1
""")


def test_synced_records_survive_kill_9(tmp_path: Path) -> None:
    src = Path(__file__).resolve().parents[3] / "src"
    env = {**os.environ, "PYTHONPATH": str(src)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(tmp_path)],
                             stdout=subprocess.PIPE, env=env, text=True)
    durable = 0
    try:
        assert child.stdout is not None
        for line in child.stdout:  # stop once enough has been acknowledged, mid-run
            durable = max(durable, int(line))
            if durable >= 20_000:
                break
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert durable >= 20_000, "child stopped before syncing enough"
    assert child.returncode == -signal.SIGKILL
    part = MetadataPartition(tmp_path, 0, segment_bytes=64 * 1024)
    replay = part.load()
    got = list(replay.tail)
    assert len(got) >= durable
    assert got[:durable] == [(i, b"record-%d" % i) for i in range(durable)]
    assert part.append(b"after") == len(got)


# -- model test --------------------------------------------------------------------------

ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 30), st.integers(1, 60)),
        st.tuples(st.just("sync")),
        st.tuples(st.just("flush")),
        st.tuples(st.just("roll")),        # as a group shard does when it takes a snapshot
        st.tuples(st.just("crash"), st.floats(0, 1), st.binary(max_size=24)),
    ),
    max_size=40,
)


def _abandon(log: RecordLog) -> None:
    """Drop the object as a killed process would: no flush of the buffer."""
    log._pending.clear()
    log._pending_bytes = 0
    log.close()


@settings(max_examples=60, deadline=None)
@given(ops)
def test_synced_records_survive_torn_tails(tmp_path_factory, operations) -> None:
    """Appends interleaved with crashes that keep the fsynced bytes but cut the rest of
    each segment anywhere (and may add garbage): no synced record is ever lost, and what
    is read back is always a prefix of what was appended."""
    directory = tmp_path_factory.mktemp("log")
    log = RecordLog(directory, segment_bytes=256)
    appended: list[bytes] = []     # the records the log should hold, by offset
    durable = 0
    synced_sizes: dict[str, int] = {}
    counter = 0
    for op in operations:
        if op[0] == "append":
            for _ in range(op[1]):
                counter += 1
                appended.append(b"%d:" % counter + b"x" * op[2])
                assert log.append(appended[-1]) == len(appended) - 1
        elif op[0] == "sync":
            durable = log.sync()
            assert durable == len(appended)
            synced_sizes = {p.name: p.stat().st_size for p in directory.glob("*.log")}
        elif op[0] == "flush":
            log.flush()
        elif op[0] == "roll":
            log.roll()
        else:
            _, fraction, garbage = op
            _abandon(log)
            for seg in sorted(directory.glob("*.log")):
                keep_min = synced_sizes.get(seg.name, 0)
                size = seg.stat().st_size
                os.truncate(seg, keep_min + int((size - keep_min) * fraction))
            if garbage:
                with open(sorted(directory.glob("*.log"))[-1], "ab") as f:
                    f.write(garbage)
            log = RecordLog(directory, segment_bytes=256)
            got = [p for _, p in log.read_from(log.log_start_offset)]
            assert len(got) >= durable
            assert got == appended[:len(got)]
            appended = got
            durable = log.durable_end
            synced_sizes = {p.name: p.stat().st_size for p in directory.glob("*.log")}
    log.close()
    # Closed too: this directory is tmp_path_factory's, which the suite's open-files
    # backstop (tests/plugins/open_files.py) does not look in, and hypothesis runs this often.
    reread = RecordLog(directory, segment_bytes=256)
    got = [p for _, p in reread.read_from(0)]
    reread.close()
    assert got == appended
