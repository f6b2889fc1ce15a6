"""Runs build/go/interop (tests/go/main.go says what each role does): a process printing JSON
events, or a one-shot run whose events are answered."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.interop.processes import EventProcess


def go_process(binary: Path, name: str, role: str, *args: str, **flags) -> EventProcess:
    """A long-running role (a consumer): its events arrive in `events`; `stop()` ends it."""
    return EventProcess(name, [str(binary), role, *args, *_flags(flags)])


def go_run(binary: Path, role: str, *args: str, timeout: float = 90, **flags) -> list[dict]:
    """Run a role to its end; answer its events. A role that failed raises with its output."""
    done = subprocess.run([str(binary), role, *args, *_flags(flags)], capture_output=True, text=True,
                          timeout=timeout)
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0:
        raise AssertionError(f"interop {role} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return events


def results(events: list[dict]) -> dict[str, list]:
    """kadm / sarama-offsets: each call's results, by call name, in order."""
    out: dict[str, list] = {}
    for e in events:
        if e["event"] == "result":
            out.setdefault(e["call"], []).append(e["result"] if e.get("error") is None else {"error": e["error"]})
    return out


def _flags(flags: dict) -> list[str]:
    out = []
    for key, value in flags.items():
        if value is None:
            continue
        flag = "-" + key.replace("_", "-")
        out.append(f"{flag}={str(value).lower()}" if isinstance(value, bool) else f"{flag}={value}")
    return out
