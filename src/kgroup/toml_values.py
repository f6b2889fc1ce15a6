"""A Python value as TOML writes it: for the files the test bed writes (testing/process.py)
and for the broker's config errors, which quote the value as the user wrote it."""

from __future__ import annotations


def toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
