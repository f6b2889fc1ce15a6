"""Produce and consume msg/s and broker CPU with confluent-kafka (librdkafka) and Kafka's Java
clients, 100-byte (or --record-bytes) values.

    .venv/bin/python bench/broker_throughput.py [--quick] [--runs N] [--messages N]
        [--partitions 6] [--producers 1] [--consumers 2] [--raw-consumers N] [--fsync always]
        [--record-bytes 100] [--acks-all-only] [--java-producers N] [--java-consumers N]
        [--peer kafka|tansu] [--bootstrap HOST:PORT[,HOST:PORT...]]

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

--fixed-batches makes the consume phases read a topic written, untimed, by one producer with
linger.ms 100 (whole 1 MB batches on both brokers). Without it they read the timed topic,
whose batches follow each broker's pace: a broker that acknowledges sooner gets smaller
batches (kgroup ~750 KB against Kafka's ~1 MB on 2026-11-30), and more batches per MB cost a
librdkafka consumer more.

--java-producers N adds a run of N processes of Kafka 4.4's Java producer (acks=all, the
same linger and batch size; bench/java/ThroughputClient.java, built by `make bench-java`)
into a third topic (its broker CPU counted on its own), and --java-consumers N reads the topic once more with N Java consumers
(KafkaConsumer, assigned partitions, every record's value touched).

--peer kafka starts Apache Kafka 4.4 (bench/peers.py: production JVM options; with --fsync
always, log.flush.interval.messages=1, an fsync after every append). Peak RSS is each
broker process's VmHWM at the end (the maximum over the whole session).

With --peer tansu (or kafka) both brokers run at once and the runs alternate (ours, Tansu, ours, ...),
so machine load hits both alike; the table gives medians and ours/peer ratios. Broker
CPU-seconds (user+system, all threads, from /proc) per million messages are measured per
phase (produce acks=1 + acks=all; consume) — on a shared machine the steadiest measure of
the broker itself. With --acks-all-only (and for the Java producer) it also prints the cores
each broker kept busy while the producers wrote (near 1.0 is one saturated thread), the
CPU its producing clients spent per million records (this process's finished children), and
what the broker not being measured spent meanwhile. Without --bootstrap it starts `kgroup serve` (fsync per --fsync, default
never). With --bootstrap (one node, or a whole kgroup cluster with every node's address
listed) it measures the running brokers and reads each node's CPU from /proc when its
process runs on this machine (found by its listening port), printing per-node figures.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import subprocess
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


def produce(bootstrap: str, topic: str, n: int, acks: str, processes: int = 1, size: int = 100) -> float:
    """msg/s of `processes` producers writing n messages between them: n over the time from
    the first one's first produce() to the last one's last delivery report."""
    if processes <= 1:
        start, end = _produce(bootstrap, topic, n, acks, size=size)
        return n / (end - start)
    ctx = mp.get_context("fork")
    ready, results, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    shares = [n // processes + (1 if i < n % processes else 0) for i in range(processes)]
    procs = [ctx.Process(target=_producer_process, args=(bootstrap, topic, share, acks, ready, go, results, size))
             for share in shares]
    outcomes = _together(procs, ready, go, results)
    return n / (max(o[1] for o in outcomes) - min(o[0] for o in outcomes))


def _client_cpu() -> float:
    """CPU-seconds of this process and its finished children (the producer processes, the
    Java clients): how much the clients spent, to set beside the broker's."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


JAVA_CLASSES = peers.ROOT / "build" / "bench-java"


