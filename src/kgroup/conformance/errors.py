"""Error codes found anywhere in a kio response, and their Kafka names."""

from __future__ import annotations

import dataclasses
from enum import Enum
from typing import Any

from kio.schema.errors import ErrorCode


def error_name(code: int) -> str:
    """Kafka's name of an error code (UNKNOWN_MEMBER_ID), or the number if kio lacks it."""
    try:
        return ErrorCode(code).name.upper()
    except ValueError:
        return str(code)


def error_codes(obj: Any, path: str = "") -> tuple[tuple[str, int], ...]:
    """Every (path, code) of an ErrorCode field in a kio entity, depth first, in field order
    (``groups[0].error_code``)."""
    found: list[tuple[str, int]] = []
    _walk(obj, path, found)
    return tuple(found)


def _walk(obj: Any, path: str, found: list[tuple[str, int]]) -> None:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            where = f"{path}.{f.name}" if path else f.name
            if isinstance(value, ErrorCode):
                found.append((where, int(value)))
            else:
                _walk(value, where, found)
    elif isinstance(obj, tuple):
        for i, item in enumerate(obj):
            _walk(item, f"{path}[{i}]", found)


def summary(errors: tuple[tuple[str, int], ...] | None, errors_only: bool = False) -> str:
    """A response's errors in one word or a few: its top-level code, then the distinct codes
    found deeper (``NONE [UNKNOWN_TOPIC_OR_PARTITION]``; with `errors_only`, deeper NONEs
    are left out); ``?`` for an undecodable answer."""
    if errors is None:
        return "?"
    top = [code for path, code in errors if "." not in path and "[" not in path]
    deeper = sorted({code for path, code in errors if ("." in path or "[" in path)
                     and not (errors_only and code == 0)})
    if errors_only and not top and not deeper:
        return "NONE"
    words = [error_name(top[0])] if top else []
    if deeper:
        words.append("[" + ",".join(error_name(c) for c in deeper) + "]")
    return " ".join(words) or "-"


def enum_value(value: Enum) -> Any:
    return error_name(int(value)) if isinstance(value, ErrorCode) else value.name
