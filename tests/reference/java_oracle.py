"""One of Kafka 4.4's own classes answering JSON cases, one line each way, in one JVM
(tests/java/*Oracle.java on tests/java/OracleLoop.java): how kgroup's ports of Kafka's
assignors are held to the originals."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from kgroup.testing.reference import classpath, java_command
from tests.interop.toolchain import build


class JsonOracle:
    def __init__(self, main_class: str) -> None:
        folder = build("java")
        self.proc = subprocess.Popen(
            [java_command(), "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", f"{folder}:{classpath()}", main_class],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

    def ask(self, case: dict[str, Any]) -> dict[str, Any]:
        self.proc.stdin.write(json.dumps(case) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(self.proc.stdout.readline())
        assert "error" not in answer, answer
        return answer

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=10)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()