def java_clients(argvs: list[list[str]]) -> list[tuple[float, float, int]]:
    """Run ThroughputClient processes (one per argv), let them go together once all are
    ready; returns each one's (start s, end s, count)."""
    from kgroup.testing.reference import classpath, java_command

    if not (JAVA_CLASSES / "ThroughputClient.class").exists():
        raise RuntimeError("the Java bench client is not built: run `make bench-java`")
    cmd = [java_command(), "-Xms256m", "-Xmx1g", "-XX:+UseG1GC",
           "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
           "-cp", f"{classpath()}:{JAVA_CLASSES}", "ThroughputClient"]
    procs = [subprocess.Popen(cmd + argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True) for argv in argvs]
    try:
        for proc in procs:
            line = proc.stdout.readline().strip()
            if line != "ready":
                raise RuntimeError(f"a Java client said {line!r} instead of ready")
        for proc in procs:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        out = []
        for proc in procs:
            line = proc.stdout.readline().split()
            if not line or line[0] != "done":
                raise RuntimeError(f"a Java client failed: {' '.join(line)}")
            out.append((int(line[1]) / 1000, int(line[2]) / 1000, int(line[3])))
        return out
    finally:
        for proc in procs:
            try:
                proc.stdin.close()
            except OSError:
                pass
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def java_produce(bootstrap: str, topic: str, n: int, processes: int, size: int) -> float:
    """msg/s of `processes` Java producers (acks=all) writing n messages between them."""
    shares = [n // processes + (1 if i < n % processes else 0) for i in range(processes)]
    outcomes = java_clients([["produce", bootstrap, topic, str(share), str(size), "all"] for share in shares])
    return n / (max(o[1] for o in outcomes) - min(o[0] for o in outcomes))


def java_consume(bootstrap: str, topic: str, partitions: int, n: int, processes: int) -> float:
    """msg/s of `processes` Java consumers reading the topic's partitions between them to
    their end (n records in all)."""
    processes = max(1, min(processes, partitions))
    shares = [[p for p in range(partitions) if p % processes == i] for i in range(processes)]
    outcomes = java_clients([["consume", bootstrap, topic, ",".join(map(str, share)), "0"] for share in shares])
    got = sum(o[2] for o in outcomes)
    if got < n:
        raise RuntimeError(f"the Java consumers read {got} of {n}")
    return n / (max(o[1] for o in outcomes) - min(o[0] for o in outcomes))


def _producer_process(bootstrap: str, topic: str, n: int, acks: str, ready, go, results, size: int = 100) -> None:
    try:
        results.put(_produce(bootstrap, topic, n, acks, ready, go, size))
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


def _produce(bootstrap: str, topic: str, n: int, acks: str, ready=None, go=None,
             size: int = 100, linger_ms: int = 5) -> tuple[float, float]:
    """(wall-clock start, end) of producing n messages."""
    p = Producer({
        "bootstrap.servers": bootstrap, "acks": acks, "linger.ms": linger_ms,
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

    value = b"v" * size
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
    p.add_argument("--record-bytes", type=int, default=100, help="value size (default 100)")
    p.add_argument("--consumers", type=int, default=2, help="consumer processes (default 2)")
    p.add_argument("--producers", type=int, default=1, help="producer processes (default 1)")
    p.add_argument("--acks-all-only", action="store_true",
                   help="produce acks=all only (no acks=1 topic); consumers read the acks=all topic")
    p.add_argument("--raw-consumers", type=int, default=0,
                   help="also read the topic with this many light Fetch processes that count "
                        "records from batch headers (the broker, not the client, is the limit); "
                        "single-node brokers only")
    p.add_argument("--java-producers", type=int, default=0,
                   help="also produce acks=all with this many Java producer processes (make bench-java)")
    p.add_argument("--java-consumers", type=int, default=0,
                   help="also read the topic with this many Java consumer processes")
    p.add_argument("--fixed-batches", action="store_true",
                   help="the consume phases read a topic written (untimed) by one producer with "
                        "linger.ms 100, so both brokers hold the same whole 1 MB batches, instead "
                        "of the timed producers' topic, whose batching follows each broker's pace")
    p.add_argument("--no-warmup", action="store_true",
                   help="skip the untimed warm-up pass (200,000 records) on each broker")
    p.add_argument("--fsync", default="never",
                   help="kgroup fsync policy when we start it (default never); for --peer kafka, "
                        "always = log.flush.interval.messages=1")
    args = p.parse_args()
    n = args.messages or (500_000 if args.quick else 1_000_000)
    runs = peers.runs(args)
    keys = ("produce acks=1 msg/s", "produce acks=all msg/s", "produce acks=all msg/s, Java producer",
            "consume msg/s", "consume msg/s, light Fetch clients", "consume msg/s, Java consumer",
            "broker CPU-s per 1M produced",
            "broker CPU-s per 1M consumed", "broker CPU-s per 1M produced and consumed",
            "broker CPU-s per 1M produced, Java producer",
            "client CPU-s per 1M produced", "client CPU-s per 1M produced, Java producer")
    # Cores a broker keeps busy while producers write (its CPU-seconds over the phase's
    # timed seconds): a broker near 1.0 is held by one thread, so a gap there is its
    # event loop's ceiling rather than clients or disks.
    busy_keys = ("produce acks=all", "Java producer")
    busy = {side: {k: [] for k in busy_keys} for side in peers.sides(args)}
    figures = {side: {k: [] for k in keys} for side in peers.sides(args)}
    node_cpu: dict[str, list[float]] = {}
    cfg = peers.toml_config(fsync=args.fsync, initial_rebalance_delay_ms=0)
    kafka = peers.kafka_settings(args.fsync) if args.peer == "kafka" else None
    size = args.record_bytes
    rss: dict[str, object] = {}
    print(f"load average before: {peers.load_average()}", flush=True)
    with peers.brokers(args, cfg, kafka) as brokers:
        if not args.no_warmup:
            # Untimed: a JVM runs interpreted until its JIT has compiled the hot paths, and
            # a production broker is measured warm (kgroup gets the same pass).
            for side, b in brokers.items():
                tw = f"tpw-{uuid.uuid4().hex[:8]}"
                create_topic(b.bootstrap, tw, args.partitions)
                warm = min(n, 200_000)
                produce(b.bootstrap, tw, warm, "all", 1, size)
                consume(b.bootstrap, tw, args.partitions, warm, 1)
                print(f"  warmed up {side} ({warm:,} records produced and consumed)", flush=True)
        for r in range(runs):
            for side, b in brokers.items():
                t1, ta, tj = (f"tp1-{uuid.uuid4().hex[:8]}", f"tpa-{uuid.uuid4().hex[:8]}",
                              f"tpj-{uuid.uuid4().hex[:8]}")
                if not args.acks_all_only:
                    create_topic(b.bootstrap, t1, args.partitions)
                create_topic(b.bootstrap, ta, args.partitions)
                cpu0 = b.cpu_by_node()
                # What the broker not being measured spends meanwhile (an idle JVM's
                # threads, or nothing): CPU the measured side's clients cannot have.
                idle0 = {o: sum(ob.cpu_by_node().values()) for o, ob in brokers.items() if o != side}
                phases0 = time.monotonic()
                clients0 = _client_cpu()
                r1 = None if args.acks_all_only else produce(b.bootstrap, t1, n, "1", args.producers, size)
                ra = produce(b.bootstrap, ta, n, "all", args.producers, size)
                cpu1 = b.cpu_by_node()
                produced_by_clients = _client_cpu() - clients0
                read = ta if args.acks_all_only else t1
                consumed_from = cpu1
                if args.fixed_batches:
                    # The producer runs ahead of either broker here (linger 100 ms), so
                    # batch.size/batch.num.messages decide the batches, not the acks' pace.
                    read = f"tpf-{uuid.uuid4().hex[:8]}"
                    create_topic(b.bootstrap, read, args.partitions)
                    _produce(b.bootstrap, read, n, "1", size=size, linger_ms=100)
                    consumed_from = b.cpu_by_node()
                rc = consume(b.bootstrap, read, args.partitions, n, args.consumers)
                cpu2 = b.cpu_by_node()
                rr = consume(b.bootstrap, read, args.partitions, n, args.raw_consumers, raw=True) \
                    if args.raw_consumers else None
                rjc = java_consume(b.bootstrap, read, args.partitions, n, args.java_consumers) \
                    if args.java_consumers else None
                rj = None
                f = figures[side]
                if args.java_producers:
                    create_topic(b.bootstrap, tj, args.partitions)
                    cpu_j = b.cpu_by_node()
                    java0 = _client_cpu()
                    rj = java_produce(b.bootstrap, tj, n, args.java_producers, size)
                    f[keys[11]].append((_client_cpu() - java0) * 1_000_000 / n)
                    cpu_j1 = b.cpu_by_node()
                    if cpu_j and cpu_j1:
                        java_cpu = sum(cpu_j1.values()) - sum(cpu_j.values())
                        f[keys[9]].append(java_cpu * 1_000_000 / n)
                        busy[side]["Java producer"].append(java_cpu * rj / n)
                line = f"  run {r + 1} {side}:"
                for key, value, label in ((keys[0], r1, "produce acks=1"), (keys[1], ra, "acks=all"),
                                          (keys[2], rj, "Java acks=all"), (keys[3], rc, "consume"),
                                          (keys[4], rr, "light Fetch clients"), (keys[5], rjc, "Java consume")):
                    if value is not None:
                        f[key].append(value)
                        line += f" {label} {value:,.0f}/s,"
                if cpu0 and cpu1 and cpu2:
                    per_m = 1_000_000 / n
                    prod = (sum(cpu1.values()) - sum(cpu0.values())) * per_m / (1 if args.acks_all_only else 2)
                    cons = (sum(cpu2.values()) - sum(consumed_from.values())) * per_m
                    f[keys[6]].append(prod)
                    f[keys[7]].append(cons)
                    f[keys[8]].append(prod + cons)
                    f[keys[10]].append(produced_by_clients * per_m / (1 if args.acks_all_only else 2))
                    if args.acks_all_only:
                        busy[side]["produce acks=all"].append(prod * ra / 1_000_000)
                    line += f" broker CPU per 1M: produce {prod:.2f}s, consume {cons:.2f}s"
                    if len(cpu2) > 1:
                        for node in cpu2:
                            node_cpu.setdefault(node, []).append((cpu2[node] - cpu0[node]) * per_m)
                        line += " (per node, all phases: " + ", ".join(
                            f"{node} {(cpu2[node] - cpu0[node]) * per_m:.2f}s" for node in cpu2) + ")"
                idle = sum(sum(brokers[o].cpu_by_node().values()) - c for o, c in idle0.items())
                if idle0:
                    line += f"; the other broker meanwhile {idle / (time.monotonic() - phases0):.2f} cores"
                print(line + f"; load {peers.load_average()}", flush=True)
        for side, b in brokers.items():
            peak = b.peak_rss_mb()
            rss[side] = peak
    shown = [k for k in keys[:6] if any(figures[side][k] for side in figures)]
    rows = [(k, {side: peers.median(figures[side][k]) for side in figures}) for k in shown]
    cpu_rows = [(k, {side: peers.median(figures[side][k]) for side in figures}) for k in keys[6:]
                if any(figures[side][k] for side in figures)]
    title = (f"{n:,} x {size}-byte messages, {args.partitions} partitions, {args.producers} confluent-kafka "
             f"producer and {args.consumers} consumer processes"
             + (f" (then {args.raw_consumers} light Fetch clients)" if args.raw_consumers else "")
             + (f" ({args.java_producers} Java producers)" if args.java_producers else "")
             + (f" ({args.java_consumers} Java consumers)" if args.java_consumers else "")
             + (", consumed from fixed 1 MB batches" if args.fixed_batches else "")
             + f", kgroup fsync={args.fsync if not args.bootstrap else '(as running)'}"
             + (", Kafka log.flush.interval.messages=1" if args.peer == "kafka" and args.fsync == "always" else "")
             + f", {runs} runs (median)")
    peers.print_table(title, rows, peers.sides(args))
    peers.print_table("CPU-seconds per million messages: the broker's, and the producing clients' "
                      "against it (lower is better: ours/peer <= 1 wins)",
                      cpu_rows, peers.sides(args), higher_is_better=False)
    busy_rows = [(f"cores busy, {k}", {side: peers.median(busy[side][k]) for side in busy})
                 for k in busy_keys if any(busy[side][k] for side in busy)]
    if busy_rows:
        peers.print_table("cores each broker kept busy while the producers wrote (CPU-s over the "
                          "timed seconds; 1.0 is one core saturated)", busy_rows, peers.sides(args),
                          higher_is_better=False)
    if any(v is not None for v in rss.values()):
        peers.print_table("broker peak RSS, MiB (VmHWM over the session; lower is better)",
                          [("peak RSS MiB", rss)], peers.sides(args), higher_is_better=False)
    if node_cpu:
        print("\nper node (ours), CPU-s per 1M messages, all phases: "
              + ", ".join(f"{node} {peers.median(xs):.2f}" for node, xs in node_cpu.items()))
    print(f"load average after: {peers.load_average()}")


if __name__ == "__main__":
    main()
