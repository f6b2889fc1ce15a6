"""How `kgroup serve` writes its log: human lines (`text`) or one JSON object a line (`json`).

The JSON form has `time` (ISO 8601, UTC, milliseconds), `level`, `logger`, `message` (the
same text as the human line) and, for group changes and requests, the record's structured
fields (`record.kgroup`: group, event, member, client_id, generation, duration_ms, ...) as
top-level keys, so a log shipper can filter on them without parsing the message. A node of
a cluster adds its id: `node N` before the logger name in a text line, `node` in JSON.
"""

from __future__ import annotations

import json
import logging
import sys
import time

TEXT_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    def __init__(self, node: int | None = None) -> None:
        super().__init__()
        self.node = node

    def format(self, record: logging.LogRecord) -> str:
        out = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if self.node is not None:
            out["node"] = self.node
        fields = getattr(record, "kgroup", None)
        if isinstance(fields, dict):
            for key, value in fields.items():
                out.setdefault(key, value)
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, separators=(",", ":"))


def configure_logging(level: str = "INFO", fmt: str = "text", node: int | None = None) -> None:
    """Log to stderr at `level`, as `fmt` ("text" or "json"); replaces earlier handlers.
    `node`: the id of a cluster node, named on every line."""
    handler = logging.StreamHandler(sys.stderr)
    text = TEXT_FORMAT if node is None else TEXT_FORMAT.replace("%(name)s", f"node {node} %(name)s")
    handler.setFormatter(JsonFormatter(node) if fmt == "json" else logging.Formatter(text))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
