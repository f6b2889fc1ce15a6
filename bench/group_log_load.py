"""Group-log load at start-up: kgroup's replay beside Apache Kafka 4.4's `__consumer_offsets`
load, after 1M and 10M offset commits (issue 35).

    .venv/bin/python bench/group_log_load.py [--peer kafka] [--commits 1000000,10000000]
        [--groups 100] [--partitions 1000] [--runs N] [--kafka-cleaner off] [--quick]

Per size, on each broker (both started at once, fsync never / Kafka's default flush):
a topic of --partitions partitions is created and the commits are written through the
wire as fast as the broker takes them: OffsetCommit v8 requests (generation -1, a
simple group, as an admin tool commits), each carrying one group's offsets for every
partition of the topic, the groups taken in turn, every commit a new offset (so every
record is a live update), 8 requests in flight on one connection. Not timed.

Then, --runs times, alternating between the brokers: stop the broker (SIGTERM) and start
it again on the same data, and time from the process launch until an OffsetFetch v8
for every group answers with each group's last committed offsets ("groups answer").
Also printed: the group coordinator's own load time (kgroup's "coordinator loaded ...
shards_seconds=": its group shards, from the first one's open to the last one loaded; for
Kafka the longest "Finished loading of metadata from __consumer_offsets-N ... in X ms" of
the restart, time in the loader's queue included, the partitions load in parallel), for
kgroup also the time until every log was open (`seconds=`: the data partitions' logs, which
it opens after the group shards and Kafka before its coordinator starts), how many records
each read at load, and the restarted process's peak RSS (VmHWM: the memory the load needed).

What each replays is what it is built to keep: kgroup writes a snapshot of its live state
once the records since the last reach the larger of 10,000 and the last snapshot's size
(per shard; it starts a new log segment there and deletes the ones below the older snapshot
kept) and replays snapshot + tail; Kafka's log cleaner compacts closed `__consumer_offsets`
segments (100 MB) in the background. --kafka-cleaner off (log.cleaner.enable=false) makes
Kafka read every commit written instead. The time from launch includes each runtime's
start (a JVM; Python imports): the own load time is the figure without it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import shutil
import tempfile
import time
from pathlib import Path

import peers
from broker_common import coordinator_ready
from kgroup.client.connection import Connection
from kgroup.wire import request_class
from kgroup.wire.kio_build import build, item

COMMIT, FETCH = 8, 9
CommitReq = request_class(COMMIT, 8)
CommitTopic = item(CommitReq, "topics")
CommitPartition = item(CommitTopic, "partitions")
FetchReq = request_class(FETCH, 8)
FetchGroup = item(FetchReq, "groups")
FetchTopic = item(FetchGroup, "topics")
TOPIC = "load"

KGROUP_LOADED = re.compile(r"coordinator loaded: records=(\d+) groups=(\d+) seconds=([0-9.]+)"
                           r"(?: shards_seconds=([0-9.]+))?")
KAFKA_LOADED = re.compile(r"Finished loading of metadata from __consumer_offsets-\d+ with epoch \d+ in (\d+)ms"
                          r".*?Loaded (\d+) records")
IN_FLIGHT = 8


def commit_request(group: str, topic: str, offsets: dict[int, int]):
    """OffsetCommit v8 of a simple group (generation -1): partition -> offset of `topic`."""
    return build(CommitReq, group_id=group, generation_id_or_member_epoch=-1, member_id="",
                 group_instance_id=None, topics=(build(CommitTopic, name=topic, partitions=tuple(
                     build(CommitPartition, partition_index=p, committed_offset=o, committed_leader_epoch=-1,
                           committed_metadata="") for p, o in offsets.items())),))


async def send_commit(conn: Connection, group: str, topic: str, offsets: dict[int, int], errors: list[str],
                      sem: asyncio.Semaphore) -> None:
    """One OffsetCommit; a partition's error is added to `errors`; `sem` released."""
    try:
        resp = await conn.request(COMMIT, commit_request(group, topic, offsets))
        bad = {int(p.error_code) for t in resp.topics for p in t.partitions} - {0}
        if bad:
            errors.append(f"{group}: error codes {sorted(bad)}")
    finally:
        sem.release()


def group_name(g: int) -> str:
    return f"load-group-{g}"


