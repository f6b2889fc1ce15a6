"""How `kgroup serve` writes its log: human lines (`text`) or one JSON object a line (`json`).

The JSON form has `time` (ISO 8601, UTC, milliseconds), `level`, `logger`, `message` (the
same text as the human line) and, for group changes and requests, the record's structured
fields (`record.kgroup`: group, event, member, client_id, generation, duration_ms, ...) as
top-level keys, so a log shipper can filter on them without parsing the message.
"""

from __future__ import annotations

import json
import logging
import sys
import time

TEXT_FORMAT = "%(asctime)s %(levelname)-7s %(name)s: %(message)s"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        out = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "kgroup", None)
        if isinstance(fields, dict):
            for key, value in fields.items():
                out.setdefault(key, value)
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, separators=(",", ":"))


def configure_logging(level: str = "INFO", fmt: str = "text") -> None:
    """Log to stderr at `level`, as `fmt` ("text" or "json"); replaces earlier handlers."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
