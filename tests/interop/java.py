"""Drives tests/java's worker: one JVM with Kafka 4.4's Java clients and CLI tools, many
commands (Worker.java says how it works).

    with JavaWorker(build("java"), log=tmp / "java.log") as java:
        java.call("producer.new", name="p", config={"bootstrap.servers": ...})
        java.consumer("c1", {...}, topics=["t"])            # polls on its own thread
        java.wait_records("c1", 10)                         # events the consumer emitted
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable

from kgroup.testing.process import ChildProcess
from kgroup.testing.reference import classpath, java_command
from tests.integration.waits import pace

# The worker's JVM: small, quick to start (C1 only), one per group of scenarios.
JVM_OPTIONS = ("-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
               "-Djava.awt.headless=true")

_LOG4J2 = """\
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p [%t] %m (%c)%n
rootLogger.level = {level}
rootLogger.appenderRef.file.ref = file
"""


class JavaError(Exception):
    """A command the Java client refused: its exception's class name and message."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


class JavaWorker:
    def __init__(self, build_dir: Path, log: Path, *, level: str = "WARN") -> None:
        self.log_path = Path(log)
        config = self.log_path.with_suffix(".log4j2.properties")
        config.write_text(_LOG4J2.format(log=self.log_path.with_suffix(".clients.log"), level=level))
        # One child process (kgroup.testing.process: reaped at the session's end, its output
        # in a failing test's report): commands on stdin, JSON lines on stdout, stderr logged.
        self.child = ChildProcess(
            [java_command(), *JVM_OPTIONS, f"-Dlog4j2.configurationFile={config}",
             "-cp", f"{build_dir}:{classpath()}", "Worker"],
            name="java-worker", log_path=self.log_path, stdin=subprocess.PIPE, stdout_pipe=True).start()
        self.proc = self.child.proc
        self._next = 0
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self._replies: dict[int, dict] = {}
        self.events: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.wait_event(lambda e: e["event"] == "ready", timeout=60)

    def _read(self) -> None:
        for line in self.child.lines():
            try:
                message = json.loads(line)
            except ValueError:
                continue
            with self._cond:
                if "id" in message:
                    self._replies[message["id"]] = message
                else:
                    self.events.append(message)
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    # ---- commands --------------------------------------------------------------------------

    def call(self, op: str, timeout: float = 120.0, **args: Any) -> Any:
        with self._lock:
            self._next += 1
            ident = self._next
            self.proc.stdin.write(json.dumps({"id": ident, "op": op, **args}) + "\n")
            self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        with self._cond:
            while ident not in self._replies:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the Java worker exited ({self.proc.returncode}):\n{self.log_tail()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"the Java worker did not answer {op} within {timeout} s; its log:\n"
                                       f"{self.log_tail()}")
                self._cond.wait(min(left, 1.0))
            reply = self._replies.pop(ident)
        if "error" in reply:
            raise JavaError(reply["error"]["type"], reply["error"]["message"])
        return reply["ok"]

    def consumer(self, name: str, config: dict, *, topics: list[str] | None = None, pattern: str | None = None,
                 regex: str | None = None, **options: Any) -> None:
        """A KafkaConsumer polling on its own thread (events: records, assigned, revoked, lost);
        subscribed to `topics`, a java.util.regex `pattern` (resolved by the client) or a
        broker-side `regex` (SubscriptionPattern, the consumer protocol's)."""
        self.call("consumer.start", name=name, config=config, topics=topics, pattern=pattern, regex=regex, **options)

    def share_consumer(self, name: str, config: dict, topics: list[str], **options: Any) -> None:
        """A KafkaShareConsumer polling on its own thread (events: records, acks, committed)."""
        self.call("share.start", name=name, config=config, topics=topics, **options)

    def tool(self, main: str, *args: str, stdin: str = "", timeout: float = 120.0) -> dict:
        """Run one of Kafka's CLI tools in the worker: {"exit", "stdout", "stderr"}."""
        return self.call("tool.run", timeout=timeout + 10, main=main, args=list(args), stdin=stdin,
                         timeoutMs=int(timeout * 1000))

    # ---- events ----------------------------------------------------------------------------

    def wait_event(self, match: Callable[[dict], bool], timeout: float = 60.0) -> dict:
        deadline = time.monotonic() + timeout
        with self._cond:
            seen = 0
            while True:
                for event in self.events[seen:]:
                    if match(event):
                        return event
                seen = len(self.events)
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise TimeoutError(f"no such event within {timeout} s; last events: {self.events[-5:]}")
                self._cond.wait(min(left, 1.0))

    def clear_events(self) -> None:
        with self._cond:
            self.events.clear()

    def of(self, name: str, kind: str | None = None) -> list[dict]:
        with self._cond:
            return [e for e in self.events if e.get("name") == name and (kind is None or e["event"] == kind)]

    def records(self, name: str) -> list[list]:
        return [r for e in self.of(name, "records") for r in e["records"]]

    def wait_records(self, name: str, count: int, timeout: float = 60.0) -> list[list]:
        """Wait until consumer `name` has polled at least `count` records; answer them."""
        deadline = time.monotonic() + timeout
        while True:
            got = self.records(name)
            if len(got) >= count:
                return got
            failed = self.of(name, "failed")
            if failed:
                raise RuntimeError(f"{name} failed: {failed[-1]['error']}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{name} polled {len(got)} of {count} records within {timeout} s")
            pace(0.05)

    def owned(self, name: str) -> set[tuple[str, int]]:
        """The partitions consumer `name` owns now, by its rebalance listener's events."""
        owned: set[tuple[str, int]] = set()
        for e in self.of(name):
            if e["event"] == "assigned":
                owned |= {tuple(p) for p in e["partitions"]}
            elif e["event"] in ("revoked", "lost"):
                owned -= {tuple(p) for p in e["partitions"]}
            elif e["event"] == "closed":
                owned = set()
        return owned

    # ---- life cycle ------------------------------------------------------------------------

    def log_tail(self, lines: int = 40) -> str:
        parts = []
        for path in (self.log_path, self.log_path.with_suffix(".clients.log")):
            if path.exists():
                parts.append("\n".join(path.read_text(errors="replace").splitlines()[-lines:]))
        return "\n".join(parts)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({"op": "exit"}) + "\n")
                self.proc.stdin.flush()
                self.child.wait(60)
            except (OSError, subprocess.TimeoutExpired):
                self.child.kill()

    def __enter__(self) -> "JavaWorker":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