async def write_commits(b: peers.Broker, commits: int, groups: int, partitions: int) -> dict[int, int]:
    """Write `commits` offset commits; returns the last offset committed per group."""
    conn = await Connection.open(b.host, b.port, client_id="kgroup-bench", timeout=300)
    last: dict[int, int] = {}
    sem = asyncio.Semaphore(IN_FLIGHT)
    errors: list[str] = []

    try:
        await coordinator_ready(conn, group_name(0))
        requests = -(-commits // partitions)
        t0 = time.perf_counter()
        tasks = []
        for i in range(requests):
            await sem.acquire()
            if errors:
                raise RuntimeError(f"OffsetCommit failed: {errors[0]}")
            base = (i // groups) * partitions
            tasks.append(asyncio.create_task(send_commit(conn, group_name(i % groups), TOPIC,
                                                         {p: base + p for p in range(partitions)}, errors, sem)))
            last[i % groups] = (i // groups) * partitions
            if len(tasks) >= 1024:
                await asyncio.gather(*tasks)
                tasks = []
        await asyncio.gather(*tasks)
        if errors:
            raise RuntimeError(f"OffsetCommit failed: {errors[0]}")
        dt = time.perf_counter() - t0
        print(f"  {b.name}: wrote {requests * partitions:,} commits ({requests:,} requests) in {dt:.1f}s "
              f"({requests * partitions / dt:,.0f}/s)", flush=True)
    finally:
        await conn.close()
    return last


async def groups_answer(b: peers.Broker, last: dict[int, int], deadline: float) -> None:
    """Poll OffsetFetch for every group until each answers with its last committed offsets."""
    req = build(FetchReq, require_stable=False, groups=tuple(
        build(FetchGroup, group_id=group_name(g), topics=(build(FetchTopic, name=TOPIC, partition_indexes=(0,)),))
        for g in sorted(last)))
    conn = None
    while True:
        try:
            if conn is None:
                conn = await Connection.open(b.host, b.port, client_id="kgroup-bench", timeout=30)
            resp = await conn.request(FETCH, req)
            ok = all(int(g.error_code) == 0 and g.topics and g.topics[0].partitions
                     and int(g.topics[0].partitions[0].committed_offset) == last[int(g.group_id.rsplit("-", 1)[1])]
                     for g in resp.groups)
            if ok:
                await conn.close()
                return
        except (OSError, ConnectionError, asyncio.TimeoutError) as exc:  # still starting
            if conn is not None:
                await conn.close()
            conn = None
            if time.monotonic() > deadline:
                raise RuntimeError(f"{b.name}: no answer before the deadline ({exc!r})")
        except Exception:
            if conn is not None:
                await conn.close()
            raise
        if time.monotonic() > deadline:
            raise RuntimeError(f"{b.name}: the groups did not answer their offsets before the deadline")
        await asyncio.sleep(0.02)


class Side:
    """One broker on a data dir of its own that survives restarts."""

    def __init__(self, name: str, cleaner: bool) -> None:
        self.name = name
        self.dir = Path(tempfile.mkdtemp(prefix=f"group-load-{name}-"))
        self.b: peers.Broker | None = None
        self.ref = None
        self.cleaner = cleaner
        self.cfg = peers.toml_config(fsync="never", initial_rebalance_delay_ms=0)

    def start(self) -> peers.Broker:
        if self.name == "ours":
            try:
                self.b = peers.start_kgroup(self.cfg, data_dir=self.dir / "data", wait_loaded=False,
                                            listen_timeout=600)
            except RuntimeError as exc:
                raise RuntimeError(f"{exc}; its data dir {self.dir}") from None
            self.b.name = "ours"
        else:
            if self.ref is None:
                from kgroup.testing.reference import ReferenceKafka
                extra = {} if self.cleaner else {"log.cleaner.enable": False}
                self.ref = ReferenceKafka(peers.kafka_settings(extra=extra), jvm_options=peers.KAFKA_JVM,
                                          directory=self.dir)
            self.ref.start(timeout=max(600, peers.KAFKA_READY_TIMEOUT))
            self.b = peers.Broker("kafka", self.ref.host, self.ref.port, self.ref.proc, kind="kafka")
        return self.b

    def stop(self) -> None:
        if self.name == "ours" and self.b is not None:
            self.b.stop()          # SIGTERM; its temp dir (config) goes, the data dir stays
        elif self.ref is not None:
            self.ref.stop()

    def loaded(self, since_line: int) -> tuple[float | None, int | None, float | None]:
        """(the group coordinator's own load seconds, records read at load, seconds until
        every log was open) of the latest start. kgroup: its group shards from the first
        one's open to the last one loaded (`shards_seconds`; before it was logged, the whole
        start), and every unit (`seconds`: the data partitions' logs too). Kafka: the longest
        `__consumer_offsets` load (its time in the loader's queue included: the partitions
        are scheduled together), its logs being open before it starts (not measured)."""
        if self.name == "ours":
            for line in self.b.stderr_lines:
                m = KGROUP_LOADED.search(line)
                if m:
                    every = float(m.group(3))
                    return float(m.group(4) or every), int(m.group(1)), every
            return None, None, None
        lines = self.ref.log_path.read_text(errors="replace").splitlines()[since_line:]
        found = [KAFKA_LOADED.search(line) for line in lines]
        found = [m for m in found if m]
        if not found:
            return None, None, None
        return max(int(m.group(1)) for m in found) / 1000, sum(int(m.group(2)) for m in found), None

    def log_lines(self) -> int:
        if self.name == "ours" or self.ref is None or not self.ref.log_path.exists():
            return 0
        return len(self.ref.log_path.read_text(errors="replace").splitlines())

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def measure_restart(side: Side, last: dict[int, int], timeout: float) -> dict:
    side.stop()
    mark = side.log_lines()
    t0 = time.monotonic()
    b = side.start()
    asyncio.run(groups_answer(b, last, t0 + timeout))
    answer = time.monotonic() - t0
    deadline = time.monotonic() + 30
    own, records, every = side.loaded(mark)
    while own is None and time.monotonic() < deadline:   # the log line may trail the answer
        time.sleep(0.1)
        own, records, every = side.loaded(mark)
    return {"answer_s": answer, "own_s": own, "records": records, "every_s": every, "peak_mb": b.peak_rss_mb()}


def create_topic(b: peers.Broker, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic(TOPIC, partitions, 1)])[TOPIC].result(120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    peers.add_args(p)
    p.add_argument("--commits", default=None, help="sizes (default 1000000,10000000; 20000 with --quick)")
    p.add_argument("--groups", type=int, default=None, help="groups the commits go to (default 100; 10 with --quick)")
    p.add_argument("--partitions", type=int, default=None,
                   help="partitions per commit request (default 1000; 100 with --quick)")
    p.add_argument("--kafka-cleaner", choices=["on", "off"], default="on",
                   help="Kafka's log cleaner (default on, as Kafka runs; off: Kafka reads every commit)")
    p.add_argument("--timeout", type=float, default=1800, help="per restart, seconds")
    args = p.parse_args()
    if args.bootstrap:
        p.error("--bootstrap: the data dirs must be ours")
    if args.peer not in (None, "kafka"):
        p.error("--peer: only kafka is measured here")
    sizes = [int(x) for x in (args.commits or ("20000" if args.quick else "1000000,10000000")).split(",")]
    groups = args.groups or (10 if args.quick else 100)
    partitions = args.partitions or (100 if args.quick else 1000)
    runs = peers.runs(args)
    rows: list[tuple[str, dict]] = []
    rates: list[tuple[str, dict]] = []
    print(f"load average before: {peers.load_average()}", flush=True)
    for n in sizes:
        sides = {name: Side(name, args.kafka_cleaner == "on") for name in peers.sides(args)}
        figures = {name: [] for name in sides}
        try:
            last = {}
            for name, side in sides.items():
                b = side.start()
                if name == "ours":
                    deadline = time.monotonic() + 120
                    while not any("coordinator loaded" in line for line in b.stderr_lines):
                        if time.monotonic() > deadline:
                            raise RuntimeError("kgroup did not load")
                        time.sleep(0.05)
                create_topic(b, partitions)
                last[name] = asyncio.run(write_commits(b, n, groups, partitions))
            for r in range(runs):
                for name, side in sides.items():
                    x = measure_restart(side, last[name], args.timeout)
                    figures[name].append(x)
                    print(f"  {n:,} commits, run {r + 1} {name}: groups answer {x['answer_s']:.2f}s after launch, "
                          f"own load {peers.fmt(x['own_s'])}s (every log open {peers.fmt(x['every_s'])}s), "
                          f"{peers.fmt(x['records'])} records read, "
                          f"peak RSS {peers.fmt(x['peak_mb'])} MiB; load {peers.load_average()}", flush=True)
        finally:
            for side in sides.values():
                side.close()

        def med(key):
            return {name: peers.median([x[key] for x in xs]) for name, xs in figures.items()}
        answer = med("answer_s")
        rows += [(f"{n:,} commits: launch -> every group answers its offsets, s", answer),
                 (f"{n:,} commits: group coordinator's own load time, s", med("own_s")),
                 (f"{n:,} commits: kgroup: every log open (data partitions too), s", med("every_s")),
                 (f"{n:,} commits: records read at load", med("records")),
                 (f"{n:,} commits: peak RSS after load, MiB", med("peak_mb"))]
        rates.append((f"{n:,} commits: commits written per second of launch -> answer",
                      {name: (n / s if s else None) for name, s in answer.items()}))
    title = (f"Group-log load at start-up, {groups} groups x {partitions} partitions, Kafka log cleaner "
             f"{args.kafka_cleaner}, {runs} runs (median")
    peers.print_table(title + ", lower is better)", rows, peers.sides(args), higher_is_better=False)
    peers.print_table(title + ", higher is better)", rates, peers.sides(args))
    print(f"load average after: {peers.load_average()}")


if __name__ == "__main__":
    main()
