"""Drives tests/java/StreamsApp.java: Kafka Streams 4.4 applications in one JVM (any number of
instances), or one instance in a JVM of its own when a test kill -9s it.

    with StreamsJvm(build_dir, log=tmp / "streams.log") as jvm:
        jvm.start("a", "stateful", config, input="in", output="out")
        jvm.wait_running("a")
        jvm.tasks("a")            # {"active": [...], "standby": [...]}, as the instance runs them
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Callable

from kgroup.testing.reference import classpath, java_command

JVM_OPTIONS = ("-Xms64m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
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


class StreamsJvm:
    def __init__(self, build_dir: Path, log: Path, *, level: str = "INFO") -> None:
        self.log_path = Path(log)
        config = self.log_path.with_suffix(".log4j2.properties")
        config.write_text(_LOG4J2.format(log=self.log_path.with_suffix(".streams.log"), level=level))
        self._stderr = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [java_command(), *JVM_OPTIONS, f"-Dlog4j2.configurationFile={config}",
             "-cp", f"{build_dir}:{classpath()}", "StreamsApp"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True, bufsize=1,
            start_new_session=True)
        self._next = 0
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self._replies: dict[int, dict] = {}
        self.events: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.wait_event(lambda e: e.get("event") == "ready", timeout=60)

    def _read(self) -> None:
        for line in self.proc.stdout:
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

    def call(self, op: str, timeout: float = 60.0, **args: Any) -> Any:
        with self._lock:
            self._next += 1
            ident = self._next
            self.proc.stdin.write(json.dumps({"id": ident, "op": op, **args}) + "\n")
            self.proc.stdin.flush()
        deadline = time.monotonic() + timeout
        with self._cond:
            while ident not in self._replies:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the Streams JVM exited ({self.proc.returncode}):\n{self.log_tail()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"the Streams JVM did not answer {op} in {timeout} s:\n{self.log_tail()}")
                self._cond.wait(min(left, 1.0))
            reply = self._replies.pop(ident)
        if "error" in reply:
            raise RuntimeError(f"{reply['error']['type']}: {reply['error']['message']}")
        return reply["ok"]

    # ---- the apps -------------------------------------------------------------------------

    def start(self, name: str, topology: str, config: dict, *, input: str, output: str, **options: Any) -> None:
        self.call("start", name=name, topology=topology, config={k: str(v) for k, v in config.items()},
                  input=input, output=output, options=options)

    def close_app(self, name: str) -> None:
        self.call("close", name=name, timeout=60)

    def describe(self, bootstrap: str, group: str) -> dict:
        """Admin#describeStreamsGroups, as Kafka's own admin client reads it."""
        return self.call("describe", bootstrap=bootstrap, group=group)

    def group_configs(self, bootstrap: str, group: str, **configs: Any) -> None:
        """IncrementalAlterConfigs of the group (streams.session.timeout.ms, ...)."""
        self.call("group-configs", bootstrap=bootstrap, group=group,
                  configs={k.replace("_", "."): str(v) for k, v in configs.items()})

    def state(self, name: str) -> str | None:
        states = [e["state"] for e in self.events if e.get("event") == "state" and e.get("name") == name]
        return states[-1] if states else None

    def tasks(self, name: str) -> dict | None:
        found = [e for e in self.events if e.get("event") == "tasks" and e.get("name") == name]
        return {"active": found[-1]["active"], "standby": found[-1]["standby"]} if found else None

    def errors(self) -> list[dict]:
        return [e for e in self.events if e.get("event") == "error"]

    def wait_event(self, match: Callable[[dict], bool], timeout: float = 60.0) -> dict:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for e in self.events:
                    if match(e):
                        return e
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise TimeoutError(f"no such event in {timeout} s; events: {self.events[-20:]}\n{self.log_tail()}")
                self._cond.wait(min(left, 0.5))

    def wait_for(self, check: Callable[[], Any], timeout: float = 60.0, what: str = "a condition") -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} did not happen in {timeout} s; events: {self.events[-20:]}\n"
                                   f"{self.log_tail()}")
            with self._cond:
                self._cond.wait(0.2)

    def wait_running(self, *names: str, timeout: float = 60.0) -> None:
        self.wait_for(lambda: all(self.state(n) == "RUNNING" for n in names), timeout, f"{names} RUNNING")

    def log_tail(self, chars: int = 4000) -> str:
        parts = []
        for path in (self.log_path, self.log_path.with_suffix(".streams.log")):
            if path.exists():
                parts.append(path.read_text(errors="replace")[-chars:])
        return "\n".join(parts)

    # ---- life cycle -----------------------------------------------------------------------

    def kill(self) -> None:
        """kill -9 the JVM and every instance in it."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.call("exit", timeout=30)
            except (RuntimeError, TimeoutError, OSError):
                pass
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        self._stderr.close()

    def __enter__(self) -> "StreamsJvm":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
