"""Produce and consume msg/s and broker CPU with confluent-kafka (librdkafka), 100-byte values.

    .venv/bin/python bench/broker_throughput.py [--quick] [--runs N] [--messages N]
        [--partitions 6] [--producers 1] [--consumers 2] [--raw-consumers N] [--fsync always]
        [--peer tansu] [--bootstrap HOST:PORT[,HOST:PORT...]]

Per run and per broker: two fresh topics with P partitions (AdminClient); produce N messages
(linger.ms=5, batch.size 1 MB, batch.num.messages 100k) with acks=1 into one and acks=all
into the other, with --producers processes sharing the N; then consume the acks=1 topic with
--consumers processes, each a Consumer assigned its share of the partitions from the
beginning (no group). Each side's processes connect first and start together: one
librdkafka client in a Python loop paces itself (~500k produce() calls/s, a few hundred
thousand records/s consumed), several load the broker. msg/s = N / (first produce() call
to last delivery report), and N / (first assign() to the moment the N-th message was read).

With --raw-consumers N the topic is then read once more by N light Fetch clients (Fetch v12
on a blocking socket, records counted from the batch headers, nothing decoded per record):
a confluent-kafka consumer spends more CPU per record than either broker, so on a small
machine only light clients make the broker, not the client, the limit (single node only).

With --peer tansu both brokers run at once and the runs alternate (ours, Tansu, ours, ...),
so machine load hits both alike; the table gives medians and ours/peer ratios. Broker
CPU-seconds (user+system, all threads, from /proc) per million messages are measured per
phase (produce acks=1 + acks=all; consume) — on a shared machine the steadiest measure of
the broker itself. Without --bootstrap it starts `kgroup serve` (fsync per --fsync, default
never). With --bootstrap (one node, or a whole kgroup cluster with every node's address
listed) it measures the running brokers and reads each node's CPU from /proc when its
process runs on this machine (found by its listening port), printing per-node figures.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time
import uuid

import peers
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    fut = admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1)])[name]
    fut.result(30)
    # wait until metadata shows every partition with a leader
    deadline = time.time() + 30
    while time.time() < deadline:
        md = admin.list_topics(name, timeout=10)
        t = md.topics.get(name)
        if (t is not None and t.error is None and len(t.partitions) == partitions
                and all(p.leader >= 0 for p in t.partitions.values())):
            return
        time.sleep(0.1)
    raise RuntimeError(f"topic {name} not visible after creation")


def produce(bootstrap: str, topic: str, n: int, acks: str, processes: int = 1) -> float:
    """msg/s of `processes` producers writing n messages between them: n over the time from
    the first one's first produce() to the last one's last delivery report."""
    if processes <= 1:
        start, end = _produce(bootstrap, topic, n, acks)
        return n / (end - start)
    ctx = mp.get_context("fork")
    ready, results, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    shares = [n // processes + (1 if i < n % processes else 0) for i in range(processes)]
    procs = [ctx.Process(target=_producer_process, args=(bootstrap, topic, share, acks, ready, go, results))
             for share in shares]
    outcomes = _together(procs, ready, go, results)
    return n / (max(o[1] for o in outcomes) - min(o[0] for o in outcomes))


def _producer_process(bootstrap: str, topic: str, n: int, acks: str, ready, go, results) -> None:
    try:
        results.put(_produce(bootstrap, topic, n, acks, ready, go))
    except BaseException as exc:  # reported to the parent, which fails the run
        results.put(("error", repr(exc)))


def _together(procs: list, ready, go, results) -> list:
    """Start the processes, let them go at once when all are connected, collect what each
    reports (raising the first error)."""
    for proc in procs:
        proc.start()
    try:
        for _ in procs:
            ready.get(timeout=60)
        go.set()
        outcomes = [results.get(timeout=330) for _ in procs]
    finally:
        for proc in procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()
    errors = [o[1] for o in outcomes if o[0] == "error"]
    if errors:
        raise RuntimeError(f"a client process failed: {errors[0]}")
    return outcomes


def _produce(bootstrap: str, topic: str, n: int, acks: str, ready=None, go=None) -> tuple[float, float]:
    """(wall-clock start, end) of producing n messages."""
    p = Producer({
        "bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
        "batch.size": 1_000_000, "batch.num.messages": 100_000,
        "queue.buffering.max.messages": 1_000_000, "queue.buffering.max.kbytes": 1_048_576,
        "compression.type": "none", "enable.idempotence": False,
    })
    failed = [0]
    done = [0]

    def report(err, _msg):
        if err is not None:
            failed[0] += 1
        done[0] += 1

    value = b"v" * 100
    p.list_topics(topic, timeout=10)  # connect and learn leaders before the clock starts
    if ready is not None:
        ready.put(os.getpid())
        go.wait(60)
    t0 = time.time()
    for i in range(n):
        while True:
            try:
                p.produce(topic, value, on_delivery=report)
                break
            except BufferError:
                p.poll(0.001)
        if i & 0x3FFF == 0:
            p.poll(0)
    remaining = p.flush(120)
    t1 = time.time()
    if remaining or failed[0]:
        raise RuntimeError(f"produce acks={acks}: {failed[0]} failed, {remaining} not delivered")
    return t0, t1


def _consumer_process(bootstrap: str, topic: str, parts: list[int], total, n: int, ready, go, results) -> None:
    """One consumer process: connect, wait for the start signal, read until the processes
    together have read `n` messages (`total` is their shared count)."""
    c = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4()}",
        "enable.auto.commit": False, "fetch.max.bytes": 52_428_800,
        "max.partition.fetch.bytes": 10_485_760, "fetch.wait.max.ms": 100,
        "queued.min.messages": 1_000_000,
    })

    def read() -> int:
        msgs = c.consume(num_messages=10_000, timeout=0.1)
        for m in msgs:
            if m.error() is not None:
                raise KafkaException(m.error())
        return len(msgs)

    try:
        c.list_topics(topic, timeout=10)
        ready.put(os.getpid())
        go.wait(60)
        t0 = time.time()
        c.assign([TopicPartition(topic, p, 0) for p in parts])  # offset 0: beginning
        _read_until(t0, read, total, n, results)
    except BaseException as exc:  # reported to the parent, which fails the run
        results.put(("error", repr(exc)))
    finally:
        c.close()


def _read_until(t0: float, read, total, n: int, results) -> None:
    """Call `read` (records read by one call) until the processes together have read `n`
    (`total` is their shared count); report (start, end) to `results`."""
    deadline = t0 + 300
    while total.value < n:
        got = read()
        if got:
            with total.get_lock():
                total.value += got
        if time.time() > deadline:
            raise RuntimeError(f"consumed only {total.value} of {n} together")
    results.put((t0, time.time()))


def consume(bootstrap: str, topic: str, partitions: int, n: int, processes: int, raw: bool = False) -> float:
    """msg/s of `processes` consumers reading the topic's partitions between them: n over
    the time from the first one's assign() to the moment the n-th message was read. With
    `raw`, light Fetch clients (see _raw_fetch_process) of the first broker listed
    instead: a single node (partition leaders are not looked up)."""
    processes = max(1, min(processes, partitions))
    ctx = mp.get_context("fork")
    ready, results, go, total = ctx.Queue(), ctx.Queue(), ctx.Event(), ctx.Value("q", 0)
    shares = [[p for p in range(partitions) if p % processes == i] for i in range(processes)]
    host, _, port = bootstrap.split(",")[0].rpartition(":")
    target, first = (_raw_fetch_process, (host, int(port))) if raw else (_consumer_process, (bootstrap,))
    procs = [ctx.Process(target=target, args=(*first, topic, share, total, n, ready, go, results))
             for share in shares]
    outcomes = _together(procs, ready, go, results)
    # The first process to see the shared count reach n stopped at the n-th message.
    return n / (min(o[1] for o in outcomes) - min(o[0] for o in outcomes))


def _raw_fetch_process(host: str, port: int, topic: str, parts: list[int], total, n: int, ready, go,
                       results) -> None:
    """One light consumer process: Fetch v12 requests on a blocking socket, the records
    counted from the batch headers (records count at byte 57 of a batch, last offset delta
    at byte 23), nothing decoded per record. It costs the client a few microseconds per
    batch, so several of them make the broker, not the client, the limit."""
    import socket
    import struct

    from kgroup.client.cluster import build_request
    from kgroup.wire import decode_response, encode_request, request_class

    fetch_cls = request_class(1, 12)
    sock = socket.create_connection((host, port), timeout=30)
    buf = bytearray()

    def roundtrip(corr: int, frame: bytes) -> bytes:
        sock.sendall(frame)
        while True:
            if len(buf) >= 4:
                size = int.from_bytes(buf[:4], "big")
                if len(buf) >= 4 + size:
                    out = bytes(buf[4:4 + size])
                    del buf[:4 + size]
                    return out
            chunk = sock.recv(1 << 20)
            if not chunk:
                raise RuntimeError("the broker closed the connection")
            buf.extend(chunk)

    def fetch_frame(corr: int, offsets: dict[int, int]) -> bytes:
        req = build_request(fetch_cls, replica_id=-1, max_wait=100, min_bytes=1, max_bytes=52_428_800,
                    isolation_level=0, session_id=0, session_epoch=-1,
                    topics=[{"topic": topic, "partitions": [
                        {"partition": p, "fetch_offset": off, "partition_max_bytes": 10_485_760,
                         "current_leader_epoch": -1, "log_start_offset": -1, "last_fetched_epoch": -1}
                        for p, off in sorted(offsets.items())]}],
                    forgotten_topics_data=[], rack_id="")
        return encode_request(1, 12, corr, "bench-raw", req)

    offsets = {p: 0 for p in parts}
    corr = [0]

    def read() -> int:
        corr[0] += 1
        _, resp = decode_response(1, 12, roundtrip(corr[0], fetch_frame(corr[0], offsets)))
        got = 0
        for t in resp.responses:
            for part in t.partitions:
                if int(part.error_code):
                    raise RuntimeError(f"fetch error {int(part.error_code)}")
                data = part.records or b""
                pos, end = 0, len(data)
                while pos + 61 <= end:
                    (length,) = struct.unpack_from(">i", data, pos + 8)
                    if pos + 12 + length > end:
                        break        # a partial batch at the end of the answer
                    got += struct.unpack_from(">i", data, pos + 57)[0]
                    last = struct.unpack_from(">q", data, pos)[0] + struct.unpack_from(">i", data, pos + 23)[0]
                    offsets[int(part.partition_index)] = last + 1
                    pos += 12 + length
        return got

    try:
        ready.put(os.getpid())
        go.wait(60)
        _read_until(time.time(), read, total, n, results)
    except BaseException as exc:  # reported to the parent, which fails the run
        results.put(("error", repr(exc)))
    finally:
        sock.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    peers.add_args(p)
    p.add_argument("--messages", type=int, default=None, help="per run (default 1,000,000; 500,000 with --quick)")
    p.add_argument("--partitions", type=int, default=6)
    p.add_argument("--consumers", type=int, default=2, help="consumer processes (default 2)")
    p.add_argument("--producers", type=int, default=1, help="producer processes (default 1)")
    p.add_argument("--raw-consumers", type=int, default=0,
                   help="also read the topic with this many light Fetch processes that count "
                        "records from batch headers (the broker, not the client, is the limit); "
                        "single-node brokers only")
    p.add_argument("--fsync", default="never", help="kgroup fsync policy when we start it (default never)")
    args = p.parse_args()
    n = args.messages or (500_000 if args.quick else 1_000_000)
    runs = peers.runs(args)
    keys = ("produce acks=1 msg/s", "produce acks=all msg/s", "consume msg/s",
            "consume msg/s, light Fetch clients",
            "broker CPU-s per 1M produced",
            "broker CPU-s per 1M consumed", "broker CPU-s per 1M produced and consumed")
    figures = {side: {k: [] for k in keys} for side in peers.sides(args)}
    node_cpu: dict[str, list[float]] = {}
    cfg = peers.toml_config(fsync=args.fsync, initial_rebalance_delay_ms=0)
    print(f"load average before: {peers.load_average()}", flush=True)
    with peers.brokers(args, cfg) as brokers:
        for r in range(runs):
            for side, b in brokers.items():
                t1, ta = f"tp1-{uuid.uuid4().hex[:8]}", f"tpa-{uuid.uuid4().hex[:8]}"
                create_topic(b.bootstrap, t1, args.partitions)
                create_topic(b.bootstrap, ta, args.partitions)
                cpu0 = b.cpu_by_node()
                r1 = produce(b.bootstrap, t1, n, "1", args.producers)
                ra = produce(b.bootstrap, ta, n, "all", args.producers)
                cpu1 = b.cpu_by_node()
                rc = consume(b.bootstrap, t1, args.partitions, n, args.consumers)
                cpu2 = b.cpu_by_node()
                rr = consume(b.bootstrap, t1, args.partitions, n, args.raw_consumers, raw=True) \
                    if args.raw_consumers else None
                f = figures[side]
                f[keys[0]].append(r1)
                f[keys[1]].append(ra)
                f[keys[2]].append(rc)
                line = (f"  run {r + 1} {side}: produce acks=1 {r1:,.0f}/s, acks=all {ra:,.0f}/s, "
                        f"consume {rc:,.0f}/s")
                if rr is not None:
                    f[keys[3]].append(rr)
                    line += f", light Fetch clients {rr:,.0f}/s"
                if cpu0 and cpu1 and cpu2:
                    per_m = 1_000_000 / n
                    prod = (sum(cpu1.values()) - sum(cpu0.values())) * per_m / 2
                    cons = (sum(cpu2.values()) - sum(cpu1.values())) * per_m
                    f[keys[4]].append(prod)
                    f[keys[5]].append(cons)
                    f[keys[6]].append(prod + cons)
                    line += f", broker CPU per 1M: produce {prod:.2f}s, consume {cons:.2f}s"
                    if len(cpu2) > 1:
                        for node in cpu2:
                            node_cpu.setdefault(node, []).append((cpu2[node] - cpu0[node]) * per_m)
                        line += " (per node, all phases: " + ", ".join(
                            f"{node} {(cpu2[node] - cpu0[node]) * per_m:.2f}s" for node in cpu2) + ")"
                print(line + f"; load {peers.load_average()}", flush=True)
    shown = keys[:4] if args.raw_consumers else keys[:3]
    rows = [(k, {side: peers.median(figures[side][k]) for side in figures}) for k in shown]
    cpu_rows = [(k, {side: peers.median(figures[side][k]) for side in figures}) for k in keys[4:]]
    title = (f"confluent-kafka, {n:,} x 100-byte messages, {args.partitions} partitions, {args.producers} "
             f"producer and {args.consumers} consumer processes"
             + (f" (then {args.raw_consumers} light Fetch clients)" if args.raw_consumers else "")
             + f", kgroup fsync={args.fsync if not args.bootstrap else '(as running)'}, "
             f"{runs} runs (median)")
    peers.print_table(title, rows, peers.sides(args))
    peers.print_table("broker CPU-seconds per million messages (lower is better: ours/peer <= 1 wins)",
                      cpu_rows, peers.sides(args))
    if node_cpu:
        print("\nper node (ours), CPU-s per 1M messages, all phases: "
              + ", ".join(f"{node} {peers.median(xs):.2f}" for node, xs in node_cpu.items()))
    print(f"load average after: {peers.load_average()}")


if __name__ == "__main__":
    main()
