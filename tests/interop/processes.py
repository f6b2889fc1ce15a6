"""Client processes the interop tests start and read: one JSON event a line on stdout."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

from kgroup.testing.process import ChildProcess

ROOT = Path(__file__).resolve().parents[2]


class EventProcess:
    """A process printing JSON events (kgroup.testing.process.ChildProcess: reaped at the end
    of the session, its output in a failing test's report); `events` holds them, each tagged
    with `name`."""

    def __init__(self, name: str, command: list[str], *, cwd: Path = ROOT, env: dict | None = None) -> None:
        self.name = name
        self.child = ChildProcess(command, name=name, cwd=cwd, env={**os.environ, **(env or {})},
                                  stdout_pipe=True).start()
        self.proc = self.child.proc
        self.events: list[dict] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.child.lines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                event.setdefault("name", self.name)
                with self._lock:
                    self.events.append(event)

    def of(self, kind: str) -> list[dict]:
        with self._lock:
            return [e for e in self.events if e.get("event") == kind]

    def records(self) -> list[list]:
        return [r for e in self.of("records") for r in e["records"]]

    def owned(self) -> set[tuple[str, int]]:
        owned: set = set()
        with self._lock:
            events = list(self.events)
        for e in events:
            if e.get("event") == "assigned":
                owned |= {tuple(p) for p in e["partitions"]}
            elif e.get("event") in ("revoked", "lost"):
                owned -= {tuple(p) for p in e["partitions"]}
        return owned

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM (the client closes cleanly) and wait; SIGKILL if it does not end."""
        return self.child.stop(timeout)

    def kill(self) -> None:
        self.child.kill()

    def tail(self) -> str:
        return self.child.log_tail(30)


def member(client: str, protocol: str, bootstrap: str, group: str, topic: str) -> EventProcess:
    """tests/interop/member_process.py: a confluent-kafka or kgroup consumer-group member."""
    return EventProcess(client, [sys.executable, "-m", "tests.interop.member_process", client, protocol,
                                 bootstrap, group, topic])
