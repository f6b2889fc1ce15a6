"""``kgroup consume --format``: kcat's placeholders for printing records.

``%t`` topic, ``%p`` partition, ``%o`` offset, ``%k`` key, ``%v`` value, ``%h`` headers
(``k=v`` pairs joined by commas), ``%T`` timestamp (ms since the epoch), ``%K`` / ``%S`` key
and value length in bytes (-1 for null), ``%%`` a percent sign; ``\\n``, ``\\t`` and ``\\\\``
are a newline, a tab and a backslash. A null key or value prints as nothing, as kcat does.
A format without a newline gets one at the end, so records never run together.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from kgroup.client.admin import FetchedRecord

_TOKEN = re.compile(r"%.|\\.|[^%\\]+|[%\\]", re.DOTALL)
_ESCAPES = {"\\n": "\n", "\\t": "\t", "\\\\": "\\", "\\r": "\r"}


def _text(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8", "replace")


def _length(data: bytes | None) -> str:
    return "-1" if data is None else str(len(data))


_FIELDS: dict[str, Callable[[FetchedRecord], str]] = {
    "%t": lambda r: r.topic,
    "%p": lambda r: str(r.partition),
    "%o": lambda r: str(r.offset),
    "%k": lambda r: _text(r.key),
    "%v": lambda r: _text(r.value),
    "%h": lambda r: ",".join(f"{k}={_text(v)}" for k, v in r.headers),
    "%T": lambda r: str(r.timestamp),
    "%K": lambda r: _length(r.key),
    "%S": lambda r: _length(r.value),
    "%%": lambda r: "%",
}


def compile_format(fmt: str) -> Callable[[FetchedRecord], str]:
    """A function printing one record by ``fmt``; ValueError naming an unknown placeholder."""
    parts: list[str | Callable[[FetchedRecord], str]] = []
    for token in _TOKEN.findall(fmt):
        if token in _FIELDS:
            parts.append(_FIELDS[token])
        elif token.startswith("%"):
            raise ValueError(f"unknown placeholder {token!r} in --format (use %t %p %o %k %v %h %T %K %S %%)")
        else:
            parts.append(_ESCAPES.get(token, token))
    if not any(isinstance(p, str) and "\n" in p for p in parts):
        parts.append("\n")

    def render(record: FetchedRecord) -> str:
        return "".join(p if isinstance(p, str) else p(record) for p in parts)

    return render
